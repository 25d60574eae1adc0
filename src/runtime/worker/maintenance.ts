/**
 * Retention (docs/behaviour.md §13): the long-running worker deletes completed jobs, dead jobs
 * and silent hosts past their retention, in bounded batches, once at start and then every
 * `interval`. The rules (defaults, cut-offs, batch bounds) are in src/core/retention.ts.
 */
import { warnFailure } from "./explain.ts"
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, Duration, Effect, Either } from "effect"
import { parseDurationMillis, parsePositiveMillis } from "../../core/duration.ts"
import { WorkerConfigError } from "../../core/errors.ts"
import {
  DEFAULT_RETENTION,
  DEFAULT_RETENTION_BATCH,
  MAX_RETENTION_BATCHES,
  type RetentionPolicy,
  retentionCutoffs
} from "../../core/retention.ts"
import { MAX_LOST_LEASES } from "../../core/lostLeases.ts"
import { JobStore, type JobStoreApi } from "../../ports/JobStore.ts"

/**
 * The worker's `retention` option: how long completed jobs, dead jobs and host rows are kept
 * (a duration, or `false` to keep them for ever), how often the worker looks, and how many rows
 * one statement deletes. `retention: false` turns it all off.
 */
export interface RetentionConfig {
  /** Completed jobs, from completion (default "7 days"). */
  readonly completed?: Duration.DurationInput | false | undefined
  /** Dead jobs (failed, interrupted) and cancelled ones, from their end (default "30 days"). */
  readonly dead?: Duration.DurationInput | false | undefined
  /** Host rows not seen for this long, unless draining (default "1 hour"). */
  readonly hosts?: Duration.DurationInput | false | undefined
  /**
   * Records of lost leases (the dashboard's "recently lost"), from their loss (default "7 days");
   * whatever this says, only the newest 1,000 are kept.
   */
  readonly lostLeases?: Duration.DurationInput | false | undefined
  /** How often a pass runs (default "10 minutes"); the first runs when the worker starts. */
  readonly interval?: Duration.DurationInput | undefined
  /** Rows one statement deletes at most: 1 to 100,000 (default 1,000); a pass runs at most 10 of each kind. */
  readonly batchSize?: number | undefined
}

/** `RetentionConfig` once checked; `undefined`: retention is off. */
export interface ResolvedRetention {
  readonly policy: RetentionPolicy
  readonly interval: Duration.Duration
  readonly batchSize: number
}

/** What one pass deleted. */
export interface RetentionTally {
  readonly completed: number
  /** Dead and cancelled jobs. */
  readonly dead: number
  readonly hosts: number
  /** Lost-lease records. */
  readonly lostLeases: number
}

const refuse = (field: string, reason: string) => Effect.fail(new WorkerConfigError({ field, reason }))

const keep = (
  field: string,
  value: Duration.DurationInput | false | undefined,
  fallback: number | null
): Effect.Effect<number | null, WorkerConfigError> => {
  if (value === undefined) return Effect.succeed(fallback)
  if (value === false) return Effect.succeed(null)
  const ms = parseDurationMillis(value, { infinite: true })
  return Either.match(ms, {
    onLeft: (reason) => refuse(`retention.${field}`, reason),
    // An infinite retention keeps rows for ever, as `false` does.
    onRight: (n) => Effect.succeed(n === Number.POSITIVE_INFINITY ? null : Math.ceil(n))
  })
}

/** Checks the `retention` option; a bad value fails with `WorkerConfigError` naming the field. */
export const resolveRetention = (
  config: RetentionConfig | false | undefined
): Effect.Effect<ResolvedRetention | undefined, WorkerConfigError> =>
  Effect.gen(function*() {
    if (config === false) return undefined
    const c = config ?? {}
    const policy: RetentionPolicy = {
      completedMs: yield* keep("completed", c.completed, DEFAULT_RETENTION.completedMs),
      deadMs: yield* keep("dead", c.dead, DEFAULT_RETENTION.deadMs),
      hostsMs: yield* keep("hosts", c.hosts, DEFAULT_RETENTION.hostsMs),
      lostLeasesMs: yield* keep("lostLeases", c.lostLeases, DEFAULT_RETENTION.lostLeasesMs)
    }
    const interval = parsePositiveMillis(c.interval ?? "10 minutes")
    if (Either.isLeft(interval)) return yield* refuse("retention.interval", interval.left)
    const batchSize = c.batchSize ?? DEFAULT_RETENTION_BATCH
    if (!Number.isSafeInteger(batchSize) || batchSize < 1 || batchSize > 100_000) {
      return yield* refuse("retention.batchSize", `must be a whole number from 1 to 100000, got ${batchSize}`)
    }
    return { policy, interval: Duration.millis(interval.right), batchSize }
  })

// Runs `batch` until it deletes fewer than `size` rows, at most MAX_RETENTION_BATCHES times.
const batches = (size: number, batch: Effect.Effect<number, SqlError>) =>
  Effect.gen(function*() {
    let total = 0
    for (let i = 0; i < MAX_RETENTION_BATCHES; i++) {
      const n = yield* batch
      total += n
      if (n < size) break
    }
    return total
  })

/**
 * One retention pass at the current time: completed jobs, dead (and cancelled) jobs, then host
 * rows past their retention are deleted, each kind in batches of `batchSize` rows, oldest first;
 * then lost-lease records past theirs, and all but the newest `MAX_LOST_LEASES` (one statement:
 * there are never many).
 */
export const retentionPass = (
  store: JobStoreApi,
  r: ResolvedRetention
): Effect.Effect<RetentionTally, SqlError> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const cut = retentionCutoffs(r.policy, now)
    const completed = cut.completedBefore === null
      ? 0
      : yield* batches(r.batchSize, store.purge("completed", cut.completedBefore, r.batchSize))
    // Died strictly before the cut-off, as completed jobs are purged.
    const deadBefore = cut.deadBefore
    const dead = deadBefore === null ? 0 : yield* batches(
      r.batchSize,
      store.discardDeadWhere(
        { statuses: ["failed", "interrupted", "cancelled"], diedBefore: deadBefore - 1 },
        r.batchSize
      )
    )
    const hosts = cut.hostsSeenBefore === null ? 0 : yield* store.pruneHosts(cut.hostsSeenBefore, now)
    const lostLeases = yield* store.pruneLostLeases(cut.lostLeasesBefore, MAX_LOST_LEASES)
    return { completed, dead, hosts, lostLeases }
  })

/**
 * The worker's retention loop: a pass now and then every `interval`, forever (the worker forks
 * it and interrupts it on shutdown). A failed pass is logged and tried again next time.
 */
export const retentionLoop = (store: JobStoreApi, r: ResolvedRetention): Effect.Effect<never> =>
  Effect.forever(
    Effect.zipRight(
      Effect.catchAll(
        Effect.tap(retentionPass(store, r), (t) =>
          t.completed + t.dead + t.hosts + t.lostLeases > 0
            ? Effect.logInfo(
              `retention: deleted ${t.completed} completed job(s), ${t.dead} dead job(s), ${t.hosts} host row(s), ${t.lostLeases} lost-lease record(s)`
            )
            : Effect.void),
        (error) => warnFailure((reason) => `retention pass failed (${reason}); trying again next interval`, error)
      ),
      Effect.sleep(r.interval)
    )
  )

/**
 * One retention pass with `config`'s rules (defaults as the worker's), for apps that run
 * `Worker.tick` from a scheduler instead of a long-running worker. `false` deletes nothing.
 */
export const runRetention = (
  config: RetentionConfig | false = {}
): Effect.Effect<RetentionTally, SqlError | WorkerConfigError, JobStore> =>
  Effect.gen(function*() {
    const r = yield* resolveRetention(config)
    if (r === undefined) return { completed: 0, dead: 0, hosts: 0, lostLeases: 0 }
    return yield* retentionPass(yield* JobStore, r)
  })
