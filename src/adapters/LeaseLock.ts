/**
 * LeaseLock: a named, expiring, owner-fenced lock in a table of the application's own
 * database (docs/behaviour.md §2). Usable on its own by any code; the job system builds its
 * exclusive jobs and its migration lock on it.
 *
 * The SQL store (`make`) runs the dialect's statements through a `SqlClient`; the in-memory
 * store (`./memory.ts`) makes the same decisions over a `Ref` and is the model the SQL stores
 * must agree with.
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { LeaseInputError, LeaseTableInTransactionError } from "../core/errors.ts"
import { decodeEpochMs, leaseInputProblem, type LeaseRow } from "../core/lease.ts"
import { dialectOf } from "./dialects.ts"
import { retryTransient } from "./retry.ts"
import { type LeaseStatements, leaseStatements, type Statement } from "./sql.ts"
import { inTransaction } from "./transaction.ts"

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
  /** The CREATE TABLE statement for this table, for migrations and error messages. */
  readonly createTableSql: string
  /**
   * Takes the lease if it is free, expired (strictly before `now`) or already ours.
   * True when we hold it afterwards. A missing table fails with the database error; a name,
   * owner, host, `now` or expiry the table cannot hold (or an expiry before `now`) fails with
   * `LeaseInputError` and changes nothing.
   */
  readonly tryAcquire: (input: AcquireInput) => Effect.Effect<boolean, LeaseError>
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
  /** Creates the table if missing; refuses inside a transaction, where DDL would commit it. */
  readonly ensureTable: Effect.Effect<void, SqlError | LeaseTableInTransactionError>
}

/** The LeaseLock service. Build one per table with `LeaseLock.layer` or `LeaseLock.make`. */
export class LeaseLock extends Context.Tag("leasehold/LeaseLock")<LeaseLock, LeaseLockApi>() {}

/** Checks name, owner and host against what the table can hold. */
export const validateLease = (
  input: { readonly name: string; readonly owner?: string; readonly host?: string | null | undefined }
): Effect.Effect<void, LeaseInputError> => {
  const problem = leaseInputProblem("name", input.name) ??
    (input.owner === undefined ? undefined : leaseInputProblem("owner", input.owner)) ??
    (input.host === undefined || input.host === null ? undefined : leaseInputProblem("host", input.host))
  if (problem === undefined) return Effect.void
  const field = problem.startsWith("lease name") ? "name" : problem.startsWith("lease owner") ? "owner" : "host"
  return Effect.fail(new LeaseInputError({ field, reason: problem }))
}

/**
 * Resolves `expiresAt` from an absolute expiry or a TTL. Refuses a value that is not a whole
 * epoch-ms value, and a negative TTL or an expiry before `now` (the lease would be written
 * expired already); a TTL of 0 (expiring exactly at `now`) is allowed.
 */
export const resolveExpiry = (expiry: LeaseExpiry, now: number): Effect.Effect<number, LeaseInputError> => {
  if ("ttlMs" in expiry && expiry.ttlMs < 0) {
    return Effect.fail(new LeaseInputError({ field: "expiresAt", reason: `ttlMs ${expiry.ttlMs} is negative: the lease would be expired already` }))
  }
  const at = "expiresAt" in expiry ? expiry.expiresAt : now + expiry.ttlMs
  if (!Number.isSafeInteger(at)) {
    return Effect.fail(new LeaseInputError({ field: "expiresAt", reason: `not a whole epoch-ms value: ${at}` }))
  }
  if (at < now) {
    return Effect.fail(new LeaseInputError({ field: "expiresAt", reason: `${at} is before now (${now}): the lease would be expired already` }))
  }
  return Effect.succeed(at)
}

/** Validates an acquire and builds the row it would write, with `now` from the caller or the Clock. */
export const acquireRow = (input: AcquireInput): Effect.Effect<LeaseRow, LeaseInputError> =>
  Effect.gen(function*() {
    yield* validateLease(input)
    const now = yield* nowOr(input.now)
    return { name: input.name, owner: input.owner, host: input.host ?? null, acquiredAt: now, expiresAt: yield* resolveExpiry(input, now) }
  })

/** `now` from the caller (a whole epoch-ms value, else `LeaseInputError`), or from Effect's Clock. */
export const nowOr = (now: number | undefined): Effect.Effect<number, LeaseInputError> =>
  now === undefined
    ? Clock.currentTimeMillis
    : Number.isSafeInteger(now)
    ? Effect.succeed(now)
    : Effect.fail(new LeaseInputError({ field: "now", reason: `not a whole epoch-ms value: ${now}` }))

/** Checks a release: name and owner as `validateLease`, and `expiredBefore` a whole epoch-ms value. */
export const validateRelease = (input: ReleaseInput): Effect.Effect<void, LeaseInputError> =>
  Effect.zipRight(
    validateLease(input),
    input.expiredBefore === undefined || Number.isSafeInteger(input.expiredBefore)
      ? Effect.void
      : Effect.fail(new LeaseInputError({ field: "expiredBefore", reason: `not a whole epoch-ms value: ${input.expiredBefore}` }))
  )

export { inTransaction }

/** Decodes a lease row from any driver (BIGINT as string, number or bigint). */
export const decodeLeaseRow = (row: Record<string, unknown>): LeaseRow => ({
  name: String(row.lockname),
  owner: String(row.lockowner),
  host: row.lockhost === null || row.lockhost === undefined ? null : String(row.lockhost),
  acquiredAt: decodeEpochMs(row.acquiredat),
  expiresAt: decodeEpochMs(row.expiresat)
})

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
      Effect.gen(function*() {
        const row = yield* acquireRow(input)
        if (statements.acquire !== undefined) {
          // PostgreSQL, SQLite: insert or take over in one statement; a row back means we got it.
          if ((yield* rows(statements.acquire(row))).length > 0) return true
          // Held and live: already ours (re-entrant, left unchanged) or someone else's.
          return Option.contains(yield* ownerOf(row.name), row.owner)
        }
        // MySQL: read first. The INSERT is only tried when no row exists, so the plain INSERT
        // rarely meets a duplicate, and a held lease costs one read.
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
        return (yield* retryTransient(dialect, "lease renew", changed(statements.renew(input.name, input.owner, expiresAt)))) > 0
      })

    const release = (input: ReleaseInput) =>
      Effect.zipRight(
        validateRelease(input),
        Effect.map(retryTransient(dialect, "lease release", changed(statements.release(input.name, input.owner, input.expiredBefore))), (n) => n > 0)
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
