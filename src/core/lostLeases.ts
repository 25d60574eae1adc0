/**
 * Lost leases (docs/behaviour.md §8, "Lost"): a run whose lease was taken over before it ended
 * may have overlapped another run. Besides the warning and the `leasehold_leases_lost_total`
 * counter, the worker keeps a record of each (migration 10's `lost_leases` table), so the
 * dashboard can say which runs lost one. The record is bounded: retention deletes records older
 * than its `lostLeases` window and all but the newest `MAX_LOST_LEASES`.
 */

/**
 * When the loss was found: `ended` when the run ended (its lease's release found another
 * owner), `timed out` when the run timed out and its lease had already changed hands.
 */
export type LostLeaseDetected = "ended" | "timed out"

/** One lost lease and the run it belonged to. Times are epoch ms. */
export interface LostLeaseRow {
  readonly id: string
  readonly leaseName: string
  readonly jobId: string
  readonly jobName: string
  /** The job's attempt that held it. */
  readonly attempt: number
  /** The host that ran the attempt. */
  readonly host: string | null
  /** The fencing token of the attempt's acquisition. */
  readonly fencingToken: bigint | null
  /** Who held the lease when the loss was found (its claim token), or null: nobody. */
  readonly holder: string | null
  readonly lostAt: number
  readonly detected: LostLeaseDetected
}

/** How many lost-lease records retention keeps at most (the newest). */
export const MAX_LOST_LEASES = 1000

/** How many the dashboard's leases page shows. */
export const RECENT_LOST_LEASES = 50
