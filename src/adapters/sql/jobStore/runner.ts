/**
 * The statement runner every part of the SQL JobStore shares (./insert.ts, ./claim.ts,
 * ./finish.ts, …): the dialect and tables resolved once for a client and a table prefix, and how
 * a statement is sent. Statements run without the app's name transforms, straight to the pool
 * where the client offers it (../direct.ts), else through @effect/sql, and inside the caller's
 * transaction when there is one (so an enqueue joins it).
 */
import type { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Option } from "effect"
import type { JobRow } from "../../../core/model.ts"
import { type TableNames, tableNames } from "../../../core/tables.ts"
import { isGaleraCluster } from "../../mysql/galera.ts"
import { decodeJobRow } from "../decode.ts"
import type { Dialect, JobDialect } from "../dialect.ts"
import { dialectOf } from "../dialects.ts"
import { directOf } from "../direct.ts"
import { jobStatements } from "../jobStatements.ts"
import { retryReconnecting, retryTransient } from "../retry.ts"
import type { Statement } from "../statement.ts"
import { inTransactionWith, NEXT_READ_COMMITTED, readCommittedTransaction } from "../transaction.ts"

/** The job and host statements of one dialect and one table prefix (../jobStatements.ts). */
export type JobStatements = ReturnType<typeof jobStatements>

/** One SQL JobStore's dialect, tables and statements, and the ways it sends a statement. */
export interface StoreRunner {
  /** The client without the app's name transforms: what every statement runs on. */
  readonly sql: SqlClient.SqlClient
  readonly dialect: Dialect
  /** The dialect's job statements and strategies (`dialect.jobs`). */
  readonly jobDialect: JobDialect
  readonly tables: TableNames
  readonly statements: JobStatements
  /**
   * The client spreads over a MariaDB Galera cluster (../../mysql/galera.ts): nothing is sent
   * packed there (a packed transaction's commit cannot be checked), claims and finishes go in steps.
   */
  readonly galeraCluster: boolean
  /** A statement's rows. */
  readonly rows: (st: Statement) => Effect.Effect<ReadonlyArray<Record<string, unknown>>, SqlError>
  /** How many rows a statement changed (the dialect's `affectedRows`). */
  readonly changed: (st: Statement) => Effect.Effect<number, SqlError>
  /** A statement's first row, decoded. */
  readonly first: <A>(
    st: Statement,
    decode: (r: Record<string, unknown>) => A
  ) => Effect.Effect<Option.Option<A>, SqlError>
  /** A statement's rows as job rows. */
  readonly jobs: (st: Statement) => Effect.Effect<ReadonlyArray<JobRow>, SqlError>
  /** Claims and job-row writes run at READ COMMITTED (the dialect's `isolation`). */
  readonly readCommitted: boolean
  /** A job-row write, at the dialect's isolation: how many rows it changed. */
  readonly write: (st: Statement) => Effect.Effect<number, SqlError>
  /** A transaction the store opens itself, at the dialect's isolation. */
  readonly transaction: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E | SqlError>
  /**
   * A guarded job-row write on its own (fenced on a claim token or a status): whether it wrote.
   * A deadlock victim is sent again at once (../retry.ts).
   */
  readonly guardedWrite: (purpose: string, st: Statement) => Effect.Effect<boolean, SqlError>
  /**
   * `effect` sent again after a lost connection as well as after a deadlock (../retry.ts
   * `retryReconnecting`): only for writes fenced against running twice, as finish's all are (on
   * the claim token, the lease owner). A lost connection leaves a statement run or not run.
   */
  readonly retryingReconnect: <A>(
    purpose: string,
    detail: string,
    effect: Effect.Effect<A, SqlError>
  ) => Effect.Effect<A, SqlError>
}

/**
 * The runner of the SQL JobStore over `client` for one table prefix. The dialect is resolved
 * here, once.
 */
export const makeStoreRunner = (client: SqlClient.SqlClient, prefix: string | undefined): StoreRunner => {
  const sql = client.withoutTransforms()
  const dialect = dialectOf(sql)
  const tables = tableNames(prefix)
  const statements = jobStatements(dialect, tables)
  const jobDialect = dialect.jobs
  // Straight to the pool where the client offers it (../direct.ts), else through @effect/sql.
  const direct = directOf(client)

  const rows = (st: Statement): Effect.Effect<ReadonlyArray<Record<string, unknown>>, SqlError> => {
    const params = st.params as Array<unknown>
    return direct(st.sql, params, false, () => sql.unsafe<Record<string, unknown>>(st.sql, params).withoutTransform)
  }
  const changed = (st: Statement) => {
    const params = st.params as Array<unknown>
    return Effect.map(direct(st.sql, params, true, () => sql.unsafe(st.sql, params).raw), dialect.affectedRows)
  }
  const first = <A>(st: Statement, decode: (r: Record<string, unknown>) => A) =>
    Effect.map(rows(st), (r) => Option.map(Option.fromNullable(r[0]), decode))
  const jobs = (st: Statement) => Effect.map(rows(st), (r) => r.map(decodeJobRow))

  // MySQL/MariaDB: claims and job-row writes run at READ COMMITTED, which takes no gap locks,
  // so a claim and a completion cannot deadlock on each other's index gaps (docs/retries.md).
  // A write on its own is one round trip: the SET applies to the statement's own transaction.
  const readCommitted = jobDialect.isolation === "readCommitted"
  const write = (st: Statement): Effect.Effect<number, SqlError> =>
    readCommitted
      ? inTransactionWith((inside) =>
        inside
          ? changed(st)
          : Effect.map(
            sql.unsafe(`${NEXT_READ_COMMITTED}; ${st.sql}`, st.params as Array<unknown>).unprepared,
            (results) => dialect.affectedRows(results[results.length - 1])
          )
      )
      : changed(st)
  const transaction = <A, E>(effect: Effect.Effect<A, E>) =>
    readCommitted ? readCommittedTransaction(sql, effect) : sql.withTransaction(effect)

  const guardedWrite = (purpose: string, st: Statement) =>
    retryTransient(
      dialect,
      purpose,
      Effect.map(write(st), (n) => n > 0)
    )
  const retryingReconnect = <A>(purpose: string, detail: string, effect: Effect.Effect<A, SqlError>) =>
    retryReconnecting(dialect, purpose, detail, effect)

  return {
    sql,
    dialect,
    jobDialect,
    tables,
    statements,
    galeraCluster: isGaleraCluster(sql),
    rows,
    changed,
    first,
    jobs,
    readCommitted,
    write,
    transaction,
    guardedWrite,
    retryingReconnect
  }
}
