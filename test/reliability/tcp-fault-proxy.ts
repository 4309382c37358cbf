// An in-process TCP proxy for the network-fault tests: supervisors connect to it instead of the
// gateway, and while faults are on it delays chunks, refuses (drops) new connections and cuts
// live ones at random. It works on raw bytes, below HTTP/2, so the gateway and the supervisors
// see exactly what a flaky network would give them: stalls, resets and half-delivered frames.

import { createServer, connect, type Server, type Socket } from "node:net";

export interface FaultSettings {
  /** Extra delay of each chunk, uniform in [0, maxDelayMs), order kept per direction. */
  readonly maxDelayMs: number;
  /** Share of new connections refused at once (reset before any byte is forwarded). */
  readonly dropRate: number;
  /** Every `cutEveryMs` on average, one live connection pair is destroyed. */
  readonly cutEveryMs: number;
}

export const NO_FAULTS: FaultSettings = { maxDelayMs: 0, dropRate: 0, cutEveryMs: 0 };

export interface ProxyCounters {
  accepted: number;
  dropped: number;
  cut: number;
  delayedChunks: number;
}

export class TcpFaultProxy {
  readonly counters: ProxyCounters = { accepted: 0, dropped: 0, cut: 0, delayedChunks: 0 };
  private readonly pairs = new Set<[Socket, Socket]>();
  private faults: FaultSettings = NO_FAULTS;
  private cutTimer: NodeJS.Timeout | undefined;
  private server!: Server;
  port = 0;

  private constructor(private readonly targetPort: number) {}

  static async start(targetPort: number): Promise<TcpFaultProxy> {
    const p = new TcpFaultProxy(targetPort);
    p.server = createServer((client) => p.accept(client));
    await new Promise<void>((r) => p.server.listen(0, "127.0.0.1", r));
    p.port = (p.server.address() as { port: number }).port;
    return p;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Live connection pairs. */
  get connections(): number {
    return this.pairs.size;
  }

  /** Turns faults on (or off with NO_FAULTS); applies to every chunk and connection from now on. */
  set(faults: FaultSettings): void {
    this.faults = faults;
    clearTimeout(this.cutTimer);
    this.cutTimer = undefined;
    if (faults.cutEveryMs > 0) this.scheduleCut();
  }

  private scheduleCut(): void {
    // Exponential gaps: cuts arrive at random moments, not on a beat.
    const gap = -Math.log(1 - Math.random()) * this.faults.cutEveryMs;
    this.cutTimer = setTimeout(() => {
      const all = [...this.pairs];
      const victim = all[Math.floor(Math.random() * all.length)];
      if (victim) {
        this.counters.cut++;
        this.close(victim);
      }
      if (this.faults.cutEveryMs > 0) this.scheduleCut();
    }, gap);
  }

  private accept(client: Socket): void {
    if (Math.random() < this.faults.dropRate) {
      this.counters.dropped++;
      client.resetAndDestroy();
      return;
    }
    this.counters.accepted++;
    const upstream = connect(this.targetPort, "127.0.0.1");
    const pair: [Socket, Socket] = [client, upstream];
    this.pairs.add(pair);
    const end = () => this.close(pair);
    for (const s of pair) {
      s.on("error", end);
      s.on("close", end);
    }
    this.pipe(client, upstream);
    this.pipe(upstream, client);
  }

  /**
   * Forwards `from` to `to`. A delayed chunk is released at arrival + its delay, but never before
   * the chunk ahead of it: a direction is never reordered and delays do not add up.
   */
  private pipe(from: Socket, to: Socket): void {
    const queue: { at: number; chunk: Buffer }[] = [];
    let timer: NodeJS.Timeout | undefined;
    let ended = false;
    const pump = () => {
      timer = undefined;
      while (queue.length > 0 && queue[0]!.at <= Date.now()) {
        const { chunk } = queue.shift()!;
        if (!to.destroyed) to.write(chunk);
      }
      if (queue.length > 0) timer = setTimeout(pump, queue[0]!.at - Date.now());
      else if (ended && !to.destroyed) to.end();
    };
    from.on("data", (chunk: Buffer) => {
      const delay = this.faults.maxDelayMs > 0 ? Math.random() * this.faults.maxDelayMs : 0;
      if (delay > 0) this.counters.delayedChunks++;
      const last = queue.length > 0 ? queue[queue.length - 1]!.at : 0;
      queue.push({ at: Math.max(Date.now() + delay, last), chunk });
      if (timer === undefined) pump();
    });
    from.on("end", () => {
      ended = true;
      if (timer === undefined) pump();
    });
  }

  private close(pair: [Socket, Socket]): void {
    if (!this.pairs.delete(pair)) return;
    for (const s of pair) s.destroy();
  }

  async stop(): Promise<void> {
    this.set(NO_FAULTS);
    for (const p of [...this.pairs]) this.close(p);
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
