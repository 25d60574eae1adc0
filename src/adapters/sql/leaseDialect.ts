/** What a dialect folder supplies for the lease table and the fences table (part of ./dialect.ts `Dialect`). */
import type { LeaseRow } from "../../core/lease.ts"
import type { RawSql, Statement } from "./statement.ts"

/**
 * How a dialect takes a lease that may be free, expired or held. Every acquisition also bumps
 * the name's fencing-token counter (the `<table>_tokens` table), atomically with it, so a token is
 * strictly greater than every earlier token of that name (docs/behaviour.md §2).
 */
export type AcquireStrategy =
  /**
   * One statement inserts or takes over and bumps the counter (PostgreSQL: `INSERT … ON CONFLICT
   * DO UPDATE … WHERE expired RETURNING` in a data-modifying CTE). It returns at most one row:
   * `got` 1 with the new `token` when it took the lease; else `got` 0 with the `lockowner` and
   * `token` the statement's snapshot shows (no row: none there). A lease ours before the
   * statement began is in its snapshot; one another caller wrote meanwhile is not ours either way.
   */
  | {
    readonly kind: "upsertWithToken"
    readonly statement: (table: RawSql, tokens: RawSql, row: LeaseRow) => Statement
  }
  /**
   * Two statements, no transaction (SQLite, which has no data-modifying CTE). `bump` adds 1 to
   * the counter only if the lease is free or expired at `row.acquiredAt` and returns the new
   * `token` (no row: held, maybe by us). `upsert` then inserts or takes over the expired lease
   * `RETURNING lockowner`, but only while the counter still holds `token`: a row back means we
   * got it, with that token. Each acquisition thus writes its row when the counter holds its own
   * token, which no other bump returned, so tokens strictly increase in acquisition order; a
   * bump whose upsert lost a race is a token nobody holds.
   */
  | {
    readonly kind: "bumpThenUpsert"
    readonly bump: (table: RawSql, tokens: RawSql, row: LeaseRow) => Statement
    readonly upsert: (table: RawSql, tokens: RawSql, row: LeaseRow, token: bigint) => Statement
  }
  /**
   * Read first; insert when there is no row, else take over with a guarded UPDATE, then
   * `bumpToken`, all in one transaction (MySQL: a duplicate key fails a plain INSERT without
   * aborting the transaction). That is the Galera cluster's form (its commit is checked,
   * src/adapters/sql/transaction.ts `mustCommitWrites`). Elsewhere `packed` is used: statements
   * sent as one multi-statement query, in one transaction, one round trip; they insert or take
   * over the lease and bump the counter only if they did, and end with a SELECT of one row:
   * `got` (1: this call took the lease), `lockowner` and the name's `token` (null: no counter
   * row yet).
   */
  | {
    readonly kind: "readThenInsert"
    readonly packed: (table: RawSql, tokens: RawSql, row: LeaseRow) => Statement
  }

/** What a dialect file supplies for the lease table. */
export interface LeaseDialect {
  readonly createTable: (table: RawSql, tableName: string) => Statement
  readonly tableExists: (tableName: string) => Statement
  readonly insert: (table: RawSql, row: LeaseRow) => Statement
  readonly acquire: AcquireStrategy
  /** The token counter table: `lockname` (primary key) and its last `token` (BIGINT). */
  readonly createTokensTable: (tokens: RawSql) => Statement
  /** Adds 1 to a name's counter (from 0 when it has none); the last statement's row holds `token`. */
  readonly bumpToken: (tokens: RawSql, name: string) => ReadonlyArray<Statement>
}

/** What a dialect file supplies for a fences table (src/adapters/sql/Fences.ts). */
export interface FenceDialect {
  /** `resource` (VARCHAR(255), primary key) and the highest `token` (BIGINT) it has seen. */
  readonly createTable: (table: RawSql) => Statement
  /**
   * Raises the resource's recorded token to `token` unless it is higher (inserting the row at
   * `token` when there is none) and locks the row until the transaction ends; the last
   * statement's row holds the recorded `token` afterwards, which equals `token` iff it was not
   * lower than the highest seen.
   */
  readonly record: (table: RawSql, resource: string, token: number) => ReadonlyArray<Statement>
}
