/**
 * A preload that times each idle-worker cycle of the latency scenarios, and each hand-off of the
 * hot-key scenario, at the driver:
 *
 *   NODE_OPTIONS="--import ./bench/lib/timeline.mjs" node --expose-gc <child.js> '<spec>'
 *
 * (child.js: what `npm run bench` compiles from bench/child.ts, in `.build` beside it; the spec
 * is a ChildSpec of bench/protocol.ts, for scenario "latency", "crosslatency" or "hotkey"). It
 * stamps every node-postgres send and reply (by the statement's first words), every LISTEN
 * notification, and the bench's marks (./timeline.ts: an enqueue's call, a handler's start and
 * end), and on exit prints, per process, the median time of each segment of a cycle, cycles
 * grouped by their sequence of events: from the enqueue mark to the handler's start in one
 * process; across processes, from the notification to the start in the worker and from the enqueue
 * mark to the enqueue statement's reply in the enqueuing process. With scenario "hotkey" (whose
 * handlers mark their end too), a cycle is a hand-off: from one job's end to the next job's start
 * (leasehold's hot-key child drains twice, timed then counted: one cycle spans the second start-up).
 * With `TIMELINE_SLOWEST=n` it also prints the mean and median of every cycle's total and the n
 * slowest cycles, event by event, each segment with the CPU time the process spent in it (all its
 * threads) and each cycle with the garbage collections that started in it, and how many cycles had
 * one. A tail's causes then read apart: a round trip (wall time, little CPU), the process busy
 * (CPU as long as the segment: compiling, when no collection ran), a collection, or the process
 * waiting for a CPU another process held (wall time, no CPU, and no statement in flight).
 */
import { performance, PerformanceObserver } from "node:perf_hooks"
import pg from "pg"

// How many of the slowest cycles to print (0: none). Only they show CPU time and collections,
// so only then are they recorded: without it, a stamp is one clock read, as the medians were
// measured before.
const slowest = Number(process.env.TIMELINE_SLOWEST ?? 0)
// Each event: what, when (performance.now()), and with `slowest` the process's CPU time then
// (µs, user + system), so a slow segment shows whether the process ran (CPU spent) or waited (a
// round trip, or a CPU taken by another process).
const events = []
const cpu = () => {
  const u = process.cpuUsage()
  return u.user + u.system
}
const stamp = slowest > 0
  ? (what) => events.push([what, performance.now(), cpu()])
  : (what) => events.push([what, performance.now(), 0])
globalThis.__benchTimeline = stamp
// Garbage collections (start, pause), to tell a cycle's pauses that were the collector's.
const collections = []
if (slowest > 0) {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) collections.push([e.startTime, e.duration])
  }).observe({ entryTypes: ["gc"] })
}

const labelOf = (text) => {
  const t = String(text ?? "").replace(/\s+/g, " ").trim()
  if (/^WITH inserted\b|^INSERT\b/i.test(t)) return "insert"
  if (/^WITH claimed\b/i.test(t)) return "claim"
  return t.slice(0, 24)
}

const query = pg.Client.prototype.query
pg.Client.prototype.query = function(config, values, callback) {
  const label = labelOf(typeof config === "string" ? config : config?.text)
  stamp(`send ${label}`)
  const stamped = (done) =>
    function(...args) {
      stamp(`reply ${label}`)
      return done.apply(this, args)
    }
  if (typeof callback === "function") return query.call(this, config, values, stamped(callback))
  if (typeof values === "function") return query.call(this, config, stamped(values))
  const result = query.call(this, config, values, callback)
  if (typeof result?.then === "function") {
    result.then(() => stamp(`reply ${label}`), () => {})
  }
  return result
}
const emit = pg.Client.prototype.emit
pg.Client.prototype.emit = function(event, ...args) {
  if (event === "notification") stamp("notification")
  return emit.call(this, event, ...args)
}

process.on("exit", () => {
  const has = (what) => events.some(([e]) => e === what)
  const from = has("end") ? "end" : has("enqueue") ? "enqueue" : "notification"
  const ends = has("start") ? (e) => e === "start" : (e) => e.startsWith("reply ")
  const shapes = new Map()
  // Every cycle's total and its events, for TIMELINE_SLOWEST.
  const all = []
  let cycle
  let last = 0
  let lastCpu = 0
  let began = 0
  for (const [event, at, used] of events) {
    if (event === from) {
      cycle = []
      last = at
      lastCpu = used
      began = at
      continue
    }
    if (cycle === undefined) continue
    cycle.push([event, at - last, (used - lastCpu) / 1000])
    last = at
    lastCpu = used
    if (ends(event)) {
      const shape = cycle.map(([e]) => e).join(" > ")
      shapes.set(shape, [...(shapes.get(shape) ?? []), cycle.map(([, ms]) => ms)])
      const pauses = collections.filter(([start]) => start >= began && start <= at).map(([, ms]) => ms)
      all.push({ total: cycle.reduce((sum, [, ms]) => sum + ms, 0), cycle, pauses, index: all.length })
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
  if (slowest > 0 && all.length > 0) {
    const totals = all.map((c) => c.total)
    const mean = totals.reduce((a, b) => a + b, 0) / totals.length
    console.error(
      `timeline (pid ${process.pid}), ${all.length} cycles: mean ${mean.toFixed(3)} ms, median ${
        median(totals).toFixed(3)
      } ms; slowest:`
    )
    const collected = all.filter((c) => c.pauses.length > 0)
    console.error(
      `  ${collected.length} cycles had a garbage collection in them (median total ${
        collected.length === 0 ? "-" : median(collected.map((c) => c.total)).toFixed(3)
      } ms); each segment below: wall ms (this process's CPU ms in it)`
    )
    for (const { cycle, index, pauses, total } of all.sort((a, b) => b.total - a.total).slice(0, slowest)) {
      const gc = pauses.length === 0 ? "" : ` [gc ${pauses.map((ms) => ms.toFixed(2)).join(", ")} ms]`
      console.error(
        `  #${index} ${total.toFixed(2)} ms: ${cycle.map(([e, ms, used]) => `${e} ${ms.toFixed(2)} (${used.toFixed(2)})`).join(" > ")}${gc}`
      )
    }
  }
})
