/**
 * The in-memory JobStore: a fold over the job transitions of src/core/transitions.ts, one
 * atomic `Ref` update per write, so claims cannot interleave (which the SQL stores achieve with
 * row locks). It is the model the SQL stores must agree with. Its reads and administration are
 * in ./jobStoreAdmin.ts, its tables in ./jobTables.ts.
 */
import * as LocalWakeups from "../localWakeups.ts"
import { Effect, Layer, Option, Ref } from "effect"
import type { SqlError } from "@effect/sql/SqlError"
import { randomUUID } from "node:crypto"
import { isStale } from "../../core/jobs.ts"
import type { LeaseRow } from "../../core/lease.ts"
import type { ClaimInput, ClaimResult, JobRow, LeaseTransfer, NewJob } from "../../core/model.ts"
import { tableNames, tokensTable } from "../../core/tables.ts"
import {
  applyClaim,
  applyFreeKey,
  applyHeartbeat,
  applyDefer,
  applyGiveBack,
  applyHandOff,
  applyOutcome,
  applyReap,
  claimOrder,
  handOffOrder,
  isWaiting,
  finishHandsOff,
  isDue,
  keyNotSkipped,
  onePerKey,
  isOurs,
  keyFreed,
  mayDefer,
  newJobRow
} from "../../core/transitions.ts"
import { type InsertResult, JobLeases, JobStore, type JobStoreApi } from "../../ports/JobStore.ts"
import { rememberingTable } from "../jobLeases.ts"
import { MemoryDatabase, type MemoryDatabaseApi, type MemoryTables, modifyTable, noSuchTable } from "./database.ts"
import { memoryJobStoreAdmin } from "./jobStoreAdmin.ts"
import { memoryLimits } from "./limits.ts"
import { memoryJobTables, put } from "./jobTables.ts"
import { makeMemoryLeaseLock } from "./LeaseLock.ts"
import { memoryScheduleStoreLayer } from "./ScheduleStore.ts"
import type { ScheduleStore } from "../../ports/ScheduleStore.ts"

/**
 * Builds the in-memory JobStore on `db` for one prefix. Its tables must exist (the migrator
 * creates them), as on a database.
 */
export const makeMemoryJobStore = (
  db: MemoryDatabaseApi,
  options: { readonly prefix?: string | undefined } = {}
): JobStoreApi => {
  const tables = tableNames(options.prefix)
  const jobTables = memoryJobTables(db, tables)
  const { jobsTable, update } = jobTables

  // A woken waiter is due now: this process's workers hear of it (src/adapters/localWakeups.ts).
  const handOff = (leaseName: string, now: number, exceptId?: string) =>
    Effect.tap(
      jobsTable((rows): readonly [boolean, ReadonlyMap<string, JobRow>?] => {
        const next = [...rows.values()].filter((r) => isWaiting(r, leaseName, exceptId)).sort(handOffOrder)[0]
        if (next === undefined) return [false]
        return [true, put(rows, next.id, applyHandOff(next, now))]
      }),
      (woke) => (woke ? LocalWakeups.ring(tables.channel) : Effect.void)
    )

  const running = (rows: ReadonlyMap<string, JobRow>, host: string) =>
    [...rows.values()].filter((r) => r.claimedBy === host && r.status === "processing").length

  // The rows a claim may take, best first.
  const dueRows = (rows: ReadonlyMap<string, JobRow>, input: ClaimInput) =>
    [...rows.values()].filter((r) => isDue(r, input.now, input.queues) && keyNotSkipped(r, input.perKey)).sort(
      claimOrder
    )

  const claim = (input: ClaimInput) =>
    jobsTable((rows): readonly [ClaimResult, ReadonlyMap<string, JobRow>?] => {
      const cap = input.hostCap ?? 0
      if (cap > 0) {
        const n = running(rows, input.host)
        if (n >= cap) return [{ _tag: "Capped", running: n }]
      }
      const due = dueRows(rows, input)[0]
      if (due === undefined) return [{ _tag: "NothingDue" }]
      const job = applyClaim(due, input)
      return [{ _tag: "Claimed", job }, put(rows, job.id, job)]
    })

  // Up to `limit` due rows, best first, each with its own token (the first with the input's).
  const claimMany = (input: ClaimInput, limit: number) =>
    jobsTable((rows): readonly [ReadonlyArray<JobRow>, ReadonlyMap<string, JobRow>?] => {
      const best = dueRows(rows, input).slice(0, Math.max(0, limit))
      const due = input.perKey === undefined ? best : onePerKey(best)
      if (due.length === 0) return [[]]
      const claimed = due.map((r, i) =>
        applyClaim(r, { ...input, claimToken: i === 0 ? input.claimToken : randomUUID() })
      )
      const next = new Map(rows)
      for (const job of claimed) next.set(job.id, job)
      return [claimed, next]
    })

  const staleRows = (rows: ReadonlyMap<string, JobRow>, now: number) =>
    [...rows.values()].filter((r) => isStale(r, now))

  const releaseLease = (lease: string, token: string) =>
    modifyTable(db, tables.jobLocks, (rows: ReadonlyMap<string, LeaseRow>) => {
      if (rows.get(lease)?.owner !== token) return [false]
      const next = new Map(rows)
      next.delete(lease)
      return [true, next]
    })

  // Our lease passed to `to` and its name's token bumped, in one atomic update of both tables
  // (as ./LeaseLock.ts acquires): the new token, or undefined when it did not move (not ours,
  // or, with `to.unlessWaiting`, a job other than `exceptId` waits on it asleep).
  const transferLease = (lease: string, token: string, now: number, to: LeaseTransfer, exceptId: string) =>
    Effect.flatten(Ref.modify(db.tables, (all): [Effect.Effect<bigint | undefined, SqlError>, MemoryTables] => {
      const locks = all.get(tables.jobLocks) as ReadonlyMap<string, LeaseRow> | undefined
      const counters = all.get(tokensTable(tables.jobLocks)) as ReadonlyMap<string, bigint> | undefined
      const jobs = all.get(tables.jobs) as ReadonlyMap<string, JobRow> | undefined
      if (locks === undefined) return [Effect.fail(noSuchTable(tables.jobLocks)), all]
      if (counters === undefined) return [Effect.fail(noSuchTable(tokensTable(tables.jobLocks))), all]
      if (jobs === undefined) return [Effect.fail(noSuchTable(tables.jobs)), all]
      if (locks.get(lease)?.owner !== token) return [Effect.succeed(undefined), all]
      if (to.unlessWaiting === true) {
        for (const r of jobs.values()) {
          if (isWaiting(r, lease, exceptId) && r.runAt > now) return [Effect.succeed(undefined), all]
        }
      }
      const next = (counters.get(lease) ?? 0n) + 1n
      const row: LeaseRow = { name: lease, owner: to.owner, host: to.host, acquiredAt: now, expiresAt: to.expiresAt }
      return [
        Effect.succeed(next),
        new Map(all).set(tables.jobLocks, put(locks, lease, row)).set(
          tokensTable(tables.jobLocks),
          new Map(counters).set(lease, next)
        )
      ]
    }))

  // Inserts in order, keys settled per row (src/core/transitions.ts keyFreed, applyFreeKey): one
  // atomic update, as the SQL store's transaction.
  const insertAll = (jobs: ReadonlyArray<NewJob>) =>
    jobsTable((rows): readonly [ReadonlyArray<InsertResult>, ReadonlyMap<string, JobRow>?] => {
      const next = new Map(rows)
      const byKey = new Map([...rows.values()].map((r) => [r.uniqueKey, r]))
      const results = jobs.map((job): InsertResult => {
        const holder = byKey.get(job.uniqueKey)
        if (holder !== undefined && !keyFreed(holder)) return { id: holder.id, duplicate: true }
        if (holder !== undefined) {
          const freed = applyFreeKey(holder)
          next.set(freed.id, freed)
          byKey.set(freed.uniqueKey, freed)
        }
        const row = newJobRow(job)
        next.set(row.id, row)
        byKey.set(row.uniqueKey, row)
        return { id: row.id, duplicate: false }
      })
      return [results, next]
    })

  // One process: a job due now rings its workers directly (src/adapters/localWakeups.ts).
  const wakeups = LocalWakeups.localWakeupsFor(tables.channel)
  const ringIfDue = (jobs: ReadonlyArray<NewJob>, results: ReadonlyArray<InsertResult>) => {
    if (results.some((r, i) => !r.duplicate && jobs[i]!.runAt <= jobs[i]!.now)) wakeups.ring()
    return results
  }
  const insertRinging = (jobs: ReadonlyArray<NewJob>) => Effect.map(insertAll(jobs), (r) => ringIfDue(jobs, r))

  return JobStore.of({
    tables,
    wakeups,
    idleProbe: Option.none(),
    // The model of the server databases, whose worker writes plain outcomes behind its next job.
    remote: true,
    insert: (job) => Effect.map(insertRinging([job]), (r) => r[0]!),
    insertMany: insertRinging,
    claim,
    finish: (input) =>
      Effect.gen(function*() {
        const written = yield* update(input.id, (r) =>
          isOurs(r, input.token), (r) =>
          applyOutcome(r, input.outcome, input.now))
        const lease = input.lease
        if (lease === undefined) {
          return { written, lease: "none" as const }
        }
        if (input.transferTo !== undefined) {
          const transferred = yield* transferLease(lease, input.token, input.now, input.transferTo, input.id)
          if (transferred !== undefined) {
            return { written, lease: "released" as const, transferred }
          }
        }
        const released = yield* releaseLease(lease, input.token)
        if (released && finishHandsOff(input)) {
          yield* handOff(lease, input.now, input.id)
        }
        return { written, lease: released ? "released" as const : "lost" as const }
      }),
    claimMany,
    giveBack: (id, token, now) => update(id, (r) => mayDefer(r, token), (r) => applyGiveBack(r, now)),
    // In the order the SQL stores write it: leases, hand-offs (the jobs handed back are still
    // processing, so never their own waiters), then the jobs.
    handBack: (claims, now) =>
      Effect.gen(function*() {
        const tokens = new Set(claims.map((c) => c.token))
        const released = yield* modifyTable(db, tables.jobLocks, (rows: ReadonlyMap<string, LeaseRow>) => {
          const names = [...rows.values()].filter((r) => tokens.has(r.owner)).map((r) => r.name)
          if (names.length === 0) return [names]
          const next = new Map(rows)
          for (const name of names) next.delete(name)
          return [names, next]
        })
        let woke = 0
        for (const name of released) if (yield* handOff(name, now)) woke++
        let handedBack = 0
        for (const c of claims) {
          if (yield* update(c.id, (r) => mayDefer(r, c.token), (r) => applyGiveBack(r, now))) handedBack++
        }
        if (handedBack > 0) yield* LocalWakeups.ring(tables.channel)
        return { handedBack, released: released.length, woke }
      }),
    defer: (id, token, now, runAt, leaseName) =>
      update(id, (r) => mayDefer(r, token), (r) => applyDefer(r, now, runAt, leaseName)),
    heartbeat: (id, token, now, staleAt) => update(id, (r) => isOurs(r, token), (r) => applyHeartbeat(r, now, staleAt)),
    stale: (now, limit) =>
      // As the SQL store reads them: rows past their deadline first, then rows without one.
      jobsTable((rows) => [
        staleRows(rows, now)
          .sort((a, b) => Number(a.staleAt === null) - Number(b.staleAt === null) || a.updatedAt - b.updatedAt)
          .slice(0, limit)
      ]),
    reap: (row, decision, now) =>
      update(
        row.id,
        (r) => r.attempts === row.attempts && isStale(r, now),
        (r) => applyReap(r, decision, now)
      ),
    handOff,
    ...memoryJobStoreAdmin(jobTables),
    ...memoryLimits(db, tables, jobsTable)
  })
}

/**
 * A layer providing the in-memory `JobStore` and `JobLeases` on the `MemoryDatabase`, and the
 * `ScheduleStore` of recurring jobs (./ScheduleStore.ts).
 */
export const memoryJobStoreLayer = (
  options: { readonly prefix?: string | undefined } = {}
): Layer.Layer<JobStore | JobLeases | ScheduleStore, never, MemoryDatabase> =>
  Layer.mergeAll(
    Layer.effect(JobStore, Effect.map(MemoryDatabase, (db) => makeMemoryJobStore(db, options))),
    memoryScheduleStoreLayer(options),
    Layer.effect(
      JobLeases,
      Effect.map(MemoryDatabase, (db) =>
        rememberingTable(makeMemoryLeaseLock(db, { table: tableNames(options.prefix).jobLocks })))
    )
  )
