/** The README's testing example, verbatim but for import paths: it must keep passing. */
import { expect, it } from "@effect/vitest"
import { Effect, Schema, TestClock } from "effect"
import { Job } from "../../src/index.ts"
import { advance, drain, job, JobLeases, TestLeasehold } from "../../src/testing.ts"

const SyncAccount = Job.define({
  name: "SyncAccount",
  schema: Schema.Struct({ accountId: Schema.String }),
  concurrencyKeyFor: (p) => `account-${p.accountId}`,
  perform: () => Effect.void
})

const SendReceipt = Job.define({
  name: "SendReceipt",
  schema: Schema.Struct({ orderId: Schema.Number }),
  perform: () =>
    Effect.flatMap(Job.JobContext, ({ attempt }) => (attempt <= 2 ? Effect.fail("smtp down") : Effect.void))
})

const T0 = Date.UTC(2026, 11, 3, 9)

it.effect("a busy key defers the job until the holder's lease expires", () =>
  Effect.gen(function*() {
    yield* TestClock.setTime(T0)
    const leases = yield* JobLeases
    yield* leases.tryAcquire({ name: "key:account-a1", owner: "other-worker", now: T0, expiresAt: T0 + 12_500 })
    const { id } = yield* Job.enqueue(SyncAccount, { accountId: "a1" })

    const [deferred] = yield* drain()
    expect(deferred).toMatchObject({ _tag: "Deferred", leaseName: "key:account-a1", retryAt: T0 + 13_000 })
    expect(yield* job(id)).toMatchObject({ status: "pending", attempts: 0 }) // attempt given back

    expect(yield* advance("12999 millis")).toEqual([]) // not due yet
    expect(yield* advance("1 milli")).toMatchObject([{ _tag: "Completed" }])
  }).pipe(Effect.provide(TestLeasehold.layer({ jobs: [SyncAccount] }))))

it.effect("a failed job retries after 4 s, then 8 s", () =>
  Effect.gen(function*() {
    yield* TestClock.setTime(T0)
    yield* Job.enqueue(SendReceipt, { orderId: 7 })
    expect(yield* drain()).toMatchObject([{ _tag: "Failed", willRetry: true, retryAt: T0 + 4_000 }])
    expect(yield* advance("4 seconds")).toMatchObject([{ _tag: "Failed", retryAt: T0 + 12_000 }])
    expect(yield* advance("8 seconds")).toMatchObject([{ _tag: "Completed" }])
  }).pipe(Effect.provide(TestLeasehold.sqliteLayer({ jobs: [SendReceipt] }))))
