/** The gateway URL the sign-in form offers first; "" means this page's own origin (a proxy). Set by vite.config.ts. */
declare const __OPENSHELL_GATEWAY_URL__: string;
