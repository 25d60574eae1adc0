// graphile-worker under the same stream (plain jobs only), for a side-by-side run: needs graphile-worker installed
// (a devDependency of the project): node --expose-gc bench/steady/graphile.mjs (URL, RATE, MINUTES).
import { createRequire } from "node:module"
const { run, makeWorkerUtils, Logger } = await import(createRequire(`${process.cwd()}/`).resolve("graphile-worker"))
const RATE = +process.env.RATE || 200, MINUTES = +process.env.MINUTES || 15
const connectionString = process.env.URL ?? "postgres://postgres@127.0.0.1:5432/soak_gw"
const logger = new Logger(() => () => {})
const utils = await makeWorkerUtils({ connectionString, logger }); await utils.migrate()
const lat = []; let started = 0, enq = 0
const runner = await run({ connectionString, concurrency: 10, noHandleSignals: true, logger, pollInterval: 1000,
  taskList: { plain: async (p) => { lat.push(Date.now() - p.t); started++ } } })
const t0 = Date.now()
const tick = setInterval(() => { const n = Math.round(RATE / 10); for (let j = 0; j < n; j++) utils.addJob("plain", { t: Date.now() }).then(() => enq++) }, 100)
const q = (a, p) => a.length ? a.slice().sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(p * a.length))] : NaN
const samples = setInterval(() => { const m = process.memoryUsage(); console.log(JSON.stringify({ s: Math.round((Date.now() - t0) / 1000), rssMb: +(m.rss / 1048576).toFixed(1), heapMb: +(m.heapUsed / 1048576).toFixed(1), enq, started, p50: q(lat, 0.5), p99: q(lat, 0.99) })); lat.length = 0 }, 10_000)
setTimeout(async () => { clearInterval(tick); await new Promise((r) => setTimeout(r, 5000)); clearInterval(samples); await runner.stop(); if (global.gc) { global.gc(); global.gc() }
  const m = process.memoryUsage(); console.log(JSON.stringify({ end: true, rssMb: +(m.rss / 1048576).toFixed(1), heapAfterGcMb: +(m.heapUsed / 1048576).toFixed(1), enq, started })); await utils.release(); process.exit(0) }, MINUTES * 60_000)
