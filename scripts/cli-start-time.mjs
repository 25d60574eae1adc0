#!/usr/bin/env node
// @ts-check
/**
 * How long `leasehold --help` (or another command line) takes to start and exit:
 *
 *   node scripts/cli-start-time.mjs [--runs N] [--bin path/to/bin.js]… [--args "jobs stats --json"]
 *
 * Spawns `node <bin> <args>` (default `dist/cli/bin.js --help`) N times (default 10) after one
 * warm-up run each (not counted: it fills the OS file cache), one process at a time, and prints
 * each wall time and the median; for scale, the median of a bare `node -e 0` on the same machine
 * too. `--bin` may be given several times (another checkout's CLI, for before/after): the
 * binaries take turns, run by run, so a change in the machine's load falls on all of them alike.
 * Plain JavaScript, run by plain node, so the measuring process adds no loader of its own. The
 * environment is passed on (LEASEHOLD_DATABASE_URL for a command that needs a database). Exit
 * code 1 if a run fails.
 */
import { spawnSync } from "node:child_process"
import { cpus, loadavg } from "node:os"
import { join, resolve } from "node:path"
import { performance } from "node:perf_hooks"

/** @param {string} name */
const flags = (name) => process.argv.flatMap((a, i) => (a === name && i + 1 < process.argv.length ? [process.argv[i + 1] ?? ""] : []))

const runs = Number(flags("--runs")[0] ?? 10)
if (!Number.isInteger(runs) || runs < 1) {
  console.error("--runs needs a positive whole number")
  process.exit(2)
}
const given = flags("--bin")
const BINS = (given.length > 0 ? given : [join(import.meta.dirname, "..", "dist", "cli", "bin.js")]).map((b) => resolve(b))
const ARGS = (flags("--args")[0] ?? "--help").split(" ").filter((a) => a !== "")

/** @param {ReadonlyArray<string>} args */
const timeOnce = (args) => {
  const started = performance.now()
  const r = spawnSync(process.execPath, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
  const ms = performance.now() - started
  if (r.status !== 0) {
    console.error(`node ${args.join(" ")} exited ${r.status ?? r.signal}:\n${r.stderr}`)
    process.exit(1)
  }
  return ms
}

/** @param {Array<number>} xs */
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid] ?? Number.NaN : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2
}

/** @param {number} ms */
const fmt = (ms) => `${Math.round(ms)} ms`

const loadStart = loadavg()[0] ?? Number.NaN
for (const bin of BINS) timeOnce([bin, ...ARGS]) // warm-up
/** @type {Array<Array<number>>} */
const times = BINS.map(() => [])
/** @type {Array<number>} */
const bare = []
for (let i = 0; i < runs; i++) {
  BINS.forEach((bin, b) => times[b]?.push(timeOnce([bin, ...ARGS])))
  bare.push(timeOnce(["-e", "0"]))
}
const loadEnd = loadavg()[0] ?? Number.NaN

BINS.forEach((bin, b) => {
  const t = times[b] ?? []
  console.log(`${bin}`)
  console.log(`  leasehold ${ARGS.join(" ")}: median ${fmt(median(t))} over ${runs} runs (${t.map(fmt).join(", ")})`)
})
console.log(`node -e 0: median ${fmt(median(bare))} (node's own start, for scale)`)
console.log(
  `machine: ${cpus()[0]?.model.trim() ?? "?"} × ${cpus().length}, Node ${process.version}, ` +
    `1-minute load average ${loadStart.toFixed(2)} → ${loadEnd.toFixed(2)}`
)
