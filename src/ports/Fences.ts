/**
 * The Fences port (docs/behaviour.md §2, "Fencing tokens"): guarded writes. A fences table keeps,
 * per resource, the highest fencing token that has written to it; a write carrying a lower token
 * (a lease holder that was paused past its lease and taken over) is refused before it runs. The
 * SQL implementation is src/adapters/sql/Fences.ts; the in-memory model is
 * src/adapters/memory/Fences.ts.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Context, type Effect, type Option } from "effect"
import type { FenceInputError, LeaseTableInTransactionError, StaleTokenError } from "../core/errors.ts"

/** What a guarded write writes to, and the fencing token of the lease it holds. */
export interface GuardInput {
  /** Any name for the thing written (at most 255 characters): writes to one resource are fenced together. */
  readonly resource: string
  /** The writer's fencing token (`HeldLease.fencingToken`, `LeaseLock.tryAcquireToken`). */
  readonly token: bigint
}

/** The Fences operations. */
export interface FencesApi {
  /** The fences table. */
  readonly table: string
  /** Its CREATE TABLE statement, for migrations and error messages. */
  readonly createTableSql: string
  /**
   * Runs `write` only if `token` is at least the highest token `resource` has seen, and records
   * it as the highest, atomically, in one transaction with `write` (the caller's own when it runs
   * inside one; a failed `write` rolls the record back too). Otherwise fails with
   * `StaleTokenError` and `write` does not run. A resource or token the table cannot hold fails
   * with `FenceInputError` and changes nothing. In a transaction of its own, a guard the database
   * rolled back (a deadlock; on Galera, a certification failure at COMMIT) runs again whole,
   * `write` included; inside the caller's transaction the `SqlError` reaches the caller.
   */
  readonly guard: <A, E, R>(
    input: GuardInput,
    write: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | StaleTokenError | FenceInputError | SqlError, R>
  /** The highest token `resource` has seen, or none before its first guarded write. */
  readonly highest: (resource: string) => Effect.Effect<Option.Option<bigint>, FenceInputError | SqlError>
  /** Whether the table exists, asked of the database catalog. */
  readonly tableExists: Effect.Effect<boolean, SqlError>
  /**
   * Creates the table if missing; refuses inside a transaction, where DDL would commit it, with
   * the `LeaseTableInTransactionError` a LeaseLock's table gives.
   */
  readonly ensureTable: Effect.Effect<void, SqlError | LeaseTableInTransactionError>
}

/** The Fences service. Build one per table with `Fences.layer` or `Fences.make`. */
export class Fences extends Context.Tag("leasehold/Fences")<Fences, FencesApi>() {}
