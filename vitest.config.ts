import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig } from "vitest/config";

/** Tests that drive Chromium (/usr/bin/chromium). */
const BROWSER_TESTS = "examples/dashboard/test/**/*.browser.test.ts";

const src = (p: string) => fileURLToPath(new URL(`./src/${p}`, import.meta.url));

export default defineConfig({
  resolve: {
    // The gateway and supervisor import the SDK by its package name; in tests that is the source.
    alias: [
      { find: /^openshell-config\/oidc$/, replacement: src("oidc.ts") },
      { find: /^openshell-config\/raw$/, replacement: src("raw.ts") },
      { find: /^openshell-config\/rollout$/, replacement: src("rollout.ts") },
      { find: /^openshell-config\/transport\/node$/, replacement: src("transport/node.ts") },
      { find: /^openshell-config\/transport\/web$/, replacement: src("transport/web.ts") },
      { find: /^openshell-config$/, replacement: src("index.ts") },
    ],
  },
  test: {
    // Two projects so that Chromium is set up only when a browser test is part of the run: the
    // `browser` project's globalSetup installs /usr/bin/chromium when it is missing and it may
    // (test/setup/chromium.ts); Vitest runs a project's globalSetup only when it has files to run.
    projects: [
      {
        extends: true,
        test: {
          name: "node",
          include: ["test/**/*.test.ts", "gateway/test/**/*.test.ts", "supervisor/test/**/*.test.ts", "examples/dashboard/test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, BROWSER_TESTS],
        },
      },
      {
        extends: true,
        test: { name: "browser", include: [BROWSER_TESTS], globalSetup: ["test/setup/chromium.ts"] },
      },
    ],
    testTimeout: 20_000,
    // expect.poll's own default is one second, which a loaded CI machine can spend before the
    // condition holds; a poll ends as soon as it does, so a longer bound costs passing tests nothing.
    expect: { poll: { timeout: 10_000 } },
    // Child processes rather than worker threads: tests spawn `buf`, open sockets and servers, and
    // a crashed or leaking test file cannot take its neighbours down. Two workers for two cores.
    pool: "forks",
    maxWorkers: 2,
  },
});
