/**
 * The in-memory store: the executable model of the SQL stores. It makes every decision with
 * the same core functions, over a `Ref`, so a conformance test that passes here and fails on
 * a database points at the SQL, not at the rules.
 *
 * Tables are modelled (a lease table must be created before use, as on a database), and so is
 * a transaction, just enough for the rules that depend on one: `MemoryDatabase.withTransaction`
 * runs one transaction at a time and restores the snapshot it started from if it fails.
 */
import { SqlError } from "@effect/sql/SqlError"
import { Context, Effect, FiberRef, Layer, Option, Ref } from "effect"
import { LeaseTableInTransactionError } from "../core/errors.ts"
import { isExpired, type LeaseRow, mayAcquire } from "../core/lease.ts"
import { type AcquireInput, acquireRow, LeaseLock, type LeaseLockApi, nowOr, resolveExpiry, validateLease, validateRelease } from "./LeaseLock.ts"
import { isStale } from "../core/jobs.ts"
import { applyClaim, type ClaimInput, type ClaimResult, type HostRow, type JobCount, type JobRow, JobLeases, JobStore, type JobStoreApi } from "./JobStore.ts"
import { checkIdentifier, REAPED_DEAD, REAPED_RETRY } from "./sql.ts"
import { tableNames } from "./tables.ts"

/** All tables of one in-memory database: table name → primary key → row. */
export type MemoryTables = ReadonlyMap<string, ReadonlyMap<string, unknown>>

/** An in-memory database shared by every memory store built on it. */
export interface MemoryDatabaseApi {
  readonly tables: Ref.Ref<MemoryTables>
  /** Runs `effect` as one transaction: alone, and rolled back if it fails. */
  readonly withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Whether the current fiber is inside `withTransaction`. */
  readonly inTransaction: Effect.Effect<boolean>
}

/** The in-memory database service. */
export class MemoryDatabase extends Context.Tag("leasehold/MemoryDatabase")<MemoryDatabase, MemoryDatabaseApi>() {}

/** Creates an empty in-memory database. */
export const makeMemoryDatabase: Effect.Effect<MemoryDatabaseApi> = Effect.gen(function*() {
  const tables = yield* Ref.make<MemoryTables>(new Map())
  const inside = FiberRef.unsafeMake(false)
  const lock = yield* Effect.makeSemaphore(1)
  const withTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(FiberRef.get(inside), (already) =>
      already
        ? effect
        : lock.withPermits(1)(
          Effect.flatMap(Ref.get(tables), (snapshot) =>
            Effect.locally(inside, true)(effect).pipe(
              Effect.onExit((exit) => exit._tag === "Failure" ? Ref.set(tables, snapshot) : Effect.void)
            ))
        ))
  return { tables, withTransaction, inTransaction: FiberRef.get(inside) }
})

/** A layer with a fresh, empty in-memory database. */
export const memoryDatabaseLayer: Layer.Layer<MemoryDatabase> = Layer.effect(MemoryDatabase, makeMemoryDatabase)

const noSuchTable = (table: string) =>
  new SqlError({ message: `no such table: ${table}`, cause: new Error(`no such table: ${table}`) })

/**
 * Reads and writes one table atomically: `f` gets its rows (or fails when the table is
 * missing, like a database would) and returns a result and, optionally, new rows.
 */
export const modifyTable = <K extends string, V, A>(
  db: MemoryDatabaseApi,
  table: string,
  f: (rows: ReadonlyMap<K, V>) => readonly [A, ReadonlyMap<K, V>?]
): Effect.Effect<A, SqlError> =>
  Effect.flatten(Ref.modify(db.tables, (tables): [Effect.Effect<A, SqlError>, MemoryTables] => {
    const rows = tables.get(table) as ReadonlyMap<K, V> | undefined
    if (rows === undefined) return [Effect.fail(noSuchTable(table)), tables]
    const [result, next] = f(rows)
    if (next === undefined || next === rows) return [Effect.succeed(result), tables]
    return [Effect.succeed(result), new Map(tables).set(table, next)]
  }))

/** The memory store's CREATE TABLE "text", shown in the same typed error the SQL stores raise. */
const memoryCreateTable = (table: string) => `CREATE TABLE ${table} (in memory)`

/** Builds an in-memory LeaseLock on `db`, deciding exactly as the SQL stores do. */
export const makeMemoryLeaseLock = (db: MemoryDatabaseApi, options: { readonly table: string }): LeaseLockApi => {
  const table = checkIdentifier(options.table)
  const modify = <A>(f: (rows: ReadonlyMap<string, LeaseRow>) => readonly [A, ReadonlyMap<string, LeaseRow>?]) =>
    modifyTable(db, table, f)
  const set = (rows: ReadonlyMap<string, LeaseRow>, row: LeaseRow) => new Map(rows).set(row.name, row)
  const without = (rows: ReadonlyMap<string, LeaseRow>, name: string) => {
    const next = new Map(rows)
    next.delete(name)
    return next
  }

  const tryAcquire = (input: AcquireInput) =>
    Effect.gen(function*() {
      const row = yield* acquireRow(input)
      const now = row.acquiredAt
      return yield* modify((rows) => {
        const current = rows.get(row.name)
        if (!mayAcquire(current, row.owner, now)) return [false]
        // Ours and still live: held already, and (as in SQL, where the take-over's
        // `expiresat < now` matches nothing) left unchanged.
        if (current !== undefined && !isExpired(current.expiresAt, now)) return [true]
        return [true, set(rows, row)]
      })
    })

  const tableExists = Effect.map(Ref.get(db.tables), (tables) => tables.has(table))

  return LeaseLock.of({
    table,
    createTableSql: memoryCreateTable(table),
    tryAcquire,
    renew: (input) =>
      Effect.gen(function*() {
        yield* validateLease(input)
        const expiresAt = yield* resolveExpiry(input, yield* nowOr(input.now))
        return yield* modify((rows) => {
          const current = rows.get(input.name)
          if (current === undefined || current.owner !== input.owner) return [false]
          return [true, set(rows, { ...current, expiresAt })]
        })
      }),
    release: (input) =>
      Effect.zipRight(
        validateRelease(input),
        modify((rows) => {
          const current = rows.get(input.name)
          if (current === undefined || current.owner !== input.owner) return [false]
          if (input.expiredBefore !== undefined && !isExpired(current.expiresAt, input.expiredBefore)) return [false]
          return [true, without(rows, input.name)]
        })
      ),
    ownerOf: (name) =>
      Effect.zipRight(validateLease({ name }), modify((rows) => [Option.map(Option.fromNullable(rows.get(name)), (r) => r.owner)])),
    read: (name) => Effect.zipRight(validateLease({ name }), modify((rows) => [Option.fromNullable(rows.get(name))])),
    list: modify((rows) => [[...rows.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))]),
    tableExists,
    ensureTable: Effect.gen(function*() {
      if (yield* tableExists) return
      if (yield* db.inTransaction) {
        return yield* Effect.fail(new LeaseTableInTransactionError({ table, createTable: memoryCreateTable(table) }))
      }
      yield* Ref.update(db.tables, (tables) => (tables.has(table) ? tables : new Map(tables).set(table, new Map())))
    })
  })
}

/** A layer providing an in-memory `LeaseLock` for one table of the `MemoryDatabase`. */
export const memoryLeaseLockLayer = (options: { readonly table: string }): Layer.Layer<LeaseLock, never, MemoryDatabase> =>
  Layer.effect(LeaseLock, Effect.map(MemoryDatabase, (db) => makeMemoryLeaseLock(db, options)))

// ---------------------------------------------------------------------------------------------
// Jobs and hosts

const byPriorityThenRunAt = (a: JobRow, b: JobRow) => b.priority - a.priority || a.runAt - b.runAt || a.createdAt - b.createdAt
const byPriorityThenAge = (a: JobRow, b: JobRow) => b.priority - a.priority || a.createdAt - b.createdAt

/**
 * Builds the in-memory JobStore on `db` for one prefix. Its tables must exist (the migrator
 * creates them), as on a database. Every write is one atomic `Ref` update, so claims cannot
 * interleave, which is what the SQL stores achieve with row locks.
 */
export const makeMemoryJobStore = (db: MemoryDatabaseApi, options: { readonly prefix?: string | undefined } = {}): JobStoreApi => {
  const tables = tableNames(options.prefix)
  const jobsTable = <A>(f: (rows: ReadonlyMap<string, JobRow>) => readonly [A, ReadonlyMap<string, JobRow>?]) =>
    modifyTable(db, tables.jobs, f)
  const hostsTable = <A>(f: (rows: ReadonlyMap<string, HostRow>) => readonly [A, ReadonlyMap<string, HostRow>?]) =>
    modifyTable(db, tables.hosts, f)
  const put = <V>(rows: ReadonlyMap<string, V>, key: string, row: V) => new Map(rows).set(key, row)

  /** Updates one row if `guard` holds; true when it changed. */
  const update = (id: string, guard: (row: JobRow) => boolean, change: (row: JobRow) => JobRow) =>
    jobsTable((rows) => {
      const row = rows.get(id)
      if (row === undefined || !guard(row)) return [false]
      return [true, put(rows, id, change(row))]
    })
  const ours = (token: string) => (row: JobRow) => row.status === "processing" && row.claimToken === token

  const handOff = (leaseName: string, now: number) =>
    jobsTable((rows) => {
      const next = [...rows.values()].filter((r) => r.leaseName === leaseName && r.status === "pending").sort(byPriorityThenAge)[0]
      if (next === undefined) return [false]
      return [true, put(rows, next.id, { ...next, runAt: Math.min(next.runAt, now) })]
    })

  const running = (rows: ReadonlyMap<string, JobRow>, host: string) =>
    [...rows.values()].filter((r) => r.claimedBy === host && r.status === "processing").length

  const claim = (input: ClaimInput) =>
    jobsTable((rows): readonly [ClaimResult, ReadonlyMap<string, JobRow>?] => {
      const cap = input.hostCap ?? 0
      if (cap > 0) {
        const n = running(rows, input.host)
        if (n >= cap) return [{ _tag: "Capped", running: n }]
      }
      const due = [...rows.values()]
        .filter((r) =>
          r.status === "pending" && r.runAt <= input.now && (input.queues === undefined || input.queues.includes(r.queue))
        )
        .sort(byPriorityThenRunAt)[0]
      if (due === undefined) return [{ _tag: "NothingDue" }]
      const job = applyClaim(due, input)
      return [{ _tag: "Claimed", job }, put(rows, job.id, job)]
    })

  const staleRows = (rows: ReadonlyMap<string, JobRow>, now: number, timeout: number) =>
    [...rows.values()].filter((r) => r.status === "processing" && isStale(r, timeout, now))

  return JobStore.of({
    tables,
    insert: (job) =>
      jobsTable((rows): readonly [{ readonly id: string; readonly duplicate: boolean }, ReadonlyMap<string, JobRow>?] => {
        const existing = [...rows.values()].find((r) => r.uniqueKey === job.uniqueKey)
        if (existing !== undefined) return [{ id: existing.id, duplicate: true }]
        const row: JobRow = {
          id: job.id,
          name: job.name,
          queue: job.queue,
          payload: job.payload,
          priority: job.priority,
          status: "pending",
          attempts: 0,
          maxRetries: job.maxRetries,
          claimTimeout: job.claimTimeout,
          claimToken: null,
          claimedBy: null,
          uniqueKey: job.uniqueKey,
          leaseName: null,
          heartbeatAt: null,
          lastError: null,
          runAt: job.runAt,
          completedAt: null,
          failedAt: null,
          createdAt: job.now,
          updatedAt: job.now
        }
        return [{ id: job.id, duplicate: false }, put(rows, job.id, row)]
      }),
    claim,
    finish: (input) =>
      Effect.gen(function*() {
        const { id, now, outcome, token } = input
        const written = yield* update(id, ours(token), (r): JobRow => {
          switch (outcome._tag) {
            case "Complete":
              return { ...r, status: "completed", completedAt: now, updatedAt: now }
            case "Retry":
              return { ...r, status: "pending", runAt: outcome.runAt, lastError: outcome.error, claimToken: null, updatedAt: now }
            case "Kill":
              return { ...r, status: "failed", failedAt: now, lastError: outcome.error, updatedAt: now }
          }
        })
        const lease = input.lease
        if (lease === undefined) return { written, lease: "none" as const }
        const released = yield* modifyTable(db, tables.jobLocks, (rows: ReadonlyMap<string, LeaseRow>) => {
          if (rows.get(lease)?.owner !== token) return [false]
          const next = new Map(rows)
          next.delete(lease)
          return [true, next]
        })
        if (released) yield* handOff(lease, now)
        return { written, lease: released ? "released" as const : "lost" as const }
      }),
    defer: (id, token, now, runAt, leaseName) =>
      update(id, (r) => ours(token)(r) && r.attempts > 0, (r) => ({
        ...r,
        status: "pending",
        attempts: r.attempts - 1,
        runAt,
        claimToken: null,
        leaseName,
        updatedAt: now
      })),
    heartbeat: (id, token, now) => update(id, ours(token), (r) => ({ ...r, heartbeatAt: now })),
    stale: (now, timeout, limit) =>
      jobsTable((rows) => [staleRows(rows, now, timeout).sort((a, b) => a.updatedAt - b.updatedAt).slice(0, limit)]),
    reap: (row, decision, now, timeout) =>
      update(
        row.id,
        (r) => r.attempts === row.attempts && r.status === "processing" && isStale(r, timeout, now),
        (r) => {
          switch (decision._tag) {
            case "Retry":
              return { ...r, status: "pending", runAt: decision.runAt, claimToken: null, lastError: REAPED_RETRY, updatedAt: now }
            case "Dead":
              return { ...r, status: "failed", failedAt: now, claimToken: null, lastError: REAPED_DEAD, updatedAt: now }
            case "Interrupted":
              return { ...r, status: "interrupted", failedAt: now, claimToken: null, lastError: decision.message, updatedAt: now }
          }
        }
      ),
    handOff,
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
        const c = counts.get(key)
        counts.set(key, { queue: r.queue, status: r.status, count: (c?.count ?? 0) + 1 })
      }
      return [[...counts.values()].sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : a.status < b.status ? -1 : a.status > b.status ? 1 : 0))]
    }),
    retryDead: (id, now) =>
      update(id, (r) => r.status === "failed" || r.status === "interrupted", (r) => ({
        ...r,
        status: "pending",
        attempts: 0,
        runAt: now,
        claimToken: null,
        failedAt: null,
        updatedAt: now
      })),
    purge: (status, before) =>
      jobsTable((rows) => {
        const next = new Map(rows)
        let n = 0
        for (const r of rows.values()) {
          const finished = status === "completed" ? r.completedAt : r.failedAt
          if (r.status === status && finished !== null && finished < before) {
            next.delete(r.id)
            n++
          }
        }
        return [n, next]
      }),
    touchHost: (host, now, fields) =>
      hostsTable((rows) => {
        const current = rows.get(host)
        const row: HostRow = current === undefined
          ? { host, lastSeenAt: now, startedAt: now, running: 0, maxConcurrent: fields.maxConcurrent, draining: false, drainExpiresAt: null, codeVersion: fields.codeVersion }
          : { ...current, lastSeenAt: now, maxConcurrent: fields.maxConcurrent, codeVersion: fields.codeVersion }
        return [undefined, put(rows, host, row)]
      }),
    getHost: (host) => hostsTable((rows) => [Option.fromNullable(rows.get(host))]),
    listHosts: hostsTable((rows) => [[...rows.values()].sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0))]),
    drain: (host, now, expiresAt) =>
      hostsTable((rows) => {
        const current = rows.get(host) ?? { host, lastSeenAt: now, startedAt: now, running: 0, maxConcurrent: 0, draining: false, drainExpiresAt: null, codeVersion: null }
        return [undefined, put(rows, host, { ...current, draining: true, drainExpiresAt: expiresAt, lastSeenAt: now })]
      }),
    resume: (host, now) =>
      hostsTable((rows) => {
        const current = rows.get(host) ?? { host, lastSeenAt: now, startedAt: now, running: 0, maxConcurrent: 0, draining: false, drainExpiresAt: null, codeVersion: null }
        return [undefined, put(rows, host, { ...current, draining: false, drainExpiresAt: null, lastSeenAt: now })]
      })
  })
}

/** A layer providing the in-memory `JobStore` and `JobLeases` on the `MemoryDatabase`. */
export const memoryJobStoreLayer = (
  options: { readonly prefix?: string | undefined } = {}
): Layer.Layer<JobStore | JobLeases, never, MemoryDatabase> =>
  Layer.merge(
    Layer.effect(JobStore, Effect.map(MemoryDatabase, (db) => makeMemoryJobStore(db, options))),
    Layer.effect(JobLeases, Effect.map(MemoryDatabase, (db) => makeMemoryLeaseLock(db, { table: tableNames(options.prefix).jobLocks })))
  )
