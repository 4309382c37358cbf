import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (p: string) => fileURLToPath(new URL(`./src/${p}`, import.meta.url));

export default defineConfig({
  resolve: {
    // The gateway and supervisor import the SDK by its package name; in tests that is the source.
    alias: [
      { find: /^openshell-config\/raw$/, replacement: src("raw.ts") },
      { find: /^openshell-config\/rollout$/, replacement: src("rollout.ts") },
      { find: /^openshell-config\/transport\/node$/, replacement: src("transport/node.ts") },
      { find: /^openshell-config\/transport\/web$/, replacement: src("transport/web.ts") },
      { find: /^openshell-config$/, replacement: src("index.ts") },
    ],
  },
  test: {
    include: ["test/**/*.test.ts", "gateway/test/**/*.test.ts", "supervisor/test/**/*.test.ts", "examples/dashboard/test/**/*.test.ts"],
    testTimeout: 20_000,
    // Child processes rather than worker threads: tests spawn `buf`, open sockets and servers, and
    // a crashed or leaking test file cannot take its neighbours down. Two workers for two cores.
    pool: "forks",
    maxWorkers: 2,
  },
});
