/**
 * The SQL JobStore's reads and administration: jobs by id or filter, counts and queue depths,
 * where claims stand, dead jobs retried or discarded, cancelling, purging finished jobs, the
 * hosts table, and the record of lost leases.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Option } from "effect"
import type { JobStatus } from "../../../core/jobs.ts"
import { decodeEpochMs } from "../../../core/lease.ts"
import type { Claim, ClaimState } from "../../../core/model.ts"
import { claimStateOf } from "../../../core/transitions.ts"
import type { JobStoreAdminApi, JobStoreApi } from "../../../ports/JobStore.ts"
import { makeBatcher } from "../batching.ts"
import { decodeHostRow, decodeJobRow, decodeLostLeaseRow, int } from "../decode.ts"
import { retryTransient } from "../retry.ts"
import type { StoreRunner } from "./runner.ts"

/** The parts of the JobStoreApi these reads and admin writes supply. */
export type AdminApi = JobStoreAdminApi

/** The SQL JobStore's reads and administration over `runner`. */
export const makeAdmin = (runner: StoreRunner): AdminApi => {
  const { changed, dialect, first, guardedWrite, jobs, rows, statements, write } = runner

  // Claims checked at the same time (runners starting claimed jobs) are read in one SELECT.
  const claimState = makeBatcher<Claim, ClaimState, SqlError>(64, (claims) =>
    Effect.map(
      rows(statements.claimsOf([...new Set(claims.map((c) => c.id))])),
      (found) => {
        const byId = new Map(found.map((r) => [String(r.id), r]))
        return claims.map((c) => {
          const r = byId.get(c.id)
          const row = r === undefined
            ? undefined
            : {
              status: String(r.status) as JobStatus,
              claimToken: r.claim_token == null ? null : String(r.claim_token)
            }
          return claimStateOf(row, c.token)
        })
      }
    ))

  return {
    get: (id) => first(statements.byId(id), decodeJobRow),
    list: (filter) => jobs(statements.list(filter)),
    counts: Effect.map(
      rows(statements.counts),
      (r) => r.map((x) => ({ queue: String(x.queue), status: String(x.status) as JobStatus, count: int(x.n) }))
    ),
    queueDepths: (now) =>
      Effect.map(
        rows(statements.queueDepths(now)),
        (r) => r.map((x) => ({ queue: String(x.queue), due: int(x.n), oldestRunAt: decodeEpochMs(x.oldest) }))
      ),
    claimState,
    retryDead: (id, now) => guardedWrite("retry dead", statements.retryDead(id, now)),
    retryDeadWhere: (filter, now, limit) =>
      retryTransient(dialect, "retry dead", write(statements.retryDeadWhere(filter, now, limit))),
    discardDeadWhere: (filter, limit) =>
      retryTransient(dialect, "discard dead", write(statements.discardDeadWhere(filter, limit))),
    cancel: (filter, now) => retryTransient(dialect, "cancel", write(statements.cancel(filter, now))),
    purge: (status, before, limit) => retryTransient(dialect, "purge", write(statements.purge(status, before, limit))),
    pruneHosts: (seenBefore, now) =>
      retryTransient(dialect, "prune hosts", changed(statements.pruneHosts(seenBefore, now))),
    touchHost: (host, now, fields) => Effect.asVoid(changed(statements.upsertHost(host, now, fields))),
    getHost: (host) => first(statements.hostByName(host), decodeHostRow),
    listHosts: Effect.map(rows(statements.listHosts), (r) => r.map(decodeHostRow)),
    drain: (host, now, expiresAt) =>
      Effect.zipRight(
        changed(statements.ensureHost(host, now)),
        Effect.asVoid(changed(statements.drain(host, now, expiresAt)))
      ),
    resume: (host, now) =>
      Effect.zipRight(changed(statements.ensureHost(host, now)), Effect.asVoid(changed(statements.resume(host, now)))),
    recordLostLease: (row) =>
      retryTransient(dialect, "record lost lease", Effect.asVoid(changed(statements.insertLostLease(row)))),
    lostLeases: (limit) => Effect.map(rows(statements.recentLostLeases(limit)), (r) => r.map(decodeLostLeaseRow)),
    // The cut is the older of the age and the count cut-offs' rows: whichever keeps fewer.
    pruneLostLeases: (before, keep) =>
      Effect.gen(function*() {
        const cut = yield* first(statements.lostLeaseCut(keep), (r) => decodeEpochMs(r.lost_at))
        const at = Math.max(before ?? Number.NEGATIVE_INFINITY, Option.getOrElse(cut, () => Number.NEGATIVE_INFINITY))
        return at === Number.NEGATIVE_INFINITY
          ? 0
          : yield* retryTransient(dialect, "prune lost leases", write(statements.pruneLostLeases(at)))
      })
  }
}
