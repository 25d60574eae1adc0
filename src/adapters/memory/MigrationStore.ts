/** The in-memory migration store (src/ports/MigrationStore.ts): "creating" a table adds an empty map under its name. */
import { SqlError } from "@effect/sql/SqlError"
import { Effect, Ref } from "effect"
import { tableNames, tokensTable } from "../../core/tables.ts"
import type { AppliedMigration, MigrationStore } from "../../ports/MigrationStore.ts"
import { type MemoryDatabaseApi, modifyTable } from "./database.ts"
import { makeMemoryLeaseLock } from "./LeaseLock.ts"

/** The migration store of the in-memory database `db`, for one prefix. */
export const makeMemoryMigrationStore = (
  db: MemoryDatabaseApi,
  options: { readonly prefix?: string | undefined } = {}
): MigrationStore => {
  const tables = tableNames(options.prefix)
  const exists = (table: string) => Effect.map(Ref.get(db.tables), (t) => t.has(table))
  const create = (table: string) => Ref.update(db.tables, (t) => (t.has(table) ? t : new Map(t).set(table, new Map())))
  const migrationsTable = <A>(
    f: (rows: ReadonlyMap<string, AppliedMigration>) => readonly [A, ReadonlyMap<string, AppliedMigration>?]
  ) => modifyTable(db, tables.migrations, f)

  return {
    tables,
    lock: makeMemoryLeaseLock(db, { table: tables.migrationLocks }),
    inTransaction: db.inTransaction,
    prepare: Effect.forEach([tables.migrations, tables.migrationLocks, tokensTable(tables.migrationLocks)], create, {
      discard: true
    }),
    hasMigrationsTable: exists(tables.migrations),
    applied: migrationsTable((rows) => [[...rows.values()].sort((a, b) => a.id - b.id)]),
    apply: (migration) => Effect.forEach(migration.memoryTables(tables), create, { discard: true }),
    record: (row) =>
      Effect.flatMap(
        migrationsTable((rows) => rows.has(String(row.id)) ? [false] : [true, new Map(rows).set(String(row.id), row)]),
        (inserted) =>
          inserted
            ? Effect.void
            : Effect.fail(new SqlError({ message: `migration ${row.id} is recorded already`, cause: undefined }))
      )
  }
}
