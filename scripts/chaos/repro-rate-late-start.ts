/**
 * Reproduces, deterministically, the margin the chaos run's rate-slot figures point at
 * (`limits.rateSlots`, docs/reliability.md):
 *
 *   npx tsx scripts/chaos/repro-rate-late-start.ts
 *
 * A job type with `rateLimit: { limit: 1, period: "1 second" }`. Attempt A takes the rate slot
 * at T; the take's reply comes 50 ms later, past the 10 ms start allowance, so A moves the slot's
 * end to a period from then (T + 50 + 1 s + 10 ms) with a renew — whose reply takes another
 * 300 ms. A's perform starts only then, at T + 350, while the slot counts from T + 50. Attempt B,
 * due when the slot frees, takes it at T + 1061 and starts at once: two starts 711 ms apart, one
 * window of a period holding 2 starts with a limit of 1. The slow replies stand for a loaded
 * database or process; the renew that was to make up for the late take is a round trip of its
 * own, which nothing after it checks.
 *
 * In-memory SQLite and TestClock: the lease service is wrapped so that a rate slot's replies
 * arrive late (the wrapper moves the TestClock on). Exit code 1 while two starts fit in one
 * period, 0 once they cannot.
 */
import { Clock, Effect, Layer, Logger, LogLevel, Schema, TestClock, TestContext } from "effect"
import { Job, Worker } from "../../src/index.ts"
import { JobLeases, TestLeasehold } from "../../src/testing.ts"

const T0 = Date.UTC(2026, 11, 3, 9)
const PERIOD_MS = 1000
const starts: Array<{ readonly job: number; readonly at: number }> = []

const Call = Job.define({
  name: "Call",
  schema: Schema.Struct({ n: Schema.Number }),
  rateLimit: { limit: 1, period: `${PERIOD_MS} millis` },
  perform: ({ n }) => Effect.flatMap(Clock.currentTimeMillis, (at) => Effect.sync(() => starts.push({ job: n, at })))
})

// Slow replies for the first attempt's rate slot only: its take's reply 50 ms late (past the
// allowance, so it moves the slot's end), its renew's 300 ms late.
let slow = true
const slowRateReplies = Layer.effect(
  JobLeases,
  Effect.map(JobLeases, (leases) => ({
    ...leases,
    tryAcquireToken: (input: Parameters<typeof leases.tryAcquireToken>[0]) =>
      input.name.startsWith("rate:") && slow
        ? Effect.tap(leases.tryAcquireToken(input), () => TestClock.adjust("50 millis"))
        : leases.tryAcquireToken(input),
    renew: (input: Parameters<typeof leases.renew>[0]) =>
      input.name.startsWith("rate:") && slow
        ? Effect.tap(leases.renew(input), () => TestClock.adjust("300 millis"))
        : leases.renew(input)
  }))
)

const main = Effect.gen(function*() {
  yield* TestClock.setTime(T0)
  yield* Job.enqueue(Call, { n: 1 })
  const a = yield* Worker.processNext({ host: "worker-a" })
  slow = false
  yield* Job.enqueue(Call, { n: 2 })
  // B meets the slot held: deferred until it frees.
  const deferred = yield* Worker.processNext({ host: "worker-b" })
  const slot = yield* Effect.flatMap(JobLeases, (l) => l.read("rate:job:Call"))
  const freeAt = slot._tag === "Some" ? slot.value.expiresAt + 1 : T0
  yield* TestClock.setTime(freeAt)
  const b = yield* Worker.processNext({ host: "worker-b" })
  return { a, deferred, b, freeAt }
}).pipe(
  Effect.provide(slowRateReplies.pipe(Layer.provideMerge(TestLeasehold.sqliteLayer({ jobs: [Call] })))),
  Effect.provide(TestContext.TestContext),
  Logger.withMinimumLogLevel(LogLevel.Warning)
)

Effect.runPromise(main).then(
  ({ a, b, deferred, freeAt }) => {
    console.log(`A: ${a._tag}; B first: ${deferred._tag}; B when the slot freed (T + ${freeAt - T0} ms): ${b._tag}`)
    for (const s of starts) console.log(`perform of job ${s.job} started at T + ${s.at - T0} ms`)
    const [first, second] = starts
    const gap = first !== undefined && second !== undefined ? second.at - first.at : null
    const over = gap !== null && gap < PERIOD_MS
    console.log(
      over
        ? `=> 2 starts ${gap} ms apart: the window [T + ${first!.at - T0}, T + ${
          first!.at - T0 + PERIOD_MS
        }) holds 2 with a limit of 1 per ${PERIOD_MS} ms`
        : `=> starts ${gap ?? "?"} ms apart: no window of ${PERIOD_MS} ms holds more than 1`
    )
    process.exit(over ? 1 : 0)
  },
  (e) => {
    console.error(e)
    process.exit(2)
  }
)
