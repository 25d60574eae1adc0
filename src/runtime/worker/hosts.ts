/**
 * The hosts table as the worker uses it (docs/behaviour.md §9): refresh this host's row, read
 * whether it is draining (failing closed), and drain or resume a host.
 */
import { explain, warnFailure } from "./explain.ts"
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
        warnFailure((reason) => `hosts table unreadable (${reason}); starting nothing until it is`, error),
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
 * How often, as a share of the poll interval, a long-running worker reads its drain state on its
 * own timer: often enough that the state is read again before it is a whole interval old (the
 * rest of the interval is left for the read's round trip), rarely enough that an idle worker
 * reads it little more often than once per interval.
 */
export const REFRESH_EVERY = 0.9

/** A long-running worker's view of its host's drain state (`cachedDraining`). */
export interface DrainView {
  /**
   * The last answer (true: draining) while it is less than a poll interval old, as a plain call;
   * undefined when it is older (then `read` it).
   */
  readonly fresh: () => boolean | undefined
  /** Reads the drain state now, and keeps the answer. */
  readonly read: Effect.Effect<boolean>
}

/**
 * `drainState` for a long-running worker's loop, shared by its fibers. The answer used is never
 * older than `every` (its poll interval). A fiber in the worker's scope reads it every
 * `REFRESH_EVERY` of that (after a first read as the worker starts), so a claim uses the last
 * answer as it is, without a step; only one that finds it a whole interval old (the timer's read
 * late) reads it first. Read when a claim found it old instead, it was on the path of many
 * claims woken by a notification (a fork, or a round trip, before the claim).
 */
export const cachedDraining = (
  store: JobStoreApi,
  host: string,
  every: Duration.Duration
): Effect.Effect<DrainView, never, Scope.Scope> =>
  Effect.gen(function*() {
    const everyMs = Duration.toMillis(every)
    // The worker's Clock, read in place by `fresh`.
    const clock = yield* Effect.clock
    // Plain state: the worker's fibers share one thread.
    let cached = { at: -Infinity, draining: false }
    // A read that finishes after a newer one leaves the newer answer in place.
    const read = Effect.suspend(() => {
      const now = clock.unsafeCurrentTimeMillis()
      return Effect.map(drainState(store, host, now), (state) => {
        const draining = Option.isSome(state)
        if (now >= cached.at) cached = { at: now, draining }
        return draining
      })
    })
    // Read once now, as the worker starts, then on the timer.
    yield* read
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(everyMs * REFRESH_EVERY), read)))
    return {
      fresh: () => (clock.unsafeCurrentTimeMillis() - cached.at >= everyMs ? undefined : cached.draining),
      read
    }
  })
