// Writes the messages a stream has ready at once in one socket write. connect-node hands each
// streamed message to the HTTP/2 stream as soon as the previous write() returns, but Node's
// writable stream holds the second chunk until the first one's write has completed on the socket,
// so a policy change's two pushes (the sandbox snapshot, then the provider environment, whose
// fingerprint includes the policy hash) left in two writev calls, and the supervisor often woke
// twice to read them. Corked, both chunks reach the HTTP/2 session together (one _writev) and go
// out in one socket write, both gRPC messages in one DATA frame (the session fills a frame with
// what the stream has queued). The messages and their framing, the wire contract, are unchanged;
// only where DATA frames begin and end differs, which HTTP/2 leaves to the sender.
//
// Never a deadlock: the uncork is scheduled, not left to the writer. It runs once the microtasks
// that hand the ready messages to the stream have run (connect's serialization of a message that
// needs no compression is all microtasks); if connect instead waits for 'drain' (a message over
// the stream's high-water mark) or for compression on the thread pool, the uncork still comes
// right after, and the write goes out as it would have without the cork.

/** What a batch needs of an HTTP/2 stream (a `ServerHttp2Stream` has it). */
export interface Corkable {
  cork(): void;
  uncork(): void;
  readonly destroyed: boolean;
}

function isCorkable(stream: unknown): stream is Corkable {
  return typeof (stream as Partial<Corkable> | undefined)?.cork === "function" && typeof (stream as Partial<Corkable>).uncork === "function";
}

/**
 * Holds `stream`'s writes until the current microtasks have run, then lets them out together.
 * Does nothing for a stream that cannot be corked (HTTP/1.1, in-process calls) or is destroyed.
 */
export function corkUntilTick(stream: unknown): void {
  if (!isCorkable(stream) || stream.destroyed) return;
  stream.cork();
  process.nextTick(() => stream.uncork());
}
