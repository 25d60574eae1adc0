// Preload for bench/steady/leasehold.mjs (node --import bench/steady/pgprobe.mjs): every 10 s, on stderr,
// per statement class, how many were sent, how long they waited for a pool connection and how long they ran, and the pool's waiting queue.
import { createRequire } from "node:module"
const require = createRequire(`${process.cwd()}/`)
const pg = require("pg")
const pools = new Set()
const stats = new Map()
const classOf = (text) => {
  const t = String(text ?? "").replace(/\s+/g, " ")
  if (/^WITH inserted AS \(INSERT|^INSERT INTO \S*jobs/.test(t)) return "enqueue"
  if (/pg_notify/.test(t) && /^SELECT pg_notify/.test(t)) return "notify"
  if (/^WITH claimed AS|^UPDATE \S+ SET status = 'processing'|claim/i.test(t.slice(0, 200))) return "claim"
  if (/^WITH done AS/.test(t)) return "finish"
  if (/^UPDATE \S+jobs\S* SET history/.test(t)) return "outcome"
  return "other:" + t.slice(0, 25)
}
const bump = (k, wait, run) => {
  const s = stats.get(k) ?? { n: 0, wait: 0, maxWait: 0, run: 0, maxRun: 0 }
  s.n++; s.wait += wait; s.maxWait = Math.max(s.maxWait, wait); s.run += run; s.maxRun = Math.max(s.maxRun, run)
  stats.set(k, s)
}
const origConnect = pg.Pool.prototype.connect
pg.Pool.prototype.connect = function (cb) {
  pools.add(this)
  const asked = performance.now()
  if (typeof cb !== "function") return origConnect.call(this).then((c) => { c.__asked = asked; c.__got = performance.now(); return c })
  return origConnect.call(this, (err, client, release) => {
    if (client) { client.__asked = asked; client.__got = performance.now() }
    cb(err, client, release)
  })
}
const origQuery = pg.Client.prototype.query
pg.Client.prototype.query = function (config, values, callback) {
  const text = typeof config === "string" ? config : config?.text
  const sent = performance.now()
  const asked = this.__asked ?? sent, got = this.__got ?? sent
  this.__asked = undefined; this.__got = undefined
  const k = classOf(text)
  const done = () => bump(k, got - asked, performance.now() - sent)
  if (typeof callback === "function") return origQuery.call(this, config, values, (e, r) => { done(); callback(e, r) })
  if (typeof values === "function") return origQuery.call(this, config, (e, r) => { done(); values(e, r) })
  const r = origQuery.call(this, config, values)
  if (r && typeof r.then === "function") r.then(done, done)
  return r
}
const t0 = Date.now()
setInterval(() => {
  const out = { s: Math.round((Date.now() - t0) / 1000), pools: [...pools].map((p) => ({ total: p.totalCount, idle: p.idleCount, waiting: p.waitingCount })) }
  for (const [k, s] of stats) out[k] = `${s.n} wait ${(s.wait / s.n).toFixed(0)}/${s.maxWait.toFixed(0)} run ${(s.run / s.n).toFixed(1)}/${s.maxRun.toFixed(0)}`
  stats.clear()
  console.error("PROBE " + JSON.stringify(out))
}, 10_000).unref()
