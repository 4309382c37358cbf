// Error messages for the page: one sentence per error, naming what the user can do about it.

import { Code, ConnectError } from "@connectrpc/connect";
import { InvalidArgumentError, OpenShellConfigError } from "openshell-config";

/** A message for any error, naming what the user can do about it. Never includes the token. */
export function explain(err: unknown, gateway?: string): string {
  if (err instanceof OpenShellConfigError) {
    if (err instanceof InvalidArgumentError && err.field) return `${err.message} (field ${err.field})`;
    return err.message;
  }
  const e = ConnectError.from(err);
  switch (e.code) {
    case Code.Unauthenticated:
      return "The gateway rejected the token (unauthenticated).";
    case Code.PermissionDenied:
      return `Permission denied: ${e.rawMessage}`;
    case Code.NotFound:
      return e.rawMessage;
    case Code.Unavailable:
    case Code.Unknown:
      if (/fetch|network|load failed/i.test(e.rawMessage)) {
        return `Cannot reach the gateway${gateway ? ` at ${gateway}` : ""}. Is it running, and does it allow this page's origin (${location.origin}) with --cors-origin?`;
      }
  }
  return `${Code[e.code] ?? "error"}: ${e.rawMessage}`;
}

/** The error means the token is no longer accepted: the page signs out rather than retrying. */
export const isUnauthenticated = (err: unknown): boolean => ConnectError.from(err).code === Code.Unauthenticated;
