/**
 * PostgreSQL's SqlClient, the one module that loads @effect/sql-pg for a connection (the
 * wake-ups load node-postgres themselves). Reached through "leasehold/postgres" or, for a URL,
 * src/adapters/clients.ts, so that an app on another database never loads it.
 */
import { SqlError } from "@effect/sql/SqlError"
import { SqlClient } from "@effect/sql/SqlClient"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import pg from "pg"
import { DEFAULT_POOL_SIZE } from "../../core/connections.ts"
import type { DatabaseUrlMismatchError } from "../../core/errors.ts"
import { connectError } from "../connectErrors.ts"
import { urlMismatch } from "../databaseUrls.ts"
import { registerPoolSize } from "../sql/connections.ts"
import { type DirectRunner, registerDirect } from "../sql/direct.ts"
import { PreparingClient } from "./preparing.ts"

export { PgClient }
export { PreparingClient } from "./preparing.ts"

/** Options of `clientLayer`. */
export interface PostgresClientOptions {
  /** Pool size (default 10). */
  readonly maxConnections?: number | undefined
  /**
   * Send repeated statements as named prepared statements (default true; ./preparing.ts). Set
   * false behind a transaction-mode connection pooler that cannot keep them (PgBouncer before 1.21).
   */
  readonly preparedStatements?: boolean | undefined
}

/**
 * Runs one statement on a connection of `pool`, as @effect/sql-pg would outside a transaction
 * (the same errors, with the driver's error as their cause), in one step: the direct path of
 * src/adapters/sql/direct.ts. The connection goes back to the pool when the reply comes, even
 * after an interruption: the statement is left to finish (as one cancelled may have), unread.
 */
const directRunner = (pool: pg.Pool): DirectRunner => ({
  run: (text, params, raw) =>
    Effect.async<unknown, SqlError>((resume) => {
      let done = false
      const finish = (effect: Effect.Effect<unknown, SqlError>) => {
        if (done) return
        done = true
        resume(effect)
      }
      pool.connect((cause, client, release) => {
        if (cause !== undefined && cause !== null || client === undefined) {
          return finish(Effect.fail(new SqlError({ cause, message: "Failed to acquire connection" })))
        }
        // Given back once: dropped from the pool when it broke under the statement.
        let released = false
        const onError = (error: Error) => {
          released = true
          release(error)
          finish(Effect.fail(new SqlError({ cause: error, message: "Connection error" })))
        }
        client.once("error", onError)
        const replied = (error: Error | null, result: pg.QueryResult | undefined) => {
          client.off("error", onError)
          // A statement's own error (severity ERROR: a constraint, a deadlock) leaves the
          // connection usable; a FATAL one (the server ended the session) or one from the socket
          // does not, and goes with it, so that the next statement is not given a dead connection.
          if (!released) {
            released = true
            release(error === null || (error as { severity?: unknown }).severity === "ERROR" ? undefined : error)
          }
          if (error !== null || result === undefined) {
            finish(Effect.fail(new SqlError({ cause: error, message: "Failed to execute statement" })))
          } else finish(Effect.succeed(raw ? result : result.rows ?? []))
        }
        // A call the driver refuses at once (it throws) is answered like a failed statement, so
        // its connection still goes back.
        try {
          client.query(text, params as Array<unknown>, replied)
        } catch (error) {
          replied(error instanceof Error ? error : new Error(String(error)), undefined)
        }
      })
      // No canceller: an interrupted fiber ignores a later resume, and a canceller costs an
      // interruption handler (three more steps) per statement.
    })
})

/**
 * `PgClient.layerFromPool` over `pool`, with the direct path for leasehold's stores and the pool's
 * size (the enqueues' share of it: src/core/connections.ts) registered.
 */
const overPool = (pool: pg.Pool) =>
  PgClient.layerFromPool({ acquire: Effect.succeed(pool) }).pipe(
    Layer.tap((context) =>
      Effect.sync(() => {
        const client = Context.get(context, SqlClient)
        registerDirect(client, directRunner(pool))
        registerPoolSize(client, pool.options.max ?? DEFAULT_POOL_SIZE)
      })
    )
  )

/**
 * A `PgClient` layer (also a `SqlClient`) for a `postgres://` URL, on a pool of its own that
 * names repeated statements (./preparing.ts). The layer connects once when built, so a wrong URL
 * fails it at once: a URL of another database with `DatabaseUrlMismatchError` before any
 * connection, a server that cannot be reached with a `SqlError` saying where it tried (password
 * masked) and the driver's reason. It ends the pool when its scope closes.
 */
export const clientLayer = (
  url: string | Redacted.Redacted,
  options: PostgresClientOptions = {}
): Layer.Layer<PgClient.PgClient | SqlClient, SqlError | DatabaseUrlMismatchError> => {
  const text = Redacted.isRedacted(url) ? Redacted.value(url) : url
  const mismatch = urlMismatch("PostgreSQL", text)
  if (mismatch !== undefined) return Layer.fail(mismatch)
  return Layer.unwrapScoped(Effect.map(
    Effect.acquireRelease(
      Effect.gen(function*() {
        const pool = new pg.Pool({
          connectionString: text,
          max: options.maxConnections ?? 10,
          connectionTimeoutMillis: 10_000,
          application_name: "leasehold",
          ...(options.preparedStatements === false ? {} : { Client: PreparingClient })
        })
        // An idle client's error (the server went away) is met again by the next query; unheard,
        // it would end the process.
        pool.on("error", () => {})
        yield* Effect.tryPromise({
          try: () => pool.query("SELECT 1"),
          catch: (cause) => connectError(text, cause)
        }).pipe(Effect.tapError(() => Effect.promise(() => pool.end())))
        return pool
      }),
      (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
    ),
    overPool
  ))
}

/** A `PgClient` layer over the app's own node-postgres `Pool`; the app keeps it (and ends it). */
export const poolLayer = (pool: unknown) => overPool(pool as pg.Pool)
