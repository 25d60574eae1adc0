/**
 * Reproduces, deterministically, the unreported overlap the chaos run found:
 *
 *   npx tsx scripts/chaos/repro-timeout-lease-lost.ts
 *
 * An exclusive attempt holds its lease; its lease expires and another owner takes it over (in the
 * chaos run: the worker was SIGSTOPped past the lease window, then a job with the same key took
 * the lease); then the first attempt's perform times out. After a timeout the worker neither
 * releases nor reads the lease, so processNext reports `Failed` with `leaseLost: false` although
 * the run overlapped the new holder's. For contrast, the same take-over followed by a perform that
 * ends without a timeout reports `leaseLost: true`.
 *
 * In-memory SQLite and TestClock: no server, no wall-clock waiting. Exit code 1 while the gap is
 * there (the timed-out attempt reports no lost lease), 0 once it reports one.
 */
import { Deferred, Effect, Fiber, FiberId, Option, Schema, TestClock, TestContext } from "effect"
import { Job, Worker } from "../../src/index.ts"
import { JobLeases, TestLeasehold } from "../../src/testing.ts"

const T0 = Date.UTC(2026, 11, 3, 9)
const LEASE = "key:report"

/** Runs one attempt whose lease is taken over mid-run; `overrun`: perform outlives its 1 s timeout. */
const scenario = (overrun: boolean) => {
  const started = Deferred.unsafeMake<void>(FiberId.none)
  const Report = Job.define({
    name: "Report",
    schema: Schema.Struct({}),
    concurrencyKey: "report",
    timeout: "1 second",
    perform: () =>
      Effect.zipRight(Deferred.succeed(started, undefined), Effect.sleep(overrun ? "2 seconds" : "500 millis"))
  })
  return Effect.gen(function*() {
    yield* TestClock.setTime(T0)
    yield* Job.enqueue(Report, {})
    const fiber = yield* Effect.fork(Worker.processNext({ host: "worker-a" }))
    yield* Deferred.await(started)
    const leases = yield* JobLeases
    const held = yield* leases.read(LEASE)
    if (Option.isNone(held)) return yield* Effect.dieMessage("the attempt holds no lease")
    // The lease expires and another worker takes it over (its clock is past the expiry).
    const after = held.value.expiresAt + 1
    const taken = yield* leases.tryAcquire({
      name: LEASE,
      owner: "worker-b-attempt",
      host: "worker-b",
      now: after,
      expiresAt: after + 61_000
    })
    yield* TestClock.adjust(overrun ? "1 second" : "500 millis")
    const result = yield* Fiber.join(fiber)
    const owner = Option.getOrNull(yield* leases.ownerOf(LEASE))
    return { taken, result, owner }
  }).pipe(Effect.provide(TestLeasehold.sqliteLayer({ jobs: [Report] })), Effect.provide(TestContext.TestContext))
}

const describeResult = (r: Worker.ProcessResult) =>
  r._tag === "Completed" || r._tag === "Failed" || r._tag === "Fenced"
    ? `${r._tag}${r._tag === "Failed" ? ` (${r.error})` : ""}, leaseLost: ${r.leaseLost}`
    : r._tag

const main = Effect.gen(function*() {
  const plain = yield* scenario(false)
  const timedOut = yield* scenario(true)
  console.log(
    `lease taken over mid-run, perform ends normally:    ${
      describeResult(plain.result)
    }; lease now held by ${plain.owner}`
  )
  console.log(
    `lease taken over mid-run, perform then times out:   ${
      describeResult(timedOut.result)
    }; lease now held by ${timedOut.owner}`
  )
  const gap = timedOut.taken && "leaseLost" in timedOut.result && !timedOut.result.leaseLost
  console.log(
    gap
      ? "=> the timed-out attempt overlapped another holder and reported no lost lease"
      : "=> both report the lost lease"
  )
  return gap
})

Effect.runPromise(main).then(
  (gap) => process.exit(gap ? 1 : 0),
  (e) => {
    console.error(e)
    process.exit(2)
  }
)
