/**
 * The hosts table as the worker uses it (docs/behaviour.md §9): refresh this host's row, read
 * whether it is draining (failing closed), and drain or resume a host.
 */
import { explain } from "./explain.ts"
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, Duration, Effect, Option, Ref } from "effect"
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
 * `drainState` for a long-running worker's loop, read from the database at most once per
 * `every` (its poll interval) and shared by its fibers: true while the host is draining.
 */
export const cachedDraining = (
  store: JobStoreApi,
  host: string,
  every: Duration.Duration
): Effect.Effect<Effect.Effect<boolean>> =>
  Effect.map(
    Ref.make<{ readonly at: number; readonly draining: boolean }>({ at: -Infinity, draining: false }),
    (cache) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const cached = yield* Ref.get(cache)
        if (now - cached.at < Duration.toMillis(every)) return cached.draining
        const draining = Option.isSome(yield* drainState(store, host, now))
        yield* Ref.set(cache, { at: now, draining })
        return draining
      })
  )
