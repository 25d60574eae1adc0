/**
 * The SQL LeaseLock (docs/behaviour.md §2) on PostgreSQL, MySQL/MariaDB and SQLite: the port in
 * src/ports/LeaseLock.ts over the current `SqlClient`. Usable on its own by any code; the job
 * system builds its exclusive jobs and its migration lock on it.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option } from "effect"
import { LeaseTableInTransactionError } from "../../core/errors.ts"
import type { LeaseRow } from "../../core/lease.ts"
import {
  type AcquireInput,
  LeaseLock,
  type LeaseLockApi,
  type ReleaseInput,
  type RenewInput
} from "../../ports/LeaseLock.ts"
import { acquireRow, nowOr, resolveExpiry, validateLease, validateRelease } from "../leaseInput.ts"
import { decodeLeaseRow } from "./decode.ts"
import { dialectOf } from "./dialects.ts"
import { type LeaseStatements, leaseStatements } from "./leaseStatements.ts"
import { retryTransient } from "./retry.ts"
import type { RawSql, Statement } from "./statement.ts"
import { inTransaction } from "./transaction.ts"

/**
 * Builds a LeaseLock over the current `SqlClient` for one table. The dialect is resolved
 * here, once. Library statements run without the app's name transforms.
 */
export const make = (options: { readonly table: string }): Effect.Effect<LeaseLockApi, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const dialect = dialectOf(sql)
    const statements: LeaseStatements = leaseStatements(dialect.syntax, dialect.lease, options.table)

    const rows = (s: Statement) =>
      sql.unsafe<Record<string, unknown>>(s.sql, s.params as Array<unknown>).withoutTransform
    const changed = (s: Statement) =>
      Effect.map(sql.unsafe(s.sql, s.params as Array<unknown>).raw, dialect.affectedRows)

    const ownerOf = (name: string) =>
      Effect.map(rows(statements.owner(name)), (r) => Option.map(Option.fromNullable(r[0]), (x) => String(x.lockowner)))

    const read = (name: string) =>
      Effect.map(rows(statements.read(name)), (r) => Option.map(Option.fromNullable(r[0]), decodeLeaseRow))

    const takeOver = (row: LeaseRow) =>
      Effect.flatMap(changed(statements.takeOver(row)), (n) =>
        n > 0
          ? Effect.succeed(true)
          // Nothing changed: it is either held by someone else or already ours (re-entrant).
          : Effect.map(ownerOf(row.name), (owner) => Option.contains(owner, row.owner)))

    // Each operation is safe to run again whole after a deadlock: its writes are fenced
    // (owner, expiry) and a take-over re-reads what it needs.
    const tryAcquire = (input: AcquireInput) => retryTransient(dialect, "lease acquire", tryAcquireOnce(input))
    const tryAcquireOnce = (input: AcquireInput) =>
      Effect.flatMap(acquireRow(input), (row) => {
        const strategy = dialect.lease.acquire
        switch (strategy.kind) {
          case "upsert":
            return upsert(strategy.statement, row)
          case "readThenInsert":
            return readThenInsert(row)
        }
      })
    // Insert or take over in one statement; a row back means we got it. Else the lease is held
    // and live: already ours (re-entrant, left unchanged) or someone else's.
    const upsert = (statement: (table: RawSql, row: LeaseRow) => Statement, row: LeaseRow) =>
      Effect.flatMap(
        rows(statement(statements.quoted, row)),
        (got) => got.length > 0 ? Effect.succeed(true) : Effect.map(ownerOf(row.name), Option.contains(row.owner))
      )
    // Read first. The INSERT is only tried when no row exists, so the plain INSERT rarely meets a
    // duplicate, and a held lease costs one read.
    const readThenInsert = (row: LeaseRow) =>
      Effect.gen(function*() {
        const current = yield* ownerOf(row.name)
        if (Option.isSome(current)) return yield* takeOver(row)
        const inserted = yield* Effect.either(changed(statements.insert(row)))
        if (inserted._tag === "Right" && inserted.right > 0) return true
        // The insert failed or inserted nothing. If a row exists now, someone else inserted
        // first: try the take-over. If there is still no row, the failure was real.
        const after = yield* ownerOf(row.name)
        if (Option.isSome(after)) return yield* takeOver(row)
        if (inserted._tag === "Left") return yield* Effect.fail(inserted.left)
        return false
      })

    const renew = (input: RenewInput) =>
      Effect.gen(function*() {
        yield* validateLease(input)
        const now = yield* nowOr(input.now)
        const expiresAt = yield* resolveExpiry(input, now)
        return (yield* retryTransient(
          dialect,
          "lease renew",
          changed(statements.renew(input.name, input.owner, expiresAt))
        )) > 0
      })

    const release = (input: ReleaseInput) =>
      Effect.zipRight(
        validateRelease(input),
        Effect.map(
          retryTransient(
            dialect,
            "lease release",
            changed(statements.release(input.name, input.owner, input.expiredBefore))
          ),
          (n) => n > 0
        )
      )

    const tableExists = Effect.map(rows(statements.tableExists), (r) => r.length > 0)

    const ensureTable = Effect.gen(function*() {
      if (yield* tableExists) return
      if (yield* inTransaction) {
        return yield* Effect.fail(
          new LeaseTableInTransactionError({ table: options.table, createTable: statements.createTable.sql })
        )
      }
      yield* rows(statements.createTable)
    })

    const list = Effect.map(rows(statements.list), (r) => r.map(decodeLeaseRow))

    return LeaseLock.of({
      table: options.table,
      createTableSql: statements.createTable.sql,
      tryAcquire,
      renew,
      release,
      ownerOf: (name) => Effect.zipRight(validateLease({ name }), ownerOf(name)),
      read: (name) => Effect.zipRight(validateLease({ name }), read(name)),
      list,
      tableExists,
      ensureTable
    })
  })

/** A layer providing `LeaseLock` for one table over the current `SqlClient`. */
export const layer = (options: { readonly table: string }): Layer.Layer<LeaseLock, never, SqlClient.SqlClient> =>
  Layer.effect(LeaseLock, make(options))
