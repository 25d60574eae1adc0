/**
 * `Job.explain` (docs/why-a-job-waits.md) on every adapter: each reason made from real state — a
 * future run_at, a backoff after a failed attempt, a busy key (of one slot and of two), a type's
 * cap, a rate limit, a pause, draining hosts, a due job, a running attempt, and completed, dead and
 * cancelled jobs — with the sentence that says it; and an unknown or malformed id a typed error
 * that changes nothing. TestClock drives time.
 */
import { expect, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option, TestClock } from "effect"
import { JobNotFoundError } from "../../src/core/errors.ts"
import { leaseWindowSeconds } from "../../src/core/lease.ts"
import { JobStore } from "../../src/JobStore.ts"
import { cancel, define, enqueue, explain, jobsLayer } from "../../src/runtime/Job.ts"
import * as Limits from "../../src/runtime/limits.ts"
import { drain, processNext } from "../../src/runtime/Worker.ts"
import { type AdapterName, layerFor } from "../support/databases.ts"
import { Payload, withJobs } from "../support/jobs.ts"

const T0 = 1_791_039_632_175
const SECOND = 1000
const MINUTE = 60 * SECOND
/** The lease window of the default 300 s timeout. */
const WINDOW = leaseWindowSeconds(300) * SECOND

const iso = (ms: number) => new Date(ms).toISOString()
const row = (id: string) => Effect.flatMap(JobStore, (s) => Effect.map(s.get(id), Option.getOrThrow))

const Plain = define({ name: "Plain", schema: Payload, perform: () => Effect.void })
const Failing = define({
  name: "Failing",
  schema: Payload,
  maxRetries: 1,
  perform: ({ n }) => Effect.fail(new Error(`boom ${n}`))
})
const Rated = define({
  name: "Rated",
  schema: Payload,
  rateLimit: { limit: 1, period: "1 minute" },
  perform: () => Effect.void
})

/**
 * Job types whose perform says it started (`started[n - 1]` for payload n) and waits on `gate`: one
 * of key acct-1, one of a key with two slots, and one capped at one run of its type.
 */
const blocking = Effect.gen(function*() {
  const gate = yield* Deferred.make<void>()
  const started = [yield* Deferred.make<void>(), yield* Deferred.make<void>()]
  const perform = ({ n }: { readonly n: number }) =>
    Effect.zipRight(Deferred.succeed(started[n - 1]!, undefined), Deferred.await(gate))
  const Keyed = define({ name: "Keyed", schema: Payload, concurrencyKey: "acct-1", perform })
  const Pair = define({ name: "Pair", schema: Payload, concurrencyKey: "pair", concurrencyLimit: 2, perform })
  const Capped = define({ name: "Capped", schema: Payload, typeConcurrencyLimit: 1, perform })
  /** Enqueues payload n (1 or 2) of `type` and runs it on `host` in a fiber of its own until it waits on the gate. */
  const runUntilWaiting = (type: typeof Keyed | typeof Pair | typeof Capped, n: 1 | 2, host: string) =>
    Effect.gen(function*() {
      const job = yield* enqueue(type, { n })
      const fiber = yield* Effect.fork(processNext({ host }))
      yield* Deferred.await(started[n - 1]!)
      return { job, fiber }
    })
  return { gate, Keyed, Pair, Capped, runUntilWaiting }
})

export const explainConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "why"), { timeout: 120_000 })(`Why a job waits (Job.explain) on ${adapter}`, (it) => {
    it.effect("an unknown id, or one no job can have (empty, too long, a NUL, quotes, SQL), is JobNotFoundError and changes nothing", () =>
      withJobs(
        [Plain],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const { id } = yield* enqueue(Plain, { n: 1 })
          const before = yield* row(id)
          const store = yield* JobStore
          const counts = yield* store.counts
          const ids = [
            "00000000-0000-4000-8000-000000000000",
            "",
            "x".repeat(37),
            "a\u0000b",
            "it's \"quoted\"",
            `' OR '1'='1`,
            "'; DELETE FROM jobs; --"
          ]
          for (const bad of ids) {
            const error = yield* Effect.flip(explain(bad))
            expect(error).toBeInstanceOf(JobNotFoundError)
            expect(error).toMatchObject({ jobId: bad, message: `no job with id ${bad}` })
          }
          expect(yield* row(id)).toEqual(before)
          expect(yield* store.counts).toEqual(counts)
        })
      ))

    it.effect("not due until its run_at; then due since then, waiting for a worker of its queue", () =>
      withJobs(
        [Plain],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const { id } = yield* enqueue(Plain, { n: 1 }, { delay: "1 minute", queue: "mail" })
          const later = yield* explain(id)
          expect(later).toMatchObject({
            id,
            name: "Plain",
            queue: "mail",
            status: "pending",
            at: T0,
            registered: true,
            reason: { _tag: "NotDue", runAt: T0 + MINUTE }
          })
          expect(later.message).toBe(`not due until ${iso(T0 + MINUTE)} (in 1m)`)
          yield* TestClock.adjust(MINUTE + 5 * SECOND)
          const due = yield* explain(id)
          expect(due.reason).toEqual({ _tag: "Due", dueSince: T0 + MINUTE, queue: "mail" })
          expect(due.message).toBe(`due since ${iso(T0 + MINUTE)} (5s ago); waiting for a worker of queue mail`)
        })
      ))

    it.effect("draining: a due job no live host may start names the draining hosts; a gone host does not count, a host that is up does", () =>
      withJobs(
        [Plain],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const store = yield* JobStore
          const fields = { maxConcurrent: 0, codeVersion: null }
          // last seen 10 minutes ago: gone, whatever its row says
          yield* store.touchHost("old", T0 - 10 * MINUTE, fields)
          yield* store.touchHost("h1", T0, fields)
          yield* drain({ host: "h1" })
          const { id } = yield* enqueue(Plain, { n: 1 })
          const drained = yield* explain(id)
          expect(drained.reason).toEqual({ _tag: "HostsDraining", dueSince: T0, queue: "default", hosts: ["h1"] })
          expect(drained.message).toBe(
            `due since ${
              iso(T0)
            } (now), but every worker host seen in the last 5m is draining (h1), so none starts it until one resumes`
          )
          yield* store.touchHost("h2", T0, fields)
          expect((yield* explain(id)).reason).toMatchObject({ _tag: "Due" })
        })
      ))

    it.effect("paused: a job of a paused queue waits until the pause is lifted, and says which", () =>
      withJobs(
        [Plain],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          yield* Limits.pause({ queue: "mail" })
          const { id } = yield* enqueue(Plain, { n: 1 }, { queue: "mail" })
          const held = yield* processNext({ host: "h1" })
          if (held._tag !== "Deferred") return yield* Effect.dieMessage(`expected a deferral, got ${held._tag}`)
          const paused = yield* explain(id)
          expect(paused.reason).toEqual({
            _tag: "Paused",
            runAt: held.retryAt,
            waitName: "paused:queue:mail",
            what: "queue:mail"
          })
          expect(paused.message).toBe(
            `paused: queue mail is paused, so the job waits until the pause is lifted; it looks again at ${
              iso(held.retryAt)
            } (in 5m)`
          )
          yield* Limits.resume({ queue: "mail" })
          expect((yield* explain(id)).reason).toMatchObject({ _tag: "Due", queue: "mail" })
        })
      ))

    it.effect("a backoff after a failed attempt names the attempt and its error; retries used up, dead with its last error", () =>
      withJobs(
        [Failing],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const { id } = yield* enqueue(Failing, { n: 1 })
          const first = yield* processNext({ host: "h1" })
          if (first._tag !== "Failed" || first.retryAt === null) return yield* Effect.dieMessage("expected a retry")
          const waiting = yield* explain(id)
          expect(waiting.reason).toMatchObject({
            _tag: "Backoff",
            runAt: first.retryAt,
            attempt: 1,
            lastError: expect.stringContaining("boom 1")
          })
          expect(waiting.message).toMatch(
            new RegExp(
              `^not due until ${iso(first.retryAt)} \\(in 4s\\): backoff after attempt 1 \\(last error: .*boom 1\\)$`
            )
          )
          yield* TestClock.setTime(first.retryAt)
          expect(yield* processNext({ host: "h1" })).toMatchObject({ _tag: "Failed", willRetry: false })
          const dead = yield* explain(id)
          expect(dead.reason).toMatchObject({ _tag: "Dead", at: first.retryAt, attempts: 2 })
          expect(dead.message).toMatch(
            new RegExp(`^dead since ${iso(first.retryAt)} \\(now\\), after 2 attempts: .*boom 1$`)
          )
        })
      ))

    it.effect("completed: when and on which attempt; cancelled: when", () =>
      withJobs(
        [Plain],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const done = yield* enqueue(Plain, { n: 1 })
          expect(yield* processNext({ host: "h1" })).toMatchObject({ _tag: "Completed" })
          yield* TestClock.adjust(2 * SECOND)
          const completed = yield* explain(done.id)
          expect(completed.reason).toEqual({ _tag: "Completed", at: T0, attempt: 1 })
          expect(completed.message).toBe(`completed at ${iso(T0)} (2s ago), on attempt 1`)
          const dropped = yield* enqueue(Plain, { n: 2 }, { delay: "1 hour" })
          yield* cancel(dropped.id)
          const cancelled = yield* explain(dropped.id)
          expect(cancelled.reason).toEqual({ _tag: "Cancelled", at: T0 + 2 * SECOND })
          expect(cancelled.message).toBe(`cancelled at ${iso(T0 + 2 * SECOND)} (now)`)
        })
      ))

    it.effect("running while perform waits: host, since, attempt, the key's lease; a job deferred behind it names the holder; unregistered, the slot count is unknown", () =>
      Effect.gen(function*() {
        const b = yield* blocking
        yield* withJobs(
          [b.Keyed],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { fiber: running, job: first } = yield* b.runUntilWaiting(b.Keyed, 1, "h1")
            const run = yield* explain(first.id)
            expect(run.reason).toEqual({
              _tag: "Running",
              host: "h1",
              since: T0,
              attempt: 1,
              leases: ["key:acct-1"],
              heartbeatAt: null,
              stale: false,
              hostDraining: false
            })
            expect(run.message).toBe(
              `running: claimed by host h1 at ${iso(T0)} (now), attempt 1, holding lease key:acct-1`
            )
            yield* TestClock.adjust(1)
            const second = yield* enqueue(b.Keyed, { n: 2 })
            expect(yield* processNext({ host: "h2" })).toMatchObject({ _tag: "Deferred", leaseName: "key:acct-1" })
            const token = (yield* row(first.id)).claimToken
            const waiting = yield* explain(second.id)
            expect(waiting.reason).toEqual({
              _tag: "LeaseBusy",
              runAt: T0 + 1 + 30 * SECOND,
              lease: "key",
              leaseName: "key:acct-1",
              holder: { name: "key:acct-1", owner: token, host: "h1", expiresAt: T0 + WINDOW, slot: 1 },
              held: 1,
              limit: 1
            })
            expect(waiting.message).toBe(
              `waiting on a lease: key acct-1 held by owner ${token} on host h1 until ${iso(T0 + WINDOW)} (in 10m) ` +
                `(slot 1 of 1); it looks again at ${
                  iso(T0 + 1 + 30 * SECOND)
                } (in 30s), or sooner when it is handed the lease`
            )
            // a process whose registry lacks the type reads slot 1 alone and says so
            const elsewhere = yield* Effect.provide(explain(second.id), jobsLayer())
            expect(elsewhere).toMatchObject({ registered: false, reason: { _tag: "LeaseBusy", limit: null, held: 1 } })
            expect(elsewhere.message).toContain(
              "(slot 1) (job type Keyed is not registered here, so its concurrencyLimit is unknown)"
            )
            // its host drains: the attempt runs on, and says so
            yield* drain({ host: "h1" })
            expect((yield* explain(first.id)).message).toMatch(/; its host is draining and starts nothing new$/)
            yield* Deferred.succeed(b.gate, undefined)
            expect(yield* Fiber.join(running)).toMatchObject({ _tag: "Completed" })
            // the release handed the lease off: the waiter is due
            expect((yield* explain(second.id)).reason).toMatchObject({ _tag: "HostsDraining", dueSince: T0 + 1 })
          })
        )
      }))

    it.effect("two slots of a key, both held: the third job names the slot that frees first, of 2, 2 held", () =>
      Effect.gen(function*() {
        const b = yield* blocking
        yield* withJobs(
          [b.Pair],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { fiber: one } = yield* b.runUntilWaiting(b.Pair, 1, "h1")
            yield* TestClock.adjust(SECOND)
            const { fiber: two } = yield* b.runUntilWaiting(b.Pair, 2, "h2")
            yield* TestClock.adjust(SECOND)
            const third = yield* enqueue(b.Pair, { n: 3 })
            expect(yield* processNext({ host: "h3" })).toMatchObject({ _tag: "Deferred", leaseName: "key:pair" })
            const waiting = yield* explain(third.id)
            expect(waiting.reason).toMatchObject({
              _tag: "LeaseBusy",
              leaseName: "key:pair",
              holder: { name: "key:pair", host: "h1", expiresAt: T0 + WINDOW, slot: 1 },
              held: 2,
              limit: 2
            })
            expect(waiting.message).toContain(`on host h1 until ${iso(T0 + WINDOW)} (in 9m 58s) (slot 1 of 2, 2 held)`)
            yield* Deferred.succeed(b.gate, undefined)
            yield* Fiber.join(one)
            yield* Fiber.join(two)
          })
        )
      }))

    it.effect("a type's cap: a job deferred behind the run holding the cap names it", () =>
      Effect.gen(function*() {
        const b = yield* blocking
        yield* withJobs(
          [b.Capped],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { fiber: running, job: first } = yield* b.runUntilWaiting(b.Capped, 1, "h1")
            const second = yield* enqueue(b.Capped, { n: 2 })
            expect(yield* processNext({ host: "h2" })).toMatchObject({ _tag: "Deferred", leaseName: "cap:Capped" })
            const token = (yield* row(first.id)).claimToken
            expect((yield* explain(first.id)).reason).toMatchObject({ _tag: "Running", leases: ["cap:Capped"] })
            const waiting = yield* explain(second.id)
            expect(waiting.reason).toMatchObject({
              _tag: "LeaseBusy",
              lease: "typeCap",
              leaseName: "cap:Capped",
              holder: { name: "cap:Capped", owner: token, host: "h1", slot: 1 },
              held: 1,
              limit: 1
            })
            expect(waiting.message).toMatch(
              new RegExp(
                `^waiting for its type's cap: cap:Capped held by owner ${token} on host h1 until .* \\(slot 1 of 1\\); `
              )
            )
            yield* Deferred.succeed(b.gate, undefined)
            yield* Fiber.join(running)
          })
        )
      }))

    it.effect("rate limited: 1 start per minute used, the second job due when the slot frees", () =>
      withJobs(
        [Rated],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          yield* enqueue(Rated, { n: 1 })
          yield* TestClock.adjust(1)
          const second = yield* enqueue(Rated, { n: 2 })
          expect(yield* processNext({ host: "h1" })).toMatchObject({ _tag: "Completed" })
          const deferred = yield* processNext({ host: "h1" })
          if (deferred._tag !== "Deferred") return yield* Effect.dieMessage(`expected a deferral, got ${deferred._tag}`)
          expect(deferred.leaseName).toBe("rate:job:Rated")
          const waiting = yield* explain(second.id)
          expect(waiting.reason).toEqual({
            _tag: "RateLimited",
            runAt: deferred.retryAt,
            rateName: "rate:job:Rated",
            key: "job:Rated",
            used: 1,
            limit: 1,
            periodMs: MINUTE,
            nextFreeAt: deferred.retryAt
          })
          expect(waiting.message).toBe(
            `rate limited: 1 start per 1m used on job:Rated; next slot frees at ${iso(deferred.retryAt)} (in 1m)`
          )
          const elsewhere = yield* Effect.provide(explain(second.id), jobsLayer())
          expect(elsewhere.message).toBe(
            "rate limited on job:Rated (job type Rated is not registered here, so its rate limit is unknown); " +
              `slot 1 frees at ${iso(deferred.retryAt)} (in 1m); it is due at ${iso(deferred.retryAt)} (in 1m)`
          )
          yield* TestClock.setTime(deferred.retryAt)
          expect((yield* explain(second.id)).reason).toMatchObject({ _tag: "Due", dueSince: deferred.retryAt })
        })
      ))
  })
