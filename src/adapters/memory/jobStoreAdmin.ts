/**
 * The in-memory JobStore's reads and administration: jobs by id or filter, counts and queue
 * depths, where claims stand, dead jobs retried or discarded, cancelling, purging finished jobs,
 * the hosts table, and the record of lost leases. Ordered as the SQL stores order them.
 */
import { Option } from "effect"
import { mayPruneHost } from "../../core/hosts.ts"
import type { DeadJobFilter, HostRow, JobCount, JobRow, QueueDepth } from "../../core/model.ts"
import type { LostLeaseRow } from "../../core/lostLeases.ts"
import {
  applyCancel,
  applyRetryDead,
  claimStateOf,
  deadOrder,
  isDue,
  isRetryable,
  matchesCancel,
  matchesDead
} from "../../core/transitions.ts"
import type { JobStoreAdminApi, JobStoreApi } from "../../ports/JobStore.ts"
import { type MemoryJobTables, put } from "./jobTables.ts"

/** Orders values by a text key. */
const byName = <A>(key: (a: A) => string) => (a: A, b: A) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0)

/** A host row as a drain or resume first creates it. */
const newHost = (host: string, now: number): HostRow => ({
  host,
  lastSeenAt: now,
  startedAt: now,
  running: 0,
  maxConcurrent: 0,
  draining: false,
  drainExpiresAt: null,
  codeVersion: null
})

/** The parts of the JobStoreApi these reads and admin writes supply. */
export type MemoryAdminApi = JobStoreAdminApi

/** The in-memory JobStore's reads and administration over its tables. */
export const memoryJobStoreAdmin = (
  { hostsTable, jobsTable, lostTable, update }: MemoryJobTables
): MemoryAdminApi => {
  // Newest first, as the SQL stores order them.
  const newestLost = (rows: ReadonlyMap<string, LostLeaseRow>) =>
    [...rows.values()].sort((a, b) => b.lostAt - a.lostAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))

  // Up to `limit` dead rows matching `filter`, longest dead first, each replaced by `change`
  // (or deleted when it gives undefined); how many.
  const deadWhere = (filter: DeadJobFilter, limit: number, change: (row: JobRow) => JobRow | undefined) =>
    jobsTable((rows) => {
      const taken = [...rows.values()].filter((r) => matchesDead(r, filter)).sort(deadOrder).slice(0, limit)
      const next = new Map(rows)
      for (const r of taken) {
        const changed = change(r)
        if (changed === undefined) next.delete(r.id)
        else next.set(r.id, changed)
      }
      return [taken.length, next]
    })

  const upsertHost = (host: string, now: number, change: (row: HostRow) => HostRow) =>
    hostsTable((rows) => [undefined, put(rows, host, change(rows.get(host) ?? newHost(host, now)))])

  return {
    get: (id) => jobsTable((rows) => [Option.fromNullable(rows.get(id))]),
    list: (f) =>
      jobsTable((rows) => [
        [...rows.values()]
          .filter((r) =>
            (f.status === undefined || r.status === f.status) && (f.queue === undefined || r.queue === f.queue) &&
            (f.name === undefined || r.name === f.name)
          )
          .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
          .slice(0, f.limit)
      ]),
    counts: jobsTable((rows) => {
      const counts = new Map<string, JobCount>()
      for (const r of rows.values()) {
        const key = JSON.stringify([r.queue, r.status])
        counts.set(key, { queue: r.queue, status: r.status, count: (counts.get(key)?.count ?? 0) + 1 })
      }
      return [
        [...counts.values()].sort((a, b) =>
          byName<JobCount>((c) => c.queue)(a, b) || byName<JobCount>((c) => c.status)(a, b)
        )
      ]
    }),
    queueDepths: (now) =>
      jobsTable((rows) => {
        const depths = new Map<string, QueueDepth>()
        for (const r of rows.values()) {
          if (!isDue(r, now, undefined)) continue
          const d = depths.get(r.queue)
          depths.set(r.queue, {
            queue: r.queue,
            due: (d?.due ?? 0) + 1,
            oldestRunAt: Math.min(d?.oldestRunAt ?? r.runAt, r.runAt)
          })
        }
        return [[...depths.values()].sort(byName<QueueDepth>((d) => d.queue))]
      }),
    retryDead: (id, now) => update(id, isRetryable, (r) => applyRetryDead(r, now)),
    retryDeadWhere: (filter, now, limit) => deadWhere(filter, limit, (r) => applyRetryDead(r, now)),
    discardDeadWhere: (filter, limit) => deadWhere(filter, limit, () => undefined),
    cancel: (filter, now) =>
      jobsTable((rows) => {
        const hit = [...rows.values()].filter((r) => matchesCancel(r, filter))
        if (hit.length === 0) return [0]
        const next = new Map(rows)
        for (const r of hit) next.set(r.id, applyCancel(r, now))
        return [hit.length, next]
      }),
    claimState: (claim) => jobsTable((rows) => [claimStateOf(rows.get(claim.id), claim.token)]),
    purge: (status, before, limit = Infinity) =>
      jobsTable((rows) => {
        const finished = (r: JobRow) => (status === "completed" ? r.completedAt : r.failedAt)
        const gone = [...rows.values()]
          .filter((r) => r.status === status && finished(r) !== null && finished(r)! < before)
          .sort((a, b) => finished(a)! - finished(b)! || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
          .slice(0, limit)
        const next = new Map(rows)
        for (const r of gone) next.delete(r.id)
        return [gone.length, next]
      }),
    pruneHosts: (seenBefore, now) =>
      hostsTable((rows) => {
        const gone = [...rows.values()].filter((h) => mayPruneHost(h, seenBefore, now))
        const next = new Map(rows)
        for (const h of gone) next.delete(h.host)
        return [gone.length, next]
      }),
    touchHost: (host, now, fields) =>
      upsertHost(
        host,
        now,
        (r) => ({ ...r, lastSeenAt: now, maxConcurrent: fields.maxConcurrent, codeVersion: fields.codeVersion })
      ),
    getHost: (host) => hostsTable((rows) => [Option.fromNullable(rows.get(host))]),
    listHosts: hostsTable((rows) => [[...rows.values()].sort(byName<HostRow>((h) => h.host))]),
    drain: (host, now, expiresAt) =>
      upsertHost(host, now, (r) => ({ ...r, draining: true, drainExpiresAt: expiresAt, lastSeenAt: now })),
    resume: (host, now) =>
      upsertHost(host, now, (r) => ({ ...r, draining: false, drainExpiresAt: null, lastSeenAt: now })),
    recordLostLease: (row) => lostTable((rows) => [undefined, put(rows, row.id, row)]),
    lostLeases: (limit) => lostTable((rows) => [newestLost(rows).slice(0, limit)]),
    pruneLostLeases: (before, keep) =>
      lostTable((rows) => {
        const cut = Math.max(
          before ?? Number.NEGATIVE_INFINITY,
          newestLost(rows)[keep - 1]?.lostAt ?? Number.NEGATIVE_INFINITY
        )
        const gone = [...rows.values()].filter((r) => r.lostAt < cut)
        const next = new Map(rows)
        for (const r of gone) next.delete(r.id)
        return [gone.length, next]
      })
  }
}
