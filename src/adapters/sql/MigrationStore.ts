/** The SQL migration store (src/ports/MigrationStore.ts) on PostgreSQL, MySQL/MariaDB and SQLite. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { decodeEpochMs } from "../../core/lease.ts"
import { type TableNames, tableNames, tokensTable } from "../../core/tables.ts"
import type { SqlError } from "@effect/sql/SqlError"
import type { MigrationStore, SchemaStep } from "../../ports/MigrationStore.ts"
import { dialectOf } from "./dialects.ts"
import * as LeaseLock from "./LeaseLock.ts"
import { bookkeepingStatements } from "./schema.ts"
import type { Statement } from "./statement.ts"
import { inTransaction } from "./transaction.ts"

/**
 * The migration store over the current `SqlClient` for one prefix. Library SQL runs without
 * the app's name transforms.
 */
export const makeMigrationStore = (
  options: { readonly prefix?: string | undefined } = {}
): Effect.Effect<MigrationStore, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const dialect = dialectOf(sql).syntax.name
    const tables = tableNames(options.prefix)
    const statements = bookkeepingStatements(dialect, tables)
    const lock = yield* Effect.provideService(
      LeaseLock.make({ table: tables.migrationLocks }),
      SqlClient.SqlClient,
      sql
    )

    const rows = (s: Statement) =>
      sql.unsafe<Record<string, unknown>>(s.sql, s.params as Array<unknown>).withoutTransform
    const exists = (table: string) => Effect.map(rows(statements.tableExists(table)), (r) => r.length > 0)
    // CREATE TABLE IF NOT EXISTS can still fail when two sessions race on PostgreSQL (a
    // duplicate in its type catalog); if the table is there afterwards, the other one won.
    const createIfMissing = (table: string, create: Statement) =>
      Effect.flatMap(exists(table), (present) =>
        present
          ? Effect.void
          : rows(create).pipe(
            Effect.asVoid,
            Effect.catchAll((error) => Effect.flatMap(exists(table), (now) => now ? Effect.void : Effect.fail(error)))
          ))

    const step = (s: SchemaStep): Effect.Effect<void, SqlError> => {
      if ("unless" in s) {
        return Effect.flatMap(rows(s.unless), (found) => found.length > 0 ? Effect.void : Effect.asVoid(rows(s.then)))
      }
      if ("each" in s) {
        return Effect.flatMap(rows(s.each), (found) =>
          Effect.forEach(found, (row) => Effect.forEach(s.then(row), rows, { discard: true }), { discard: true }))
      }
      return Effect.asVoid(rows(s))
    }

    const store: MigrationStore = {
      tables,
      lock,
      inTransaction,
      prepare: Effect.all([
        createIfMissing(tables.migrations, statements.createMigrations),
        createIfMissing(tables.migrationLocks, statements.createMigrationLocks),
        createIfMissing(tokensTable(tables.migrationLocks), statements.createMigrationLockTokens)
      ], { discard: true }),
      hasMigrationsTable: exists(tables.migrations),
      applied: Effect.map(
        rows(statements.applied),
        (r) =>
          r.map((x) => ({ id: Number(x.id), name: String(x.name), appliedAt: decodeEpochMs(x.applied_at) }))
      ),
      apply: (migration) => Effect.forEach(migration.statements(dialect, tables), step, { discard: true }),
      record: (row) => Effect.asVoid(rows(statements.record(row)))
    }
    return store
  })
