/**
 * The migration-store port (docs/behaviour.md §10): where leasehold's own schema migrations are
 * recorded and applied. The runner, src/runtime/migrate.ts, holds every lock rule once over
 * this; src/adapters/sql/MigrationStore.ts and src/adapters/memory/MigrationStore.ts implement it.
 */
import type { SqlError } from "@effect/sql/SqlError"
import type { Effect } from "effect"
import type { TableNames } from "../core/tables.ts"
import type { LeaseLockApi } from "./LeaseLock.ts"

/** SQL text and its bound parameters, in the dialect's own placeholders. */
export interface SqlText {
  readonly sql: string
  readonly params: ReadonlyArray<unknown>
}

/**
 * One step of a migration: a statement; a statement run only when a probe finds nothing (an
 * `ALTER TABLE … ADD COLUMN` where the database has no `IF NOT EXISTS`); or a backfill whose
 * values TypeScript computes by core's rules, one set of statements per row a query returns.
 * Every step must be safe to run again: migrations are not transactions.
 */
export type SchemaStep =
  | SqlText
  | { readonly unless: SqlText; readonly then: SqlText }
  | { readonly each: SqlText; readonly then: (row: Record<string, unknown>) => ReadonlyArray<SqlText> }

/** The SQL databases leasehold migrates. */
export type SchemaDialect = "pg" | "mysql" | "sqlite"

/** One of leasehold's schema migrations. */
export interface Migration {
  /** Its number: applied in ascending order, recorded in the migrations table. */
  readonly id: number
  /** A short description, recorded with the id and shown by `status`. */
  readonly name: string
  /** The steps for one database and prefix, run one by one, in order. */
  readonly statements: (dialect: SchemaDialect, tables: TableNames) => ReadonlyArray<SchemaStep>
  /**
   * The tables it creates in the in-memory store, which "creates" a table by adding an empty
   * map under its name (the memory store has no columns or indexes to declare).
   */
  readonly memoryTables: (tables: TableNames) => ReadonlyArray<string>
}

/** A row of the migrations table. */
export interface AppliedMigration {
  readonly id: number
  readonly name: string
  /** Epoch ms, from the runner's Clock. */
  readonly appliedAt: number
}

/**
 * Where migrations are stored and applied: the part that differs between the SQL databases
 * and the in-memory store. The lock rules live in `makeWith`, once.
 */
export interface MigrationStore {
  readonly tables: TableNames
  /** The LeaseLock on `tables.migrationLocks`. */
  readonly lock: LeaseLockApi
  readonly inTransaction: Effect.Effect<boolean>
  /** Creates the migrations and migration lock tables if missing; safe when several race. */
  readonly prepare: Effect.Effect<void, SqlError>
  /** Whether the migrations table exists (so `status` can read a fresh database). */
  readonly hasMigrationsTable: Effect.Effect<boolean, SqlError>
  readonly applied: Effect.Effect<ReadonlyArray<AppliedMigration>, SqlError>
  readonly apply: (migration: Migration) => Effect.Effect<void, SqlError>
  /** Records an applied migration; fails if its id is recorded already. */
  readonly record: (row: AppliedMigration) => Effect.Effect<void, SqlError>
}
