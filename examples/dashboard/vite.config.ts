// Vite config of the dashboard. The SDK is imported by its package name and resolved to the
// repository's source, so the dashboard needs no build of the SDK. `npm run dashboard` (dev.ts)
// and the browser test use `dashboardConfig` programmatically; `npx vite` in this directory uses
// the default export.

import { fileURLToPath } from "node:url";
import { defineConfig, type UserConfig } from "vite";

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export interface DashboardConfigOptions {
  /**
   * The gateway URL the sign-in form offers first ("" for the page's own origin, behind a proxy).
   * Default: `$OPENSHELL_GATEWAY_URL`, else http://127.0.0.1:8080 (`npm run gateway`).
   */
  readonly gatewayUrl?: string;
}

export function dashboardConfig(options: DashboardConfigOptions = {}): UserConfig {
  return {
    root: here("."),
    clearScreen: false,
    resolve: {
      alias: [
        { find: /^openshell-config\/rollout$/, replacement: here("../../src/rollout.ts") },
        { find: /^openshell-config\/raw$/, replacement: here("../../src/raw.ts") },
        { find: /^openshell-config$/, replacement: here("../../src/index.ts") },
      ],
    },
    define: {
      __OPENSHELL_GATEWAY_URL__: JSON.stringify(options.gatewayUrl ?? process.env.OPENSHELL_GATEWAY_URL ?? "http://127.0.0.1:8080"),
    },
    server: { port: 5173 },
    build: { target: "es2022" },
  };
}

export default defineConfig(dashboardConfig());
