// Bookkeeping for graceful shutdown: every accepted socket, every HTTP/2 session, and the HTTP/1.1
// requests in flight per socket, so a drain can close idle connections at once, let busy ones
// finish, and destroy whatever is left when the grace period ends. A TLS connection is tracked by
// its TCP socket (from accept, through the handshake, until it closes) and served on its TLS socket.

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2Session } from "node:http2";
import type { Socket } from "node:net";

export class Connections {
  private readonly sockets = new Set<Socket>();
  private readonly sessions = new Set<Http2Session>();
  /** Sockets handed to the HTTP/2 server (their sessions drain them). */
  private readonly http2 = new Set<Socket>();
  /** HTTP/1.1 sockets → their responses not yet finished. */
  private readonly http1 = new Map<Socket, Set<ServerResponse>>();
  /** TCP socket → the TLS socket HTTP runs on, once its handshake is done. */
  private readonly secure = new Map<Socket, Socket>();
  private draining = false;
  private emptied: (() => void) | undefined;

  /** Tracks a newly accepted socket until it closes. */
  addSocket(socket: Socket): void {
    this.sockets.add(socket);
    socket.once("close", () => {
      const served = this.servedOn(socket);
      this.sockets.delete(socket);
      this.secure.delete(socket);
      this.http1.delete(served);
      this.http2.delete(served);
      if (this.sockets.size === 0) this.emptied?.();
    });
  }

  /** Records that the tracked TCP socket `raw` now carries TLS on `secure`, which HTTP is served on. */
  addSecureSocket(raw: Socket, secure: Socket): void {
    if (this.sockets.has(raw)) this.secure.set(raw, secure);
  }

  /** Tracks an HTTP/2 session; once draining, new sessions are closed at once. */
  addSession(session: Http2Session): void {
    this.sessions.add(session);
    session.once("close", () => this.sessions.delete(session));
    if (this.draining) session.close();
  }

  /** Marks a socket handed to the HTTP/2 server. */
  addHttp2Socket(socket: Socket): void {
    this.http2.add(socket);
  }

  /** Tracks an HTTP/1.1 socket handed to the HTTP/1.1 server. */
  addHttp1Socket(socket: Socket): void {
    this.http1.set(socket, new Set());
  }

  /** Tracks an HTTP/1.1 request until its response is done; while draining, the connection closes after it. */
  addHttp1Request(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket;
    const inFlight = this.http1.get(socket);
    if (inFlight === undefined) return;
    inFlight.add(res);
    if (this.draining && !res.headersSent) res.setHeader("Connection", "close");
    res.once("close", () => {
      inFlight.delete(res);
      if (this.draining && inFlight.size === 0) socket.end();
    });
  }

  /**
   * Starts draining: HTTP/2 sessions get GOAWAY (their open streams continue), idle HTTP/1.1
   * connections and connections not yet identified are closed, busy HTTP/1.1 connections close
   * after their current response.
   */
  drain(): void {
    this.draining = true;
    for (const session of this.sessions) session.close();
    for (const raw of this.sockets) {
      const socket = this.servedOn(raw);
      if (this.http2.has(socket)) continue;
      const inFlight = this.http1.get(socket);
      if (inFlight === undefined || inFlight.size === 0) {
        socket.destroy();
        raw.destroy();
        continue;
      }
      for (const res of inFlight) if (!res.headersSent) res.setHeader("Connection", "close");
    }
  }

  /** Resolves when every tracked socket has closed. */
  idle(): Promise<void> {
    if (this.sockets.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const previous = this.emptied;
      this.emptied = () => {
        previous?.();
        resolve();
      };
    });
  }

  /** Destroys every remaining session and socket. */
  destroyAll(): void {
    for (const session of this.sessions) session.destroy();
    for (const socket of this.sockets) {
      this.servedOn(socket).destroy();
      socket.destroy();
    }
  }

  /** The socket HTTP runs on: the TLS socket of a TLS connection, else the TCP socket itself. */
  private servedOn(raw: Socket): Socket {
    return this.secure.get(raw) ?? raw;
  }

  /** Number of open sockets (for logs). */
  get size(): number {
    return this.sockets.size;
  }
}
