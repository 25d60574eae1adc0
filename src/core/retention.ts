/**
 * Retention rules (docs/behaviour.md §13): how long finished jobs and silent hosts are kept
 * before the worker deletes them, and how much one pass deletes.
 */

/** How long each kind of row is kept, in ms; null: kept for ever. */
export interface RetentionPolicy {
  /** Completed jobs, from `completed_at`. */
  readonly completedMs: number | null
  /** Dead jobs (failed, interrupted) and cancelled ones, from `failed_at`. */
  readonly deadMs: number | null
  /** Host rows, from `last_seen_at` (draining hosts are kept). */
  readonly hostsMs: number | null
  /** Lost-lease records, from `lost_at` (and never more than `MAX_LOST_LEASES`: src/core/lostLeases.ts). */
  readonly lostLeasesMs: number | null
}

/** The defaults: completed jobs 7 days, dead jobs 30 days, hosts an hour, lost-lease records 7 days. */
export const DEFAULT_RETENTION: RetentionPolicy = {
  completedMs: 7 * 86_400_000,
  deadMs: 30 * 86_400_000,
  hostsMs: 3_600_000,
  lostLeasesMs: 7 * 86_400_000
}

/** Rows one retention statement deletes at most, by default. */
export const DEFAULT_RETENTION_BATCH = 1000

/**
 * Statements of each kind one pass runs at most: a backlog is worked off over several passes,
 * so one pass never holds the database for long.
 */
export const MAX_RETENTION_BATCHES = 10

/** The cut-offs of a pass at `now`: rows finished (or seen) before these go; null: none go. */
export const retentionCutoffs = (p: RetentionPolicy, now: number) => ({
  completedBefore: p.completedMs === null ? null : now - p.completedMs,
  deadBefore: p.deadMs === null ? null : now - p.deadMs,
  hostsSeenBefore: p.hostsMs === null ? null : now - p.hostsMs,
  lostLeasesBefore: p.lostLeasesMs === null ? null : now - p.lostLeasesMs
})
