import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    // Child processes rather than worker threads: tests spawn `buf`, open sockets and servers, and
    // a crashed or leaking test file cannot take its neighbours down. Two workers for two cores.
    pool: "forks",
    maxWorkers: 2,
  },
});
