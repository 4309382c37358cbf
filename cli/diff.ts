// The unified diff of `policy diff` and `policy set --dry-run`: shared with the dashboard's
// revision diff (shared/unified-diff.ts), so both print the same hunks.

export { diffLines, unifiedDiff } from "../shared/unified-diff.js";
