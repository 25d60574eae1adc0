/**
 * A preload that times each idle-worker cycle of the latency scenarios at the driver:
 *
 *   NODE_OPTIONS="--import ./bench/lib/timeline.mjs" node --expose-gc <child.js> '<spec>'
 *
 * (child.js: what `npm run bench` compiles from bench/child.ts, in `.build` beside it; the spec
 * is a ChildSpec of bench/protocol.ts, for scenario "latency" or "crosslatency"). It stamps every
 * node-postgres send and reply (by the statement's first words), every LISTEN notification, and
 * the bench's marks (./timeline.ts: an enqueue's call, its handler's start), and on exit prints,
 * per process, the median time of each segment of a cycle, cycles grouped by their sequence of
 * events: from the enqueue mark to the handler's start in one process; across processes, from the
 * notification to the start in the worker and from the enqueue mark to the enqueue statement's
 * reply in the enqueuing process. With `TIMELINE_SLOWEST=n` it also prints the mean and median of
 * every cycle's total and the n slowest cycles, event by event (a tail's causes: a round trip, or
 * a pause in the process).
 */
import { performance } from "node:perf_hooks"
import pg from "pg"

const events = []
globalThis.__benchTimeline = (what) => events.push([what, performance.now()])

const labelOf = (text) => {
  const t = String(text ?? "").replace(/\s+/g, " ").trim()
  if (/^WITH inserted\b|^INSERT\b/i.test(t)) return "insert"
  if (/^WITH claimed\b/i.test(t)) return "claim"
  return t.slice(0, 24)
}

const query = pg.Client.prototype.query
pg.Client.prototype.query = function(config, values, callback) {
  const label = labelOf(typeof config === "string" ? config : config?.text)
  events.push([`send ${label}`, performance.now()])
  const stamped = (done) =>
    function(...args) {
      events.push([`reply ${label}`, performance.now()])
      return done.apply(this, args)
    }
  if (typeof callback === "function") return query.call(this, config, values, stamped(callback))
  if (typeof values === "function") return query.call(this, config, stamped(values))
  const result = query.call(this, config, values, callback)
  if (typeof result?.then === "function") {
    result.then(() => events.push([`reply ${label}`, performance.now()]), () => {})
  }
  return result
}
const emit = pg.Client.prototype.emit
pg.Client.prototype.emit = function(event, ...args) {
  if (event === "notification") events.push(["notification", performance.now()])
  return emit.call(this, event, ...args)
}

process.on("exit", () => {
  const has = (what) => events.some(([e]) => e === what)
  const from = has("enqueue") ? "enqueue" : "notification"
  const ends = has("start") ? (e) => e === "start" : (e) => e.startsWith("reply ")
  const shapes = new Map()
  // Every cycle's total and its events, for TIMELINE_SLOWEST.
  const all = []
  let cycle
  let last = 0
  for (const [event, at] of events) {
    if (event === from) {
      cycle = []
      last = at
      continue
    }
    if (cycle === undefined) continue
    cycle.push([event, at - last])
    last = at
    if (ends(event)) {
      const shape = cycle.map(([e]) => e).join(" > ")
      shapes.set(shape, [...(shapes.get(shape) ?? []), cycle.map(([, ms]) => ms)])
      all.push({ total: cycle.reduce((sum, [, ms]) => sum + ms, 0), cycle })
      cycle = undefined
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  for (const [shape, cycles] of [...shapes].sort((a, b) => b[1].length - a[1].length)) {
    const steps = shape.split(" > ")
    const medians = steps.map((_, i) => median(cycles.map((c) => c[i])))
    const total = medians.reduce((a, b) => a + b, 0)
    console.error(
      `timeline (pid ${process.pid}), ${cycles.length} cycles from ${from}: ` +
        steps.map((s, i) => `${medians[i].toFixed(3)} ms to ${s}`).join(", ") + `; total ${total.toFixed(3)} ms`
    )
  }
  const slowest = Number(process.env.TIMELINE_SLOWEST ?? 0)
  if (slowest > 0 && all.length > 0) {
    const totals = all.map((c) => c.total)
    const mean = totals.reduce((a, b) => a + b, 0) / totals.length
    console.error(
      `timeline (pid ${process.pid}), ${all.length} cycles: mean ${mean.toFixed(3)} ms, median ${
        median(totals).toFixed(3)
      } ms; slowest:`
    )
    for (const { cycle, total } of all.sort((a, b) => b.total - a.total).slice(0, slowest)) {
      console.error(`  ${total.toFixed(2)} ms: ${cycle.map(([e, ms]) => `${e} ${ms.toFixed(2)}`).join(" > ")}`)
    }
  }
})
