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
import { type AcquireInput, LeaseLock, type LeaseLockApi, nowOr, resolveExpiry, validateLease } from "./LeaseLock.ts"
import { checkIdentifier } from "./sql.ts"

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
      yield* validateLease(input)
      const now = yield* nowOr(input.now)
      const row: LeaseRow = {
        name: input.name,
        owner: input.owner,
        host: input.host ?? null,
        acquiredAt: now,
        expiresAt: yield* resolveExpiry(input, now)
      }
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
        validateLease(input),
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
