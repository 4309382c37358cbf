// The gateway's Node request handler for its RPCs: connect-node's adapter (connectNodeAdapter, whose
// few lines this follows: one router, its handlers by path, 404 for any other path) with the lean
// path for unary gRPC calls in front (grpc-unary.ts). Every call the lean path leaves goes to
// connect's handler for its path exactly as connectNodeAdapter would hand it over.

import type * as http from "node:http";
import type * as http2 from "node:http2";
import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createConnectRouter, createServiceImplSpec, type ConnectRouter, type ContextValues, type Interceptor, type MethodImplSpec } from "@connectrpc/connect";
import type { Compression, UniversalHandler } from "@connectrpc/connect/protocol";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import { createUnaryFastPath } from "./grpc-unary.js";

type AnyReq = http.IncomingMessage | http2.Http2ServerRequest;
type AnyRes = http.ServerResponse | http2.Http2ServerResponse;

export interface RpcAdapterOptions {
  readonly routes: (router: ConnectRouter) => void;
  /** connect's interceptors, outermost first. */
  readonly interceptors: readonly Interceptor[];
  /** The lean path's (connect's, without any that only shapes what connect serializes). */
  readonly fastInterceptors: readonly Interceptor[];
  readonly acceptCompression: readonly Compression[];
  readonly compressMinBytes: number;
  readonly readMaxBytes: number;
  readonly shutdownSignal: AbortSignal;
  readonly contextValues: (req: AnyReq) => ContextValues;
  /** Serve unary gRPC calls on the lean path (default true); false hands every call to connect. */
  readonly fastUnary?: boolean;
}

export function createRpcAdapter(options: RpcAdapterOptions): (req: AnyReq, res: AnyRes) => void {
  const router = createConnectRouter({
    interceptors: [...options.interceptors],
    acceptCompression: [...options.acceptCompression],
    compressMinBytes: options.compressMinBytes,
    readMaxBytes: options.readMaxBytes,
    shutdownSignal: options.shutdownSignal,
  });
  // The implementations of unary methods, as connect's router makes them from what routes registers.
  const specs = new Map<string, MethodImplSpec>();
  const register = router.service.bind(router);
  router.service = ((service: DescService, impl: object, opts?: object) => {
    // A service with options of its own (interceptors, read bound, protocols, binary options, ...)
    // is served by connect with them: the lean path knows only the router's. JSON options alone do
    // not touch a binary call.
    if (opts !== undefined && Object.keys(opts).some((k) => k !== "jsonOptions")) {
      for (const method of service.methods) specs.delete(`/${service.typeName}/${method.name}`);
      return register(service, impl as never, opts as never);
    }
    const spec = createServiceImplSpec(service, impl as never);
    for (const method of service.methods) {
      if (method.methodKind === "unary") specs.set(`/${service.typeName}/${method.name}`, spec.methods[method.localName] as MethodImplSpec);
    }
    return register(service, impl as never, opts as never);
  }) as typeof router.service;
  options.routes(router);
  const paths = new Map<string, UniversalHandler>();
  for (const handler of router.handlers) paths.set(handler.requestPath, handler);
  const fast =
    options.fastUnary === false
      ? undefined
      : createUnaryFastPath({
          specs,
          interceptors: options.fastInterceptors,
          acceptCompression: options.acceptCompression,
          compressMinBytes: options.compressMinBytes,
          readMaxBytes: options.readMaxBytes,
          shutdownSignal: options.shutdownSignal,
        });

  return (req, res) => {
    const url = req.url ?? "";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    const handler = paths.get(path);
    if (!handler) {
      res.writeHead(404);
      res.end();
      return;
    }
    const values = options.contextValues(req);
    const toConnect = (body?: AsyncIterable<Uint8Array>) => {
      // connect-node's own conversion; a body already begun is passed where it takes a parsed one
      // (it uses whatever it is given there as the request's body).
      const uReq =
        body === undefined
          ? universalRequestFromNodeRequest(req as http2.Http2ServerRequest, res as http2.Http2ServerResponse, undefined, values)
          : universalRequestFromNodeRequest(req as http2.Http2ServerRequest, res as http2.Http2ServerResponse, body as never, values);
      handler(uReq)
        .then((uRes) => universalResponseToNodeResponse(uRes, res))
        .catch((reason: unknown) => {
          if (ConnectError.from(reason).code === Code.Aborted) return;
          console.error(`handler for rpc ${handler.method.name} of ${handler.service.typeName} failed`, reason);
        });
    };
    if (fast && "stream" in req && fast.serve(req, res as http2.Http2ServerResponse, path, values, toConnect)) return;
    toConnect();
  };
}
