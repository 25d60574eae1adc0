/**
 * The hosts table as the worker uses it (docs/behaviour.md §9): refresh this host's row, read
 * whether it is draining (failing closed), and drain or resume a host.
 */
import { explain } from "./explain.ts"
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, Duration, Effect, Option, type Scope } from "effect"
import type { WorkerConfigError } from "../../core/errors.ts"
import { isDraining } from "../../core/hosts.ts"
import { JobStore, type JobStoreApi } from "../../ports/JobStore.ts"
import { type DrainOptions, drainEnd, type Resolved, resolve } from "./options.ts"

/** Creates or refreshes this host's row (its cap and code version) at the current time. */
export const touchHost = (
  store: JobStoreApi,
  o: Resolved,
  codeVersion: string | undefined
): Effect.Effect<void, SqlError> =>
  Effect.flatMap(
    Clock.currentTimeMillis,
    (now) => store.touchHost(o.host, now, { maxConcurrent: o.hostCap ?? 0, codeVersion: codeVersion ?? null })
  )

/**
 * Whether `host` is draining at `now`: some(until) when it is (null: no expiry). An unreadable
 * hosts table counts as draining (fails closed), so a worker starts nothing it was told not to.
 */
export const drainState = (
  store: JobStoreApi,
  host: string,
  now: number
): Effect.Effect<Option.Option<number | null>> =>
  Effect.matchEffect(store.getHost(host), {
    onFailure: (error) =>
      Effect.as(
        Effect.logWarning(`hosts table unreadable (${explain(error)}); starting nothing until it is`, error),
        Option.some<number | null>(null)
      ),
    onSuccess: (row) =>
      Effect.succeed(
        Option.isSome(row) && isDraining(row.value, now) ? Option.some(row.value.drainExpiresAt) : Option.none()
      )
  })

/**
 * Marks `host` draining: it still reaps but starts nothing. `expiresIn` ≤ 0, infinite or none:
 * no expiry; NaN, unreadable or too large (now + it past the largest exact epoch-ms value):
 * `WorkerConfigError`, nothing written.
 */
export const drain = (options: DrainOptions = {}): Effect.Effect<void, SqlError | WorkerConfigError, JobStore> =>
  Effect.gen(function*() {
    const { host } = yield* resolve(options)
    const store = yield* JobStore
    const now = yield* Clock.currentTimeMillis
    yield* store.drain(host, now, yield* drainEnd(options.expiresIn, now))
  })

/** Lifts a drain on `host`. */
export const resume = (
  options: { readonly host?: string | undefined } = {}
): Effect.Effect<void, SqlError | WorkerConfigError, JobStore> =>
  Effect.gen(function*() {
    const { host } = yield* resolve(options)
    yield* (yield* JobStore).resume(host, yield* Clock.currentTimeMillis)
  })

/**
 * How old, as a share of the poll interval, a busy worker's drain state is when it is read again
 * in the background: late enough that a busy worker reads it little more often than once per
 * interval, early enough that the read is back before the state is a whole interval old.
 */
export const REFRESH_AHEAD = 0.8

/**
 * `drainState` for a long-running worker's loop, shared by its fibers: true while the host is
 * draining. The answer used is never older than `every` (its poll interval). A claim that finds
 * it older than that reads it first; one that finds it older than `REFRESH_AHEAD` of that uses it
 * and has it read again in the background (one read at a time, in the worker's scope), so a busy
 * claimer, or one woken within an interval of the last read, does not wait a round trip for it
 * (issue 13: on PostgreSQL one claim in three of the cross-process latency run waited for it).
 */
export const cachedDraining = (
  store: JobStoreApi,
  host: string,
  every: Duration.Duration
): Effect.Effect<Effect.Effect<boolean>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const everyMs = Duration.toMillis(every)
    // Plain state, as the refresh flag: the worker's fibers share one thread.
    let cached = { at: -Infinity, draining: false }
    let refreshing = false
    // A read that finishes after a newer one leaves the newer answer in place.
    const read = (now: number) =>
      Effect.map(drainState(store, host, now), (state) => {
        const draining = Option.isSome(state)
        if (now >= cached.at) cached = { at: now, draining }
        return draining
      })
    // The Clock read in place: this runs before every claim (an idle worker's, once per job).
    return Effect.clockWith((clock) => {
      const now = clock.unsafeCurrentTimeMillis()
      const age = now - cached.at
      if (age >= everyMs) return read(now)
      if (age >= everyMs * REFRESH_AHEAD && !refreshing) {
        refreshing = true
        return Effect.as(
          Effect.forkIn(Effect.ensuring(read(now), Effect.sync(() => (refreshing = false))), scope),
          cached.draining
        )
      }
      return Effect.succeed(cached.draining)
    })
  })
