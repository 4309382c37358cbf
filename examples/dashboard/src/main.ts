// The dashboard: sign in with a bearer token, list sandboxes, watch one sandbox's operations live,
// edit and send its policy (to one sandbox, or rolled out to all with a label: rollout-view.ts),
// and resume a wait by operation id. Everything goes through the SDK:
// the curated client for updates and waits, `client.raw(OpenShell)` for the rest.
//
// This file only wires the pages: signing in (sign-in.ts, session.ts) and the signed-in page
// (dashboard.ts, whose cards each have their own module).

import "./style.css";
import "./rollouts.css";
import "./settings-history.css";
import "./shared-rollouts.css";
import { showDashboard } from "./dashboard.js";
import { byId, h } from "./dom.js";
import { explain } from "./explain.js";
import { forgetToken, openSession, savedGateway, savedToken } from "./session.js";
import { showSignIn } from "./sign-in.js";

const app = byId("app");

async function signIn(gateway: string, token: string): Promise<void> {
  const session = await openSession(gateway, token);
  showDashboard(app, session, {
    onSignOut: (reason) => {
      forgetToken();
      signedOut(reason, session.gateway);
    },
  });
}

function signedOut(error?: string, gateway = savedGateway()): void {
  showSignIn(app, { error, gateway, signIn });
}

const token = savedToken();
// An empty token is a session too: signed in through a proxy that presents the credentials.
if (token !== null) {
  const gateway = savedGateway();
  app.replaceChildren(h("p", { class: "muted loading" }, "Signing in…"));
  signIn(gateway, token).catch((err: unknown) => {
    forgetToken();
    signedOut(explain(err, gateway), gateway);
  });
} else {
  signedOut();
}
