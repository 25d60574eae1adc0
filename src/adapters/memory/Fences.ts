/** The in-memory Fences: the model the SQL Fences must agree with (docs/behaviour.md §2, "Fencing tokens"). */
import { Effect, Layer, Option, Ref } from "effect"
import { LeaseTableInTransactionError, StaleTokenError } from "../../core/errors.ts"
import { checkIdentifier } from "../../core/tables.ts"
import { Fences, type FencesApi, type GuardInput } from "../../ports/Fences.ts"
import { validateFence } from "../fenceInput.ts"
import { MemoryDatabase, type MemoryDatabaseApi, modifyTable } from "./database.ts"

/** Builds in-memory Fences on `db`, deciding exactly as the SQL stores do. */
export const makeMemoryFences = (db: MemoryDatabaseApi, options: { readonly table: string }): FencesApi => {
  const table = checkIdentifier(options.table)
  const createTable = `CREATE TABLE ${table} (in memory)`
  const modify = <A>(f: (rows: ReadonlyMap<string, bigint>) => readonly [A, ReadonlyMap<string, bigint>?]) =>
    modifyTable(db, table, f)
  const tableExists = Effect.map(Ref.get(db.tables), (tables) => tables.has(table))
  return Fences.of({
    table,
    createTableSql: createTable,
    // One transaction of the memory database: a failed write restores the recorded token too.
    guard: <A, E, R>({ resource, token }: GuardInput, write: Effect.Effect<A, E, R>) =>
      Effect.zipRight(
        validateFence(resource, token),
        db.withTransaction(Effect.gen(function*() {
          const highest = yield* modify((rows) => {
            const seen = rows.get(resource)
            if (seen !== undefined && seen > token) return [Option.some(seen)]
            return [Option.none(), new Map(rows).set(resource, token)]
          })
          if (Option.isSome(highest)) return yield* new StaleTokenError({ resource, token, highest: highest.value })
          return yield* write
        }))
      ),
    highest: (resource) =>
      Effect.zipRight(validateFence(resource), modify((rows) => [Option.fromNullable(rows.get(resource))])),
    tableExists,
    ensureTable: Effect.gen(function*() {
      if (yield* tableExists) return
      if (yield* db.inTransaction) return yield* new LeaseTableInTransactionError({ table, createTable })
      yield* Ref.update(db.tables, (tables) => (tables.has(table) ? tables : new Map(tables).set(table, new Map())))
    })
  })
}

/** A layer providing in-memory `Fences` for one table of the `MemoryDatabase`. */
export const memoryFencesLayer = (options: { readonly table: string }): Layer.Layer<Fences, never, MemoryDatabase> =>
  Layer.effect(Fences, Effect.map(MemoryDatabase, (db) => makeMemoryFences(db, options)))
