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
import { Context, Effect, FiberRef, Layer, Ref } from "effect"

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

/** The error a database gives for a missing table. */
export const noSuchTable = (table: string) =>
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
