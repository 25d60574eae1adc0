/** The in-memory LeaseLock: the model the SQL LeaseLock must agree with (docs/behaviour.md §2). */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Layer, Option, Ref } from "effect"
import { LeaseTableInTransactionError } from "../../core/errors.ts"
import { isExpired, type LeaseRow, mayAcquire } from "../../core/lease.ts"
import { checkIdentifier, tokensTable } from "../../core/tables.ts"
import { type AcquireInput, LeaseLock, type LeaseLockApi } from "../../ports/LeaseLock.ts"
import { acquireRow, nowOr, resolveExpiry, validateLease, validateRelease } from "../leaseInput.ts"
import { MemoryDatabase, type MemoryDatabaseApi, type MemoryTables, modifyTable, noSuchTable } from "./database.ts"

const memoryCreateTable = (table: string) =>
  `CREATE TABLE ${table} (in memory);\nCREATE TABLE ${tokensTable(table)} (in memory)`

/** Builds an in-memory LeaseLock on `db`, deciding exactly as the SQL stores do. */
export const makeMemoryLeaseLock = (db: MemoryDatabaseApi, options: { readonly table: string }): LeaseLockApi => {
  const table = checkIdentifier(options.table)
  const tokens = tokensTable(table)
  const modify = <A>(f: (rows: ReadonlyMap<string, LeaseRow>) => readonly [A, ReadonlyMap<string, LeaseRow>?]) =>
    modifyTable(db, table, f)
  const set = (rows: ReadonlyMap<string, LeaseRow>, row: LeaseRow) => new Map(rows).set(row.name, row)
  const without = (rows: ReadonlyMap<string, LeaseRow>, name: string) => {
    const next = new Map(rows)
    next.delete(name)
    return next
  }

  // The lease row and the name's token counter change in one atomic update of both tables, as
  // the SQL stores change them in one statement or transaction.
  const tryAcquireToken = (input: AcquireInput) =>
    Effect.gen(function*() {
      const row = yield* acquireRow(input)
      const now = row.acquiredAt
      return yield* Effect.flatten(
        Ref.modify(db.tables, (all): [Effect.Effect<Option.Option<bigint>, SqlError>, MemoryTables] => {
          const rows = all.get(table) as ReadonlyMap<string, LeaseRow> | undefined
          const counters = all.get(tokens) as ReadonlyMap<string, bigint> | undefined
          if (rows === undefined) return [Effect.fail(noSuchTable(table)), all]
          if (counters === undefined) return [Effect.fail(noSuchTable(tokens)), all]
          const current = rows.get(row.name)
          if (!mayAcquire(current, row.owner, now)) return [Effect.succeedNone, all]
          const last = counters.get(row.name)
          // Ours and still live: held already, and (as in SQL, where the take-over's
          // `expiresat < now` matches nothing) left unchanged, with its token (a lease taken before
          // the counter existed gets one now).
          const fresh = current === undefined || isExpired(current.expiresAt, now)
          if (!fresh && last !== undefined) return [Effect.succeedSome(last), all]
          const token = (last ?? 0n) + 1n
          const next = new Map(all).set(tokens, new Map(counters).set(row.name, token))
          if (fresh) next.set(table, set(rows, row))
          return [Effect.succeedSome(token), next]
        })
      )
    })

  const tableExists = Effect.map(Ref.get(db.tables), (tables) => tables.has(table))

  return LeaseLock.of({
    table,
    createTableSql: memoryCreateTable(table),
    tryAcquire: (input) => Effect.map(tryAcquireToken(input), Option.isSome),
    tryAcquireToken,
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
      Effect.zipRight(
        validateLease({ name }),
        modify((rows) => [Option.map(Option.fromNullable(rows.get(name)), (r) => r.owner)])
      ),
    read: (name) => Effect.zipRight(validateLease({ name }), modify((rows) => [Option.fromNullable(rows.get(name))])),
    list: modify((rows) => [[...rows.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))]),
    tableExists,
    ensureTable: Effect.gen(function*() {
      const present = yield* Ref.get(db.tables)
      if (present.has(table) && present.has(tokens)) return
      if (yield* db.inTransaction) {
        return yield* Effect.fail(new LeaseTableInTransactionError({ table, createTable: memoryCreateTable(table) }))
      }
      yield* Ref.update(db.tables, (tables) => {
        const next = new Map(tables)
        for (const name of [table, tokens]) if (!next.has(name)) next.set(name, new Map())
        return next
      })
    })
  })
}

/** A layer providing an in-memory `LeaseLock` for one table of the `MemoryDatabase`. */
export const memoryLeaseLockLayer = (
  options: { readonly table: string }
): Layer.Layer<LeaseLock, never, MemoryDatabase> =>
  Layer.effect(LeaseLock, Effect.map(MemoryDatabase, (db) => makeMemoryLeaseLock(db, options)))
