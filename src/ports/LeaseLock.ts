/**
 * The LeaseLock port (docs/behaviour.md §2): a named, expiring, owner-fenced lock in a table of
 * the application's own database. The SQL implementation is src/adapters/sql/LeaseLock.ts; the
 * in-memory model is src/adapters/memory/LeaseLock.ts.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Context, type Effect, type Option } from "effect"
import type { LeaseInputError, LeaseTableInTransactionError } from "../core/errors.ts"
import type { LeaseRow } from "../core/lease.ts"

/**
 * When a lease ends: an absolute epoch-ms expiry, or a time to live from `now`. Either way a
 * whole epoch-ms value, not before `now` (`ttlMs` ≥ 0): a lease that expires exactly at `now`
 * is live until `now` has passed.
 */
export type LeaseExpiry = { readonly expiresAt: number } | { readonly ttlMs: number }

/** Input of `tryAcquire`. `now` (whole epoch ms) defaults to Effect's `Clock`. */
export type AcquireInput = {
  readonly name: string
  readonly owner: string
  readonly host?: string | null | undefined
  readonly now?: number | undefined
} & LeaseExpiry

/**
 * Input of `renew`. `now` (whole epoch ms; the base of a `ttlMs`, and the time the new expiry
 * may not precede) defaults to Effect's `Clock`.
 */
export type RenewInput = {
  readonly name: string
  readonly owner: string
  readonly now?: number | undefined
} & LeaseExpiry

/**
 * Input of `release`. With `expiredBefore` (whole epoch ms), only a lease that expired before
 * then is removed.
 */
export interface ReleaseInput {
  readonly name: string
  readonly owner: string
  readonly expiredBefore?: number | undefined
}

/** Errors of lease operations: the database's own, or input the table cannot hold. */
export type LeaseError = SqlError | LeaseInputError

/** The LeaseLock operations; see docs/behaviour.md §2. */
export interface LeaseLockApi {
  /** The table this lock lives in. */
  readonly table: string
  /**
   * The CREATE TABLE statements for this table and its token counter table, for migrations and
   * error messages (separated by `;`).
   */
  readonly createTableSql: string
  /**
   * Takes the lease if it is free, expired (strictly before `now`) or already ours.
   * True when we hold it afterwards. A missing table fails with the database error; a name,
   * owner, host, `now` or expiry the table cannot hold (or an expiry before `now`) fails with
   * `LeaseInputError` and changes nothing.
   */
  readonly tryAcquire: (input: AcquireInput) => Effect.Effect<boolean, LeaseError>
  /**
   * `tryAcquire` that also tells the lease's fencing token: `Some(token)` when we hold it
   * afterwards. Each acquisition (fresh, take-over, or after a release) bumps the name's counter
   * in the same statement or transaction, so its token is strictly greater than every earlier
   * token of that name, also after the row was deleted; a lease already ours keeps its token.
   * (`tryAcquire` takes the same path: every acquisition bumps.)
   */
  readonly tryAcquireToken: (input: AcquireInput) => Effect.Effect<Option.Option<bigint>, LeaseError>
  /**
   * Moves our lease's expiry; false when it is not (or no longer) ours. An expiry before `now`
   * (or not a whole epoch-ms value) fails with `LeaseInputError` and changes nothing.
   */
  readonly renew: (input: RenewInput) => Effect.Effect<boolean, LeaseError>
  /**
   * Removes our lease; false when it is not (or no longer) ours. A non-whole `expiredBefore`
   * fails with `LeaseInputError` and changes nothing.
   */
  readonly release: (input: ReleaseInput) => Effect.Effect<boolean, LeaseError>
  /** The current owner, whether or not the lease has expired. */
  readonly ownerOf: (name: string) => Effect.Effect<Option.Option<string>, LeaseError>
  /** The whole row, whether or not it has expired. */
  readonly read: (name: string) => Effect.Effect<Option.Option<LeaseRow>, LeaseError>
  /** Every row, ordered by name (for listings; a lease table is small). */
  readonly list: Effect.Effect<ReadonlyArray<LeaseRow>, SqlError>
  /** Whether the table exists, asked of the database catalog. */
  readonly tableExists: Effect.Effect<boolean, SqlError>
  /**
   * Creates the table and its token counter table (`<table>_tokens`) if missing; refuses inside a
   * transaction, where DDL would commit it.
   */
  readonly ensureTable: Effect.Effect<void, SqlError | LeaseTableInTransactionError>
}

/** The LeaseLock service. Build one per table with `LeaseLock.layer` or `LeaseLock.make`. */
export class LeaseLock extends Context.Tag("leasehold/LeaseLock")<LeaseLock, LeaseLockApi>() {}
