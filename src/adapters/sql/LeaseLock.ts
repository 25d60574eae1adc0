/**
 * The SQL LeaseLock (docs/behaviour.md §2) on PostgreSQL, MySQL/MariaDB and SQLite: the port in
 * src/ports/LeaseLock.ts over the current `SqlClient`. Usable on its own by any code; the job
 * system builds its exclusive jobs and its migration lock on it.
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Layer, Option } from "effect"
import { LeaseTableInTransactionError } from "../../core/errors.ts"
import { decodeToken, type LeaseRow } from "../../core/lease.ts"
import {
  type AcquireInput,
  LeaseLock,
  type LeaseLockApi,
  type ReleaseInput,
  type RenewInput
} from "../../ports/LeaseLock.ts"
import { acquireRow, nowOr, resolveExpiry, validateLease, validateRelease } from "../leaseInput.ts"
import { isGaleraCluster } from "../mysql/galera.ts"
import { decodeLeaseRow } from "./decode.ts"
import { dialectOf } from "./dialects.ts"
import { type LeaseStatements, leaseStatements } from "./leaseStatements.ts"
import { eitherInTransaction, retryTransient } from "./retry.ts"
import type { Statement } from "./statement.ts"
import {
  type CommitOptions,
  inTransaction,
  lastRows,
  packedTransaction,
  readCommittedTransaction
} from "./transaction.ts"

// An acquisition's token (none: someone else holds the lease), and whether it bumped the counter.
interface Acquired {
  readonly token: Option.Option<bigint>
  readonly bumped: boolean
}
const notAcquired: Acquired = { token: Option.none(), bumped: false }

/**
 * Builds a LeaseLock over the current `SqlClient` for one table. The dialect is resolved
 * here, once. Library statements run without the app's name transforms.
 */
export const make = (options: { readonly table: string }): Effect.Effect<LeaseLockApi, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const dialect = dialectOf(sql)
    const galera = isGaleraCluster(sql)
    const statements: LeaseStatements = leaseStatements(dialect.syntax, dialect.lease, options.table)

    // MySQL/MariaDB: an acquisition's transaction runs at READ COMMITTED, so its reads after a
    // take-over that changed nothing see the latest owner, not the transaction's first snapshot.
    const transaction = <A, E>(effect: Effect.Effect<A, E>, options?: CommitOptions<A>) =>
      dialect.jobs.isolation === "readCommitted"
        ? readCommittedTransaction(sql, effect, options)
        : sql.withTransaction(effect)

    const rows = (s: Statement) =>
      sql.unsafe<Record<string, unknown>>(s.sql, s.params as Array<unknown>).withoutTransform
    const changed = (s: Statement) =>
      Effect.map(sql.unsafe(s.sql, s.params as Array<unknown>).raw, dialect.affectedRows)

    const ownerOf = (name: string) =>
      Effect.map(rows(statements.owner(name)), (r) => Option.map(Option.fromNullable(r[0]), (x) => String(x.lockowner)))

    const read = (name: string) =>
      Effect.map(rows(statements.read(name)), (r) => Option.map(Option.fromNullable(r[0]), decodeLeaseRow))

    const takeOver = (row: LeaseRow) => Effect.map(changed(statements.takeOver(row)), (n) => n > 0)

    // The holder's token (a lease already ours), or none when someone else holds it. A row
    // acquired before the counter existed has no token yet: it gets one now.
    const heldToken = (row: LeaseRow) => Effect.map(held(row), (h) => h.token)
    const held = (row: LeaseRow): Effect.Effect<Acquired, SqlError> =>
      Effect.flatMap(rows(statements.ownerAndToken(row.name)), (r) => {
        const current = r[0]
        if (current === undefined || String(current.lockowner) !== row.owner) return Effect.succeed(notAcquired)
        if (current.token !== null && current.token !== undefined) {
          return Effect.succeed({ token: Option.some(decodeToken(current.token)), bumped: false })
        }
        return bumped(row)
      })
    const bump = (name: string) =>
      Effect.gen(function*() {
        let last: ReadonlyArray<Record<string, unknown>> = []
        for (const s of statements.bumpToken(name)) last = yield* rows(s)
        return decodeToken(last[0]?.token)
      })
    const bumped = (row: LeaseRow) =>
      Effect.map(bump(row.name), (t): Acquired => ({ token: Option.some(t), bumped: true }))
    // A fresh acquisition (our write changed the row): bump the counter in the same transaction.
    const acquiredBumped = (got: boolean, row: LeaseRow) => got ? bumped(row) : held(row)

    // Each operation is safe to run again whole after a deadlock: its writes are fenced
    // (owner, expiry), a take-over re-reads what it needs, and an acquisition's counter bump
    // rolls back with it.
    const tryAcquireToken = (input: AcquireInput) =>
      Effect.flatMap(acquireRow(input), (row) => retryTransient(dialect, "lease acquire", acquireOnce(row)))
    const acquireOnce = (row: LeaseRow): Effect.Effect<Option.Option<bigint>, SqlError> => {
      const strategy = dialect.lease.acquire
      switch (strategy.kind) {
        case "upsertWithToken":
          // One statement: our new token, or the holder it saw.
          return Effect.flatMap(
            rows(strategy.statement(statements.quoted, statements.tokens, row)),
            (got) => tokenOrHolder(got[0], row)
          )
        case "bumpThenUpsert":
          return Effect.flatMap(rows(strategy.bump(statements.quoted, statements.tokens, row)), (bumped) => {
            if (bumped.length === 0) return heldToken(row)
            const token = decodeToken(bumped[0]!.token)
            return Effect.flatMap(
              rows(strategy.upsert(statements.quoted, statements.tokens, row, token)),
              (got) => got.length > 0 ? Effect.succeedSome(token) : heldToken(row)
            )
          })
        case "readThenInsert":
          if (!galera) return packedAcquire(strategy.packed(statements.quoted, statements.tokens, row), row)
          // A token counts only if its bump was committed: on a Galera cluster the commit is
          // checked (`mustCommitWrites`, src/adapters/sql/transaction.ts).
          return readThenInsertAcquire(row)
      }
    }
    const readThenInsertAcquire = (row: LeaseRow) =>
      Effect.map(
        transaction(Effect.flatMap(readThenInsert(row), (got) => acquiredBumped(got, row)), {
          mustCommitWrites: (a) => a.bumped
        }),
        (a) => a.token
      )
    // One round trip (src/adapters/sql/leaseDialect.ts `AcquireStrategy`): its last row says whether it
    // took the lease, and with which token.
    const packedAcquire = (statement: Statement, row: LeaseRow) =>
      Effect.flatMap(
        packedTransaction(sql, statement),
        (results) => tokenOrHolder(lastRows(results)[0], row)
      )
    // An acquisition's row (`got`, `lockowner`, `token`): our new token; none (no row, or another
    // holder); or a lease already ours, with its token. One acquired before the counter existed
    // (no token yet) gets one now, on MySQL in a transaction of its own.
    const tokenOrHolder = (
      r: Record<string, unknown> | undefined,
      row: LeaseRow
    ): Effect.Effect<Option.Option<bigint>, SqlError> => {
      if (r === undefined || (Number(r.got) !== 1 && String(r.lockowner) !== row.owner)) return Effect.succeedNone
      if (r.token === null || r.token === undefined) {
        return dialect.lease.acquire.kind === "readThenInsert" ? readThenInsertAcquire(row) : heldToken(row)
      }
      return Effect.succeedSome(decodeToken(r.token))
    }
    // Read first. The INSERT is only tried when no row exists, so the plain INSERT rarely meets a
    // duplicate, and a held lease costs one read. True when our write took the lease.
    // A deadlock (on Galera also a write set from another node) rolls the whole transaction back;
    // going on would run the take-over, the counter bump and its read each committing on its own,
    // so two acquisitions could read one token, and a retry would find the lease already ours and
    // keep the previous holder's token. It fails instead, and `retryTransient` runs it again whole.
    const readThenInsert = (row: LeaseRow) =>
      Effect.gen(function*() {
        const current = yield* ownerOf(row.name)
        if (Option.isSome(current)) return yield* takeOver(row)
        const inserted = yield* eitherInTransaction(dialect, changed(statements.insert(row)))
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

    const tokensExist = Effect.map(rows(dialect.lease.tableExists(statements.tokensTable)), (r) => r.length > 0)
    const createTableSql = `${statements.createTable.sql};\n${statements.createTokensTable.sql}`
    const ensureTable = Effect.gen(function*() {
      const missing = [
        ...((yield* tableExists) ? [] : [statements.createTable]),
        ...((yield* tokensExist) ? [] : [statements.createTokensTable])
      ]
      if (missing.length === 0) return
      if (yield* inTransaction) {
        return yield* Effect.fail(
          new LeaseTableInTransactionError({ table: options.table, createTable: createTableSql })
        )
      }
      yield* Effect.forEach(missing, rows, { discard: true })
    })

    const list = Effect.map(rows(statements.list), (r) => r.map(decodeLeaseRow))

    return LeaseLock.of({
      table: options.table,
      createTableSql,
      tryAcquire: (input) => Effect.map(tryAcquireToken(input), Option.isSome),
      tryAcquireToken,
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
