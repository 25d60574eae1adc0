/**
 * The job and host statements that read the same on every database, for one dialect and one
 * table prefix; whatever differs comes from the dialect folder's `JobDialect`.
 */
import type { ReapDecision } from "../../core/jobs.ts"
import { leaseWindowMs } from "../../core/lease.ts"
import type {
  CancelFilter,
  Claim,
  ClaimInput,
  DeadJobFilter,
  JobFilter,
  JobRow,
  LeaseTransfer,
  NewJob,
  Outcome
} from "../../core/model.ts"
import type { LostLeaseRow } from "../../core/lostLeases.ts"
import { type TableNames, tokensTable } from "../../core/tables.ts"
import { attemptOutcomeOf, outcomeError, REAPED_DEAD, REAPED_RETRY } from "../../core/transitions.ts"
import { HOST_COLUMNS, JOB_COLUMNS } from "./columns.ts"
import type { ClaimParts, CompleteLeasedParts, Dialect, FinishParts, HandBackParts, JobSqlContext } from "./dialect.ts"
import { claimIndexName } from "./schemaNames.ts"
import { checkIdentifier, joined, literalInt, RawSql, type Statement, SqlList, sqlFor } from "./statement.ts"

const FAILED_AT = new RawSql("failed_at")
const COMPLETED_AT = new RawSql("completed_at")

/** The job and host statements for one dialect and one table prefix. */
export const jobStatements = (dialect: Dialect, tables: TableNames) => {
  const sql = sqlFor(dialect.syntax)
  const jobs = new RawSql(dialect.syntax.quote(checkIdentifier(tables.jobs)))
  const hosts = new RawSql(dialect.syntax.quote(checkIdentifier(tables.hosts)))
  const jobLocks = new RawSql(dialect.syntax.quote(checkIdentifier(tables.jobLocks)))
  const lostLeases = new RawSql(dialect.syntax.quote(checkIdentifier(tables.lostLeases)))
  const c: JobSqlContext = {
    sql,
    jobs,
    hosts,
    jobLocks,
    jobLockTokens: new RawSql(dialect.syntax.quote(tokensTable(tables.jobLocks))),
    claimIndex: new RawSql(dialect.syntax.quote(claimIndexName(tables.jobs)))
  }
  const d = dialect.jobs
  const cols = JOB_COLUMNS
  const empty = sql``

  const countRunning = (host: string) =>
    sql`SELECT COUNT(*) AS n FROM ${jobs} WHERE claimed_by = ${host} AND status = 'processing'`
  // Pending, due, in the worker's queues; with `perKey`, of no key it skips.
  const due = (input: ClaimInput) => {
    const skip = input.perKey?.skip ?? []
    const only = input.perKey?.only
    const skipped = skip.length === 0 ?
      empty :
      sql` AND (claim_lease IS NULL OR NOT (${
        joined(skip.map((k) => sql`(claim_lease = ${k.lease} AND priority <= ${k.priority})`), " OR ")
      }))`
    const keys = only === undefined ? skipped : sql` AND claim_lease IN (${new SqlList(only)})${skipped}`
    return input.queues === undefined
      ? sql`status = 'pending' AND run_at <= ${input.now}${keys}`
      : sql`status = 'pending' AND run_at <= ${input.now} AND queue IN (${new SqlList(input.queues)})${keys}`
  }
  // A fresh token, this host, attempts + 1, no heartbeat, waiting on no lease (core's
  // applyClaim); with a cap, the timeout and the grace lowered to the cap's (core's
  // cappedTimeout, cappedGraceMs: one comparison each; the windows come from src/core/lease.ts);
  // and the stale deadline now + grace. A row without a grace keeps none and gets no deadline
  // (NULL + now is NULL): core's isStale works it out.
  const claimSet = (input: ClaimInput, token: unknown = input.claimToken) => {
    const common =
      sql`status = 'processing', attempts = attempts + 1, claim_token = ${token}, claimed_by = ${input.host}, heartbeat_at = NULL, lease_name = NULL, updated_at = ${input.now}`
    if (input.timeoutCap === undefined) return sql`${common}, stale_at = ${input.now} + grace_ms`
    const cap = input.timeoutCap
    const capGrace = leaseWindowMs(cap)
    const grace = sql`CASE WHEN grace_ms > ${capGrace} THEN ${capGrace} ELSE grace_ms END`
    // MySQL assigns left to right (stale_at sees the new grace_ms), the others all at once: the
    // capped grace is the same either way.
    return sql`${common}, claim_timeout = CASE WHEN claim_timeout IS NULL OR claim_timeout > ${cap} THEN ${cap} ELSE claim_timeout END, grace_ms = ${grace}, stale_at = ${input.now} + ${grace}`
  }
  // Past the deadline the claim or the last heartbeat wrote (core's isStale; rows without one
  // are read apart and judged in core).
  const pastDeadline = (now: number) => sql`status = 'processing' AND stale_at < ${now}`
  // The ending attempt's record appended to the row's history (core's applyOutcome, applyReap).
  const ended = (now: number, o: Outcome | ReapDecision) =>
    sql`history = ${d.historyAppended(c, { endedAt: now, outcome: attemptOutcomeOf(o), error: outcomeError(o) })}`
  const outcome = (id: string, token: string, now: number, o: Outcome): Statement => {
    const ours = sql`WHERE id = ${id} AND status = 'processing' AND claim_token = ${token}`
    const h = ended(now, o)
    switch (o._tag) {
      case "Complete":
        return sql`UPDATE ${jobs} SET ${h}, status = 'completed', completed_at = ${now}, stale_at = NULL, updated_at = ${now} ${ours}`
      case "Retry":
        return sql`UPDATE ${jobs} SET ${h}, status = 'pending', run_at = ${o.runAt}, last_error = ${o.error}, claim_token = NULL, stale_at = NULL, updated_at = ${now} ${ours}`
      case "Kill":
        return sql`UPDATE ${jobs} SET ${h}, status = 'failed', failed_at = ${now}, last_error = ${o.error}, stale_at = NULL, updated_at = ${now} ${ours}`
    }
  }
  // Dead rows matching a filter (core's matchesDead).
  const dead = (f: DeadJobFilter) =>
    sql`status IN (${new SqlList(f.statuses)}) AND failed_at <= ${f.diedBefore}${
      f.ids === undefined ? empty : sql` AND id IN (${new SqlList(f.ids)})`
    }${f.name === undefined ? empty : sql` AND name = ${f.name}`}${
      f.queue === undefined ? empty : sql` AND queue = ${f.queue}`
    }`
  // Up to `limit` rows matching `where`, oldest `by` first, picked through a derived table: MySQL
  // refuses a subquery on the table it updates or deletes from, but not one it had to
  // materialise (the LIMIT makes it so); the same text runs everywhere. The outer statement
  // checks `where` again on each row it changes.
  const picked = (where: Statement, by: RawSql, limit: number) =>
    sql`id IN (SELECT id FROM (SELECT id FROM ${jobs} WHERE ${where} ORDER BY ${by}, id LIMIT ${
      literalInt(limit)
    }) AS picked) AND ${where}`
  // A claim undone (core's applyGiveBack), only by its own attempt and only with an attempt to
  // give back (core's mayDefer): a deferral and a give-back both end so.
  const givenBack = (now: number) =>
    sql`status = 'pending', attempts = attempts - 1, claim_token = NULL, stale_at = NULL, updated_at = ${now}`
  const mayGiveBack = (id: string, token: string) =>
    sql`WHERE id = ${id} AND status = 'processing' AND claim_token = ${token} AND attempts > 0`
  // Several claims given back at once, each fenced on its own token (as `mayGiveBack`).
  const giveBackMany = (claims: ReadonlyArray<Claim>, now: number) =>
    sql`UPDATE ${jobs} SET ${givenBack(now)} WHERE status = 'processing' AND attempts > 0 AND (${
      joined(claims.map((c) => sql`(id = ${c.id} AND claim_token = ${c.token})`), " OR ")
    })`
  // The best waiter (priority DESC, then oldest: core's handOffOrder) on each of the leases
  // `names` (a list, or a subquery) made due now in its place (core's applyHandOff), in one
  // statement on every database. The window function also keeps MySQL from merging the derived
  // table, which it could not update from; CASE is the portable LEAST/MIN.
  const handOffEach = (names: unknown, now: number, except?: SqlList | Statement) =>
    sql`UPDATE ${jobs} SET run_at = CASE WHEN created_at < run_at AND created_at < ${now} THEN created_at WHEN run_at > ${now} THEN ${now} ELSE run_at END WHERE id IN (SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY lease_name ORDER BY priority DESC, created_at ASC, id ASC) AS turn FROM ${jobs} WHERE lease_name IN (${names}) AND status = 'pending'${
      except === undefined ? empty : sql` AND id NOT IN (${except})`
    }) waiting WHERE turn = 1)`
  // The row the reaper read, still stale: past its deadline, or (without one) not seen since.
  const reapGuard = (row: JobRow, now: number) =>
    row.staleAt !== null
      ? sql`WHERE id = ${row.id} AND attempts = ${row.attempts} AND ${pastDeadline(now)}`
      : sql`WHERE id = ${row.id} AND attempts = ${row.attempts} AND status = 'processing' AND stale_at IS NULL AND COALESCE(heartbeat_at, updated_at) = ${
        row.heartbeatAt ?? row.updatedAt
      }`

  /**
   * Completes several attempts at once, each fenced on its own token; where the database can,
   * returns the id and token of each row it completed (two attempts of one job may meet here).
   */
  const completeBatch = (items: ReadonlyArray<{ readonly id: string; readonly token: string }>, now: number) =>
    completeWhere(now, joined(items.map((i) => sql`(id = ${i.id} AND claim_token = ${i.token})`), " OR "))
  // The completion of the processing attempts `which` (a condition) names.
  const completeWhere = (now: number, which: Statement) =>
    sql`UPDATE ${jobs} SET ${
      ended(now, { _tag: "Complete" })
    }, status = 'completed', completed_at = ${now}, stale_at = NULL, updated_at = ${now} WHERE status = 'processing' AND (${which})${
      d.updateReports === "rows" ? sql` RETURNING id, claim_token` : empty
    }`

  // A dead job put back (core's applyRetryDead).
  const revived = (now: number) =>
    sql`status = 'pending', attempts = 0, run_at = ${now}, claim_token = NULL, failed_at = NULL, updated_at = ${now}`

  return {
    /** The quoted tables and builder, for the dialect's own strategy statements. */
    context: c,
    insert: (job: NewJob) => d.insert(c, job),
    insertMany: (many: ReadonlyArray<NewJob>) => d.insertMany(c, many),
    /** The jobs holding these unique keys, as core's keyFreed needs them, read past any snapshot. */
    keyHolders: (keys: ReadonlyArray<string>) =>
      sql`SELECT id, unique_key, status, unique_until_finished FROM ${jobs} WHERE unique_key IN (${new SqlList(
        keys
      )})${d.latestRead}`,
    /** Frees the keys of these jobs where core's keyFreed holds (its applyFreeKey). */
    freeKeys: (ids: ReadonlyArray<string>) =>
      sql`UPDATE ${jobs} SET unique_key = id WHERE id IN (${new SqlList(
        ids
      )}) AND unique_until_finished = 1 AND status NOT IN ('pending', 'processing')`,
    byId: (id: string) => sql`SELECT ${cols} FROM ${jobs} WHERE id = ${id}`,
    /**
     * What a claim of up to `limit` rows writes and which rows it may take. `token`: the claim
     * token (an SQL expression for a fresh one per row in a batch); `cap`: a host cap counted
     * in the statement itself (the `countInClaim` strategy).
     */
    claimParts: (input: ClaimInput, limit: number, token: unknown = input.claimToken, cap?: number): ClaimParts => ({
      set: claimSet(input, token),
      due: due(input),
      capped: cap === undefined ? empty : sql` AND (${countRunning(input.host)}) < ${cap}`,
      limit: literalInt(limit),
      onePerKey: input.perKey !== undefined && limit > 1
    }),
    due,
    /** Claims the locked rows `ids` with one token each (MySQL's batch claim). */
    claimByIds: (input: ClaimInput, rows: ReadonlyArray<{ readonly id: string; readonly token: string }>) =>
      sql`UPDATE ${jobs} SET ${
        claimSet(input, sql`CASE ${joined(rows.map((r) => sql`WHEN id = ${r.id} THEN ${r.token}`), " ")} END`)
      } WHERE id IN (${new SqlList(rows.map((r) => r.id))}) AND status = 'pending'`,
    completeBatch,
    /** The pieces of a one-statement completion of several leased attempts (the `oneStatement` finish strategy). */
    completeLeasedParts: (
      items: ReadonlyArray<{ readonly id: string; readonly token: string; readonly lease: string }>,
      now: number
    ): CompleteLeasedParts => ({
      ids: items.map((i) => i.id),
      tokens: items.map((i) => i.token),
      leases: items.map((i) => i.lease),
      done: (which) => completeWhere(now, which),
      // Never to one of these jobs: an attempt fenced after its job was reaped still owns its
      // lease, and its job, pending again, may wait on it (finishAlone's `id <> …`).
      handOff: (names, except) => handOffEach(names, now, except)
    }),
    /** The id and token of each of `ids` that is completed, to tell which of a batch were ours. */
    completedOf: (ids: ReadonlyArray<string>) =>
      sql`SELECT id, claim_token FROM ${jobs} WHERE status = 'completed' AND id IN (${new SqlList(ids)})`,
    countRunning,
    ensureHost: (host: string, now: number) => d.ensureHost(c, host, now),
    outcome,
    /** Releases an attempt's job lease (owner-fenced). */
    /**
     * Passes our own lease (owner-fenced) to `to.owner` from `now` until `to.expiresAt`; with
     * `to.unlessWaiting`, only while no job other than `exceptId` waits on it asleep (core's
     * FinishInput `transferTo`); with `counterHolds`, only while the name's token counter holds
     * that token (bumped just before, outside a transaction: the lease dialect's `bumpThenUpsert`).
     */
    transferLease: (
      leaseName: string,
      owner: string,
      now: number,
      to: LeaseTransfer,
      exceptId: string,
      counterHolds?: bigint
    ) =>
      sql`UPDATE ${jobLocks} SET lockowner = ${to.owner}, lockhost = ${to.host}, acquiredat = ${now}, expiresat = ${to.expiresAt} WHERE lockname = ${leaseName} AND lockowner = ${owner}${
        to.unlessWaiting === true
          ? sql` AND NOT EXISTS (SELECT 1 FROM ${jobs} WHERE lease_name = ${leaseName} AND status = 'pending' AND run_at > ${now} AND id <> ${exceptId})`
          : empty
      }${
        counterHolds === undefined
          ? empty
          : sql` AND (SELECT token FROM ${c.jobLockTokens} WHERE lockname = ${leaseName}) = ${counterHolds}`
      }`,
    releaseLease: (leaseName: string, owner: string) =>
      sql`DELETE FROM ${jobLocks} WHERE lockname = ${leaseName} AND lockowner = ${owner}`,
    /**
     * `releaseLease` that returns the deleted row's `waiting`: whether a job other than
     * `exceptId` waits on the lease (pending with that `lease_name`), i.e. whether a hand-off
     * has anyone to wake. Only where a DELETE has RETURNING (`updateReports: "rows"`).
     */
    releaseLeaseReportingWaiter: (leaseName: string, owner: string, exceptId: string) =>
      sql`DELETE FROM ${jobLocks} WHERE lockname = ${leaseName} AND lockowner = ${owner} RETURNING EXISTS (SELECT 1 FROM ${jobs} WHERE lease_name = ${leaseName} AND status = 'pending' AND id <> ${exceptId}) AS waiting`,
    /** The pieces of a one-statement finish (the `oneStatement` finish strategy). */
    finishParts: (
      id: string,
      token: string,
      now: number,
      o: Outcome,
      leaseName: string,
      handOff: boolean
    ): FinishParts => ({
      id,
      outcome: outcome(id, token, now, o),
      leaseName,
      owner: token,
      now,
      handOff
    }),
    defer: (id: string, token: string, now: number, runAt: number, leaseName: string) =>
      sql`UPDATE ${jobs} SET ${givenBack(now)}, run_at = ${runAt}, lease_name = ${leaseName} ${mayGiveBack(id, token)}`,
    giveBack: (id: string, token: string, now: number) =>
      sql`UPDATE ${jobs} SET ${givenBack(now)} ${mayGiveBack(id, token)}`,
    giveBackMany,
    handOffEach,
    /** The leases these claim tokens own. */
    leasesOwnedBy: (tokens: ReadonlyArray<string>) =>
      sql`SELECT lockname FROM ${jobLocks} WHERE lockowner IN (${new SqlList(tokens)})`,
    /** Releases every lease these claim tokens own; with `returning`, says which. */
    releaseOwnedBy: (tokens: ReadonlyArray<string>, returning: boolean) =>
      sql`DELETE FROM ${jobLocks} WHERE lockowner IN (${new SqlList(tokens)})${
        returning ? sql` RETURNING lockname` : empty
      }`,
    /** The pieces of a one-statement hand-back (the `oneStatement` finish strategy). */
    handBackParts: (claims: ReadonlyArray<Claim>, now: number): HandBackParts => ({
      tokens: new SqlList(claims.map((c) => c.token)),
      handOff: (names) => handOffEach(names, now),
      giveBack: giveBackMany(claims, now)
    }),
    heartbeat: (id: string, token: string, now: number, staleAt: number) =>
      sql`UPDATE ${jobs} SET heartbeat_at = ${now}, stale_at = ${staleAt} WHERE id = ${id} AND status = 'processing' AND claim_token = ${token}`,
    stale: (now: number, limit: number) =>
      sql`SELECT ${cols} FROM ${jobs} WHERE ${pastDeadline(now)} ORDER BY updated_at ASC LIMIT ${literalInt(limit)}`,
    /** Processing rows with no deadline (claimed without a known grace), oldest update first. */
    withoutDeadline: (limit: number) =>
      sql`SELECT ${cols} FROM ${jobs} WHERE status = 'processing' AND stale_at IS NULL ORDER BY updated_at ASC LIMIT ${
        literalInt(limit)
      }`,
    reap: (
      row: JobRow,
      decision: ReapDecision,
      now: number
    ) => {
      const guard = reapGuard(row, now)
      const h = ended(now, decision)
      switch (decision._tag) {
        case "Retry":
          return sql`UPDATE ${jobs} SET ${h}, status = 'pending', run_at = ${decision.runAt}, claim_token = NULL, last_error = ${REAPED_RETRY}, stale_at = NULL, updated_at = ${now} ${guard}`
        case "Dead":
          return sql`UPDATE ${jobs} SET ${h}, status = 'failed', failed_at = ${now}, claim_token = NULL, last_error = ${REAPED_DEAD}, stale_at = NULL, updated_at = ${now} ${guard}`
        case "Interrupted":
          return sql`UPDATE ${jobs} SET ${h}, status = 'interrupted', failed_at = ${now}, claim_token = NULL, last_error = ${decision.message}, stale_at = NULL, updated_at = ${now} ${guard}`
      }
    },
    handOff: (leaseName: string, now: number, exceptId = "") => d.handOff(c, leaseName, now, exceptId),
    list: (f: JobFilter) =>
      sql`SELECT ${cols} FROM ${jobs} WHERE 1 = 1${f.status === undefined ? empty : sql` AND status = ${f.status}`}${
        f.queue === undefined ? empty : sql` AND queue = ${f.queue}`
      }${f.name === undefined ? empty : sql` AND name = ${f.name}`} ORDER BY created_at DESC, id ASC LIMIT ${
        literalInt(f.limit)
      }`,
    counts: sql`SELECT queue, status, COUNT(*) AS n FROM ${jobs} GROUP BY queue, status ORDER BY queue, status`,
    queueDepths: (now: number) =>
      sql`SELECT queue, COUNT(*) AS n, MIN(run_at) AS oldest FROM ${jobs} WHERE status = 'pending' AND run_at <= ${now} GROUP BY queue ORDER BY queue`,
    retryDead: (id: string, now: number) =>
      sql`UPDATE ${jobs} SET ${revived(now)} WHERE id = ${id} AND status IN ('failed', 'interrupted')`,
    /** Up to `limit` dead jobs matching `f`, longest dead first, back to pending (core's applyRetryDead). */
    retryDeadWhere: (f: DeadJobFilter, now: number, limit: number) =>
      sql`UPDATE ${jobs} SET ${revived(now)} WHERE ${picked(dead(f), FAILED_AT, limit)}`,
    /** Deletes up to `limit` dead jobs matching `f`, longest dead first. */
    discardDeadWhere: (f: DeadJobFilter, limit: number) =>
      sql`DELETE FROM ${jobs} WHERE ${picked(dead(f), FAILED_AT, limit)}`,
    /**
     * Cancels the unfinished jobs `f` matches (core's matchesCancel, applyCancel); a processing
     * row's attempt goes into its history as cancelled (first: MySQL assigns left to right).
     */
    cancel: (f: CancelFilter, now: number) =>
      sql`UPDATE ${jobs} SET history = CASE WHEN status = 'processing' THEN ${
        d.historyAppended(c, { endedAt: now, outcome: "cancelled", error: null })
      } ELSE history END, status = 'cancelled', failed_at = ${now}, stale_at = NULL, updated_at = ${now} WHERE status IN ('pending', 'processing')${
        f.id === undefined ? empty : sql` AND id = ${f.id}`
      }${f.status === undefined ? empty : sql` AND status = ${f.status}`}${
        f.queue === undefined ? empty : sql` AND queue = ${f.queue}`
      }${f.name === undefined ? empty : sql` AND name = ${f.name}`}`,
    /** The status and token of each of `ids`, to tell where their claims stand. */
    claimsOf: (ids: ReadonlyArray<string>) =>
      sql`SELECT id, status, claim_token FROM ${jobs} WHERE id IN (${new SqlList(ids)})`,
    purge: (status: "completed" | "failed" | "interrupted" | "cancelled", before: number, limit?: number) => {
      const [where, by] = status === "completed"
        ? [sql`status = 'completed' AND completed_at < ${before}`, COMPLETED_AT]
        : [sql`status = ${status} AND failed_at < ${before}`, FAILED_AT]
      return sql`DELETE FROM ${jobs} WHERE ${limit === undefined ? where : picked(where, by, limit)}`
    },
    /** Host rows not seen since `seenBefore` and not draining at `now` (core's mayPruneHost). */
    pruneHosts: (seenBefore: number, now: number) =>
      sql`DELETE FROM ${hosts} WHERE last_seen_at < ${seenBefore} AND (draining = 0 OR (drain_expires_at IS NOT NULL AND drain_expires_at <= ${now}))`,
    upsertHost: (
      host: string,
      now: number,
      f: { readonly maxConcurrent: number; readonly codeVersion: string | null }
    ) => d.upsertHost(c, host, now, f.maxConcurrent, f.codeVersion),
    hostByName: (host: string) => sql`SELECT ${HOST_COLUMNS} FROM ${hosts} WHERE host = ${host}`,
    listHosts: sql`SELECT ${HOST_COLUMNS} FROM ${hosts} ORDER BY host`,
    drain: (host: string, now: number, expiresAt: number | null) =>
      sql`UPDATE ${hosts} SET draining = 1, drain_expires_at = ${expiresAt}, last_seen_at = ${now} WHERE host = ${host}`,
    resume: (host: string, now: number) =>
      sql`UPDATE ${hosts} SET draining = 0, drain_expires_at = NULL, last_seen_at = ${now} WHERE host = ${host}`,
    // Lost leases (migration 10); the token as text, which every database converts to its BIGINT.
    insertLostLease: (r: LostLeaseRow) =>
      sql`INSERT INTO ${lostLeases} (id, lease_name, job_id, job_name, attempt, host, fencing_token, holder, lost_at, detected) VALUES (${r.id}, ${r.leaseName}, ${r.jobId}, ${r.jobName}, ${r.attempt}, ${r.host}, ${
        r.fencingToken === null ? null : String(r.fencingToken)
      }, ${r.holder}, ${r.lostAt}, ${r.detected})`,
    recentLostLeases: (limit: number) =>
      sql`SELECT * FROM ${lostLeases} ORDER BY lost_at DESC, id DESC LIMIT ${literalInt(limit)}`,
    /** The `lost_at` of the `keep`-th newest record (none: fewer records). */
    lostLeaseCut: (keep: number) =>
      sql`SELECT lost_at FROM ${lostLeases} ORDER BY lost_at DESC LIMIT 1 OFFSET ${literalInt(keep - 1)}`,
    pruneLostLeases: (before: number) => sql`DELETE FROM ${lostLeases} WHERE lost_at < ${before}`
  }
}
