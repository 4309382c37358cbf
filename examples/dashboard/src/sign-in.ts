// The sign-in page: a gateway URL and a bearer token (empty when a proxy signs the calls in).

import { h } from "./dom.js";
import { explain } from "./explain.js";

export interface SignInOptions {
  /** Shown under the form, e.g. why the last session ended. */
  readonly error?: string | undefined;
  readonly gateway: string;
  /** Signs in; a rejection is shown under the form and the form can be sent again. */
  readonly signIn: (gateway: string, token: string) => Promise<void>;
}

export function showSignIn(app: HTMLElement, { error, gateway, signIn }: SignInOptions): void {
  const message = h("p", { class: "form-error", role: "alert", "data-testid": "signin-error" }, error ?? "");
  const gatewayInput = h("input", { id: "gateway", name: "gateway", type: "url", required: true, value: gateway, spellcheck: "false" });
  // Optional: behind `npm run dashboard -- --mtls` the proxy's client certificate signs the calls in.
  const tokenInput = h("input", { id: "token", name: "token", type: "password", autocomplete: "off", placeholder: "admin-… (none behind a signing-in proxy)" });
  const button = h("button", { type: "submit", class: "primary" }, "Sign in");
  const form = h(
    "form",
    {
      class: "card signin",
      "data-testid": "signin",
      onsubmit: (ev) => {
        ev.preventDefault();
        button.disabled = true;
        message.textContent = "";
        void signIn(gatewayInput.value.trim(), tokenInput.value.trim()).catch((err: unknown) => {
          button.disabled = false;
          message.textContent = explain(err, gatewayInput.value.trim());
        });
      },
    },
    h("h1", {}, "OpenShell configuration"),
    h("p", { class: "muted" }, "Sign in to a gateway with a bearer token, or with none when a proxy in front of it signs the calls in. The token stays in this tab's session storage."),
    h("label", { for: "gateway" }, "Gateway URL"),
    gatewayInput,
    h("label", { for: "token" }, "Token"),
    tokenInput,
    button,
    message,
  );
  app.replaceChildren(h("main", { class: "signin-page" }, form));
  (gateway ? tokenInput : gatewayInput).focus();
}
