/**
 * The shape every job system's benchmark driver has (leasehold's and the peers'). The
 * orchestrator (`bench/run.ts`) calls one function per child process, on a database created
 * for that call alone, and drops the database afterwards; a driver only has to leave no
 * process handles behind (stop its workers, close its pools).
 *
 * `url` is `postgres://…/lh_bench_…`, `mysql://…/lh_bench_…` or an SQLite file path (see
 * `bench/lib/sql.ts`, `sqlLayer(url)`); the database is empty.
 */

/**
 * Rows a throughput drain starts beside (scenarios 1d and 1e): `finished` jobs kept in the table
 * (leasehold: completed; graphile-worker, which deletes completed jobs: permanently failed), and
 * `future` pending jobs due a day later. Inserted in bulk, then VACUUM ANALYZE, before the
 * drain's own jobs are enqueued.
 */
export interface Background {
  readonly finished: number
  readonly future: number
}

/** Passed to throughput drivers: call `drainStarting` after enqueueing, right before the workers start. */
export interface DrainHooks {
  /** Marks the start of the timed phase; resets the peak-RSS high-water mark. */
  readonly drainStarting: () => void
  /** Rows to insert before the drain's jobs (PostgreSQL only); none when absent. */
  readonly background?: Background
}

/** A drain of pre-enqueued jobs: how many, and the milliseconds from worker start to the last one completed. */
export interface DrainResult {
  readonly jobs: number
  readonly ms: number
}

/** One hot key: `jobs` jobs of `sleepMs` each on one key/queue, drained in `ms` (first job's start to last completion). */
export interface HotKeyResult {
  readonly jobs: number
  readonly sleepMs: number
  readonly ms: number
  /**
   * Statements sent from the first job's start (where `ms` starts) to the last completion, where
   * the system counts them.
   */
  readonly statements?: number
  /** Statements sent from the worker's start to the first job's start (its start-up). */
  readonly startStatements?: number
}

/**
 * 3b (leasehold only). A drain of `jobs` no-op jobs on one key under a rate limit: when each
 * perform started, and what the worker did to get there.
 */
export interface RateLimitResult {
  readonly jobs: number
  /** Each perform's start, `Date.now()` as perform began, in the order they came. */
  readonly startsMs: ReadonlyArray<number>
  /** From the worker's start to the last job completed (its outcome hook). */
  readonly drainMs: number
  /** The worker's start, on the same clock as `startsMs` (epoch ms). */
  readonly workerStartMs: number
  /** Attempts reported, by kind: every claim of a job ends in one (`Completed`, `Deferred`, …). */
  readonly results: number
  /** `Deferred` results whose lease name is the rate limit's (`rate:…`), and those on the key's lease. */
  readonly rateDeferrals: number
  readonly keyDeferrals: number
  /** The most times one job was deferred. */
  readonly maxDeferralsOfOneJob: number
  /**
   * For each job deferred at least once, how much later than its last deferral's `retryAt` its
   * perform started (ms; negative: before it).
   */
  readonly lateMs: ReadonlyArray<number>
  /** Statements sent from the worker's start to the last completion, in a second drain over the counting client. */
  readonly statements?: number
}

/** Enqueue-to-start latencies, one per job, in milliseconds (warm-up jobs excluded). */
export interface LatencyResult {
  readonly samplesMs: ReadonlyArray<number>
}

/**
 * Enqueue-to-start latencies of jobs enqueued by another process (from the `sentAt` in their
 * payload, `epochNow()` of ../protocol.ts), and the statements per second the idle worker sent
 * before the first of them.
 */
export interface CrossLatencyResult {
  readonly samplesMs: ReadonlyArray<number>
  readonly idleStatementsPerSec: number
}

/** Starts the enqueuing process (the child again, with ENQUEUER_FLAG) and resolves when it exits. */
export type StartEnqueuer = () => Promise<void>

/** Statements sent to the database for `jobs` completed jobs (enqueue excluded). */
export interface RoundTripsResult {
  readonly jobs: number
  readonly statements: number
}

/**
 * 10 (leasehold only). The Effect runtime's steps per job of scenario 1's and 2's drains, and per
 * cycle of scenario 4 (an enqueue to its outcome), counted by a Supervisor (bench/lib/steps.ts).
 */
export interface StepsResult {
  readonly plainPerJob: number
  readonly exclusivePerJob: number
  readonly cyclePerJob: number
}

/** A job system under benchmark. A driver implements the scenarios it has. */
export interface JobSystemDriver {
  /** 1 and 7. `n` no-op jobs enqueued up front, then drained with `concurrency`. */
  readonly throughput?: (url: string, n: number, concurrency: number, hooks: DrainHooks) => Promise<DrainResult>
  /** 2. The same, each job exclusive on a concurrency key of its own. */
  readonly exclusiveThroughput?: (
    url: string,
    n: number,
    concurrency: number,
    hooks: DrainHooks
  ) => Promise<DrainResult>
  /** 3. `n` jobs on one key, each sleeping `sleepMs`, with `workers` workers (or concurrency). */
  readonly hotKey?: (url: string, n: number, sleepMs: number, workers: number) => Promise<HotKeyResult>
  /**
   * 3b. `n` no-op jobs on one key with a rate limit of `limit` starts per `periodMs`, all due at
   * once, drained by one worker with `concurrency`.
   */
  readonly rateLimit?: (
    url: string,
    n: number,
    concurrency: number,
    limit: number,
    periodMs: number
  ) => Promise<RateLimitResult>
  /** 4. Single jobs enqueued one at a time on an idle worker: `samples` enqueue-to-start latencies. */
  readonly latency?: (url: string, samples: number) => Promise<LatencyResult>
  /**
   * 4b. An idle worker at its default settings; after its idle statements are counted,
   * `startEnqueuer` runs `enqueueTimed` in another process, and the worker measures each job's
   * latency from its payload's `sentAt`. Warm-up jobs (CROSS_WARMUP) are not returned.
   */
  readonly crossLatency?: (url: string, samples: number, startEnqueuer: StartEnqueuer) => Promise<CrossLatencyResult>
  /** 4b, the other process: `samples` + CROSS_WARMUP jobs with `{ i, sentAt }`, one at a time, CROSS_GAP_MS apart. */
  readonly enqueueTimed?: (url: string, samples: number) => Promise<void>
  /** 6. Statements per completed job, plain or exclusive, counted through a wrapped SqlClient. */
  readonly roundTrips?: (url: string, n: number, exclusive: boolean) => Promise<RoundTripsResult>
  /**
   * 9. `n` jobs (payload `{ i }`) enqueued by one batch call from the client into empty tables:
   * `ms` from the call to its return, the jobs counted in the database afterwards.
   */
  readonly enqueueBatch?: (url: string, n: number) => Promise<DrainResult>
  /** 10. `n` jobs per drain with `concurrency`, and `samples` cycles (see `StepsResult`). */
  readonly steps?: (url: string, n: number, concurrency: number, samples: number) => Promise<StepsResult>
}
