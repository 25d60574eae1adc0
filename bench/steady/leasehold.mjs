// A steady enqueue stream: RATE jobs/s for MINUTES (70 % plain, 25 % on 10 concurrency keys, 5 % failing once),
// with a worker (concurrency 10) in the same process unless ROLE=producer or ROLE=worker; every 10 s one JSON
// line: memory, jobs enqueued and started, pickup latency p50/p99 (enqueue call to perform) over the window.
// Run from the project root after `npm run build`:
//   node --expose-gc bench/steady/leasehold.mjs   (URL=postgres://…/db, RATE, MINUTES, ROLE, LEASEHOLD=path to dist/promise.js)
const { createLeasehold, defineJob } = await import(process.env.LEASEHOLD ?? `${process.cwd()}/dist/promise.js`)
const RATE = +process.env.RATE || 200, MINUTES = +process.env.MINUTES || 15
const url = process.env.URL ?? "postgres://postgres@127.0.0.1:5432/soak_lh"
const lat = []
let started = 0, failedOnce = new Set()
const Plain = defineJob({ name: "Plain", perform: async (p) => { lat.push(Date.now() - p.t); started++ } })
const Keyed = defineJob({ name: "Keyed", concurrencyKeyFor: (p) => `k${p.k}`, perform: async (p) => { lat.push(Date.now() - p.t); started++; await new Promise((r) => setTimeout(r, 2)) } })
const Flaky = defineJob({ name: "Flaky", maxRetries: 2, backoff: { kind: "linear", baseSeconds: 1, maxSeconds: 1 }, perform: async (p) => { started++; if (!failedOnce.has(p.i)) { failedOnce.add(p.i); throw new Error("first attempt fails") } failedOnce.delete(p.i) } })
const lh = await createLeasehold({ url, jobs: [Plain, Keyed, Flaky], prefix: "soak_" })
await lh.migrate()
const ROLE = process.env.ROLE ?? "both"
const worker = ROLE === "producer" ? { stop: async () => {} } : await lh.startWorker({ concurrency: 10, pollInterval: "1 second" })
const t0 = Date.now(); let i = 0, enq = 0
const tick = ROLE === "worker" ? undefined : setInterval(async () => {
  const n = Math.round(RATE / 10)
  for (let j = 0; j < n; j++, i++) {
    const t = Date.now()
    const r = i % 20
    const job = r === 0 ? lh.enqueue(Flaky, { i, t }) : r < 6 ? lh.enqueue(Keyed, { k: i % 10, t }) : lh.enqueue(Plain, { t })
    job.then(() => enq++, (e) => console.error("enqueue failed", e.message))
  }
}, 100)
const q = (a, p) => a.length ? a.slice().sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(p * a.length))] : NaN
const samples = setInterval(() => {
  const m = process.memoryUsage(); const s = Math.round((Date.now() - t0) / 1000)
  console.log(JSON.stringify({ s, rssMb: +(m.rss / 1048576).toFixed(1), heapMb: +(m.heapUsed / 1048576).toFixed(1), enq, started, p50: q(lat, 0.5), p99: q(lat, 0.99) }))
  lat.length = 0
}, 10_000)
setTimeout(async () => {
  clearInterval(tick); await new Promise((r) => setTimeout(r, 5000)); clearInterval(samples)
  await worker.stop(); if (global.gc) { global.gc(); global.gc() }
  const m = process.memoryUsage(); console.log(JSON.stringify({ end: true, rssMb: +(m.rss / 1048576).toFixed(1), heapAfterGcMb: +(m.heapUsed / 1048576).toFixed(1), enq, started }))
  await lh.close(); process.exit(0)
}, MINUTES * 60_000)
