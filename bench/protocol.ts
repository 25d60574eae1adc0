/** What the orchestrator (`bench/run.ts`) and a child (`bench/child.ts`) pass each other. */

export type ScenarioId =
  | "throughput"
  | "scale5k"
  | "scale100k"
  | "bigtable"
  | "bigfuture"
  | "exclusive"
  | "hotkey"
  | "ratelimit"
  | "latency"
  | "crosslatency"
  | "leaselock"
  | "roundtrips"
  | "dashboard"
  | "enqueue"
  | "steps"
export type SystemId =
  | "leasehold-pg"
  | "leasehold-mariadb"
  | "leasehold-sqlite"
  | "leasehold-galera-one"
  | "leasehold-galera"
  | "graphile-worker"
  | "pg-boss"
  | "raw-pg"
  | "pg-advisory"

export interface ChildSpec {
  readonly scenario: ScenarioId
  readonly system: SystemId
  readonly url: string
  readonly params: Readonly<Record<string, number>>
}

/**
 * A child's figures, and, for a scenario that the orchestrator summarises itself (the rate limit's
 * sliding windows), the raw values it needs, by name (`series`).
 */
export type ChildResult =
  | {
    readonly status: "ok"
    readonly metrics: Readonly<Record<string, number>>
    readonly series?: Readonly<Record<string, ReadonlyArray<number>>>
  }
  | { readonly status: "error"; readonly message: string }

export const RESULT_PREFIX = "@@BENCH_RESULT "

/** pg-boss settings (the issue's "10 workers, batch 50"; the polling interval is pg-boss 10's minimum). */
export const PG_BOSS_BATCH_SIZE = 50
export const PG_BOSS_POLLING_INTERVAL_SECONDS = 0.5

/** The argument that makes a child the enqueuing process of the cross-process latency scenario. */
export const ENQUEUER_FLAG = "--enqueue"

/** A job's enqueue time in a payload, comparable across processes on one machine (epoch ms, sub-ms). */
export const epochNow = (): number => performance.timeOrigin + performance.now()

/** The cross-process enqueuer's pace: a random gap in this range before each job (ms). */
export const CROSS_GAP_MS = [150, 450] as const

/** Jobs the cross-process scenario enqueues before those it measures. */
export const CROSS_WARMUP = 5
