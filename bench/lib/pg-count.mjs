// Preloaded into the gateway by the probe on PostgreSQL (node --import): counts the queries the
// gateway sends (every pg Client.query, pool queries included) and writes the count to the file
// OSC_BENCH_PG_COUNT names when the process gets SIGUSR2 (the bench asks at the start and end of
// what it measures; a timer writing it every 100 ms cost the gateway measurable CPU on a loaded
// machine). With OSC_BENCH_PG_LOG=FILE it also
// appends each query's text (whitespace folded, its first 120 characters, or OSC_BENCH_PG_LOG_CHARS)
// to FILE, to see which statements an update costs. Benchmark instrumentation only.
import { appendFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const file = process.env.OSC_BENCH_PG_COUNT;
if (file) {
  const pg = createRequire(import.meta.url)("pg");
  const query = pg.Client.prototype.query;
  let count = 0;
  let written = 0;
  const log = process.env.OSC_BENCH_PG_LOG;
  const chars = Number(process.env.OSC_BENCH_PG_LOG_CHARS ?? 120);
  pg.Client.prototype.query = function (...args) {
    count += 1;
    if (log) {
      const q = args[0];
      // A StatementGroup (pg-group.ts) carries its statements; log each, marked as one exchange.
      const texts = typeof q === "string" ? [q] : Array.isArray(q?.stmts) ? q.stmts.map((s) => `[group of ${q.stmts.length}] ${s.text}`) : [q?.text ?? String(q)];
      appendFileSync(log, texts.map((t) => `${t.replace(/\s+/g, " ").slice(0, chars)}\n`).join(""));
    }
    return query.apply(this, args);
  };
  process.on("SIGUSR2", () => {
    // "count seq": the sequence number tells the reader that this answer is to its request.
    written += 1;
    // In the log, a mark where the bench asked: the statements between two marks are its run's.
    if (log) appendFileSync(log, `-- mark ${written} at ${count} queries\n`);
    writeFileSync(file, `${count} ${written}`);
  });
}
