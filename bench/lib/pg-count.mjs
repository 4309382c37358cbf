// Preloaded into the gateway by the probe on PostgreSQL (node --import): counts the queries the
// gateway sends (every pg Client.query, pool queries included) and writes the count to the file
// OSC_BENCH_PG_COUNT names, every 100 ms while it changes. Benchmark instrumentation only.
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const file = process.env.OSC_BENCH_PG_COUNT;
if (file) {
  const pg = createRequire(import.meta.url)("pg");
  const query = pg.Client.prototype.query;
  let count = 0;
  let written = -1;
  pg.Client.prototype.query = function (...args) {
    count += 1;
    return query.apply(this, args);
  };
  setInterval(() => {
    if (count === written) return;
    written = count;
    writeFileSync(file, String(count));
  }, 100).unref();
}
