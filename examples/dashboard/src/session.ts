// The session: the gateway and token the page signs in with, and the clients made from them.
//
// The token lives in sessionStorage only (gone when the tab closes) and is never logged or shown;
// the gateway URL is remembered in localStorage for the next sign-in.

import type { Client } from "@connectrpc/connect";
import { createConfigClient, type ConfigClient } from "openshell-config";
import { OpenShell, workspaceScope, type Sandbox } from "openshell-config/raw";

const TOKEN_KEY = "openshell-dashboard.token";
// Served behind a proxy (`npm run dashboard -- --mtls`) the page's own origin is the gateway. The
// origin is the same as without the proxy (localhost:5173), so the gateway remembered there is
// kept apart: otherwise the form would offer the plain gateway the proxy stands in front of.
const GATEWAY_KEY = __OPENSHELL_GATEWAY_URL__ === "" ? "openshell-dashboard.gateway.same-origin" : "openshell-dashboard.gateway";

export type Raw = Client<typeof OpenShell>;

export interface Session {
  /** The gateway's base URL, without a trailing slash. */
  readonly gateway: string;
  /** The curated client, for updates and waits. */
  readonly client: ConfigClient;
  /** `client.raw(OpenShell)`, for the rest. */
  readonly raw: Raw;
  /** The sandbox list read while signing in. */
  readonly initial: Sandbox[];
}

function defaultGateway(): string {
  const configured = __OPENSHELL_GATEWAY_URL__;
  return configured === "" ? location.origin : configured;
}

/** The gateway to sign in to: the last one used, else the configured or the page's own. */
export const savedGateway = (): string => localStorage.getItem(GATEWAY_KEY) ?? defaultGateway();

export const savedToken = (): string | null => sessionStorage.getItem(TOKEN_KEY);

export const forgetToken = (): void => sessionStorage.removeItem(TOKEN_KEY);

/** Signs in: the token is stored only once a sandbox list has proved it. */
export async function openSession(gateway: string, token: string): Promise<Session> {
  let url: URL;
  try {
    url = new URL(gateway);
  } catch {
    throw new Error(`${JSON.stringify(gateway)} is not a URL (e.g. http://127.0.0.1:8080)`);
  }
  const baseUrl = url.href.replace(/\/$/, "");
  // Throws InsecureTransportError for a token over plain http to another machine.
  // No token: the calls carry none (a proxy in front of the gateway signs them in).
  const client = createConfigClient({ baseUrl, ...(token === "" ? {} : { token }) });
  const raw = client.raw(OpenShell);
  const first = await listAll(raw); // proves the token before anything is stored
  sessionStorage.setItem(TOKEN_KEY, token);
  localStorage.setItem(GATEWAY_KEY, baseUrl);
  return { gateway: baseUrl, client, raw, initial: first };
}

export async function listAll(raw: Raw): Promise<Sandbox[]> {
  const out: Sandbox[] = [];
  let pageToken = "";
  do {
    const page = await raw.listSandboxes({ pageSize: 200, pageToken, workspaceScope: workspaceScope() });
    out.push(...page.sandboxes);
    pageToken = page.nextPageToken;
  } while (pageToken !== "" && out.length < 2_000);
  return out;
}
