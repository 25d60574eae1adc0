#!/usr/bin/env node
// @ts-check
/**
 * How long `leasehold --help` takes to start and exit:
 *
 *   node scripts/cli-start-time.mjs [--runs N] [--bin path/to/dist/cli/bin.js]
 *
 * Spawns `node dist/cli/bin.js --help` N times (default 10) after one warm-up run (not counted:
 * it fills the OS file cache), one at a time, and prints each wall time and the median; for
 * scale, the median of a bare `node -e 0` on the same machine too. `--bin` times another
 * checkout's CLI (before/after comparisons). Plain JavaScript, run by plain node, so the
 * measuring process adds no loader of its own. Exit code 1 if --help fails.
 */
import { spawnSync } from "node:child_process"
import { cpus, loadavg } from "node:os"
import { join, resolve } from "node:path"
import { performance } from "node:perf_hooks"

/** @param {string} name */
const flag = (name) => {
  const at = process.argv.indexOf(name)
  return at === -1 ? undefined : process.argv[at + 1]
}
const runs = Number(flag("--runs") ?? 10)
if (!Number.isInteger(runs) || runs < 1) {
  console.error("--runs needs a positive whole number")
  process.exit(2)
}
const BIN = resolve(flag("--bin") ?? join(import.meta.dirname, "..", "dist", "cli", "bin.js"))

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
timeOnce([BIN, "--help"]) // warm-up
const help = Array.from({ length: runs }, () => timeOnce([BIN, "--help"]))
const bare = Array.from({ length: runs }, () => timeOnce(["-e", "0"]))
const loadEnd = loadavg()[0] ?? Number.NaN

console.log(`${BIN}`)
console.log(`leasehold --help: median ${fmt(median(help))} over ${runs} runs (${help.map(fmt).join(", ")})`)
console.log(`node -e 0:        median ${fmt(median(bare))} (node's own start, for scale)`)
console.log(
  `machine: ${cpus()[0]?.model.trim() ?? "?"} × ${cpus().length}, Node ${process.version}, ` +
    `1-minute load average ${loadStart.toFixed(2)} → ${loadEnd.toFixed(2)}`
)
