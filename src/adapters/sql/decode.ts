/** Rows as the drivers return them (BIGINT as string, number or bigint), decoded to the domain's. */
import { decodeHistory } from "../../core/history.ts"
import { decodeEpochMs, type LeaseRow } from "../../core/lease.ts"
import type { JobStatus } from "../../core/jobs.ts"
import type { HostRow, JobRow, UniqueUntil } from "../../core/model.ts"
import type { LimitRow, LimitScope } from "../../core/limits.ts"
import type { LostLeaseDetected, LostLeaseRow } from "../../core/lostLeases.ts"

/** A count or INT column as a number (drivers may return a string or a bigint). */
export const int = (v: unknown): number => Number(v)
const intOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v))
const msOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : decodeEpochMs(v))
const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v))

/** A unique-key scope from `unique_until_finished`; NULL (a row written before migration 6) is "purged". */
export const decodeUniqueUntil = (v: unknown): UniqueUntil => (Number(v) === 1 ? "finished" : "purged")

/** Decodes a job row from any driver (BIGINT as string, number or bigint). */
export const decodeJobRow = (r: Record<string, unknown>): JobRow => ({
  id: String(r.id),
  name: String(r.name),
  queue: String(r.queue),
  payload: String(r.payload),
  priority: int(r.priority),
  status: String(r.status) as JobStatus,
  attempts: int(r.attempts),
  maxRetries: int(r.max_retries),
  claimTimeout: intOrNull(r.claim_timeout),
  claimToken: strOrNull(r.claim_token),
  claimedBy: strOrNull(r.claimed_by),
  uniqueKey: String(r.unique_key),
  uniqueUntil: decodeUniqueUntil(r.unique_until_finished),
  leaseName: strOrNull(r.lease_name),
  heartbeatAt: msOrNull(r.heartbeat_at),
  graceMs: intOrNull(r.grace_ms),
  staleAt: msOrNull(r.stale_at),
  lastError: strOrNull(r.last_error),
  runAt: decodeEpochMs(r.run_at),
  completedAt: msOrNull(r.completed_at),
  failedAt: msOrNull(r.failed_at),
  createdAt: decodeEpochMs(r.created_at),
  updatedAt: decodeEpochMs(r.updated_at),
  history: decodeHistory(r.history),
  traceContext: strOrNull(r.trace_context),
  claimLease: strOrNull(r.claim_lease)
})

/**
 * Decodes a row a claim returned: a job row, and the lease the claim took for its attempt where
 * it took one (`lease_token`, `lease_expires`; src/adapters/sql/dialect.ts `ClaimLeaseStrategy`).
 */
export const decodeClaimedRow = (r: Record<string, unknown>): JobRow => {
  const row = decodeJobRow(r)
  if (r.lease_token === null || r.lease_token === undefined || row.claimLease === null) return row
  return {
    ...row,
    leaseTaken: {
      name: row.claimLease,
      expiresAt: decodeEpochMs(r.lease_expires),
      fencingToken: BigInt(r.lease_token as string | number | bigint)
    }
  }
}

/** Decodes a host row. */
export const decodeHostRow = (r: Record<string, unknown>): HostRow => ({
  host: String(r.host),
  lastSeenAt: decodeEpochMs(r.last_seen_at),
  startedAt: decodeEpochMs(r.started_at),
  running: int(r.running),
  maxConcurrent: int(r.max_concurrent),
  draining: int(r.draining) !== 0,
  drainExpiresAt: msOrNull(r.drain_expires_at),
  codeVersion: strOrNull(r.code_version)
})

/** Decodes a lease row from any driver (BIGINT as string, number or bigint). */
export const decodeLeaseRow = (row: Record<string, unknown>): LeaseRow => ({
  name: String(row.lockname),
  owner: String(row.lockowner),
  host: row.lockhost === null || row.lockhost === undefined ? null : String(row.lockhost),
  acquiredAt: decodeEpochMs(row.acquiredat),
  expiresAt: decodeEpochMs(row.expiresat)
})

/** Decodes a lost-lease row (migration 10) from any driver (BIGINT as string, number or bigint). */
export const decodeLostLeaseRow = (r: Record<string, unknown>): LostLeaseRow => ({
  id: String(r.id),
  leaseName: String(r.lease_name),
  jobId: String(r.job_id),
  jobName: String(r.job_name),
  attempt: int(r.attempt),
  host: strOrNull(r.host),
  fencingToken: r.fencing_token === null || r.fencing_token === undefined ? null : BigInt(String(r.fencing_token)),
  holder: strOrNull(r.holder),
  lostAt: decodeEpochMs(r.lost_at),
  detected: String(r.detected) as LostLeaseDetected
})

/** Decodes a limits row (migration 12) from any driver (BIGINT as string, number or bigint). */
export const decodeLimitRow = (r: Record<string, unknown>): LimitRow => ({
  scope: String(r.scope) as LimitScope,
  target: String(r.target),
  concurrency: intOrNull(r.concurrency),
  typeCap: intOrNull(r.type_cap),
  rateLimit: intOrNull(r.rate_limit),
  ratePeriodMs: r.rate_period_ms === null || r.rate_period_ms === undefined ? null : decodeEpochMs(r.rate_period_ms),
  paused: Number(r.paused) === 1,
  pausedBy: strOrNull(r.paused_by),
  pausedAt: r.paused_at === null || r.paused_at === undefined ? null : decodeEpochMs(r.paused_at),
  updatedAt: decodeEpochMs(r.updated_at)
})
