// Reads the JSON lines of bench/steady/leasehold.mjs and bench/steady/graphile.mjs, run side by side,
// prints them as one table, and checks the steady-stream rule (docs/behaviour.md §15) on leasehold's:
// every job enqueued was started by the end, and no 10-s window after the first 30 s had a pickup p50
// over 1 s. Exits 1 when the rule does not hold.
//   node bench/steady/compare.mjs leasehold.log graphile.log
import { readFileSync } from "node:fs"

const windows = (path) =>
  readFileSync(path, "utf8").split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l))
const [lhPath, gwPath] = process.argv.slice(2)
const lh = windows(lhPath)
const gw = gwPath === undefined ? [] : windows(gwPath)
const cell = (v, w) => String(v ?? "").padStart(w)
console.log("     s | leasehold enqueued  started    p50    p99  rss MiB | graphile enqueued  started    p50    p99  rss MiB")
const rows = Math.max(lh.length, gw.length)
for (let i = 0; i < rows; i++) {
  const a = lh[i] ?? {}, b = gw[i] ?? {}
  const side = (x) =>
    x.end ? `${cell("end", 18)} ${cell(x.started, 8)} ${cell("", 6)} ${cell("", 6)} ${cell(x.rssMb, 8)}`
      : `${cell(x.enq, 18)} ${cell(x.started, 8)} ${cell(x.p50, 6)} ${cell(x.p99, 6)} ${cell(x.rssMb, 8)}`
  console.log(`${cell(a.s ?? b.s, 6)} | ${side(a)} | ${side(b)}`)
}
const last = lh.filter((x) => !x.end).at(-1)
const end = lh.find((x) => x.end)
const slow = lh.filter((x) => !x.end && x.s > 30 && x.p50 > 1000)
const keptUp = end !== undefined && end.started >= end.enq
console.log(`\nleasehold: ${end?.enq ?? last?.enq} enqueued, ${end?.started ?? last?.started} started (failing-once jobs start twice)`)
console.log(`windows after 30 s with p50 > 1 s: ${slow.length}${slow.length ? ` (at ${slow.map((x) => x.s).join(", ")} s)` : ""}`)
console.log(`peak RSS ${Math.max(...lh.map((x) => x.rssMb ?? 0))} MiB` + (gw.length ? `, graphile-worker ${Math.max(...gw.map((x) => x.rssMb ?? 0))} MiB` : ""))
const ok = keptUp && slow.length === 0
console.log(ok ? "rule holds" : "rule does not hold")
process.exit(ok ? 0 : 1)
