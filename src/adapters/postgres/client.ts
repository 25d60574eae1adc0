/**
 * PostgreSQL's SqlClient, the one module that loads @effect/sql-pg for a connection (the
 * wake-ups load node-postgres themselves). Reached through "leasehold/postgres" or, for a URL,
 * src/adapters/clients.ts, so that an app on another database never loads it.
 */
import { SqlError } from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import pg from "pg"
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
 * A `PgClient` layer (also a `SqlClient`) for a `postgres://` URL, on a pool of its own that
 * names repeated statements (./preparing.ts). The layer connects once when built, so a wrong URL
 * fails it at once, and ends the pool when its scope closes.
 */
export const clientLayer = (url: string | Redacted.Redacted, options: PostgresClientOptions = {}) =>
  PgClient.layerFromPool({
    acquire: Effect.acquireRelease(
      Effect.gen(function*() {
        const pool = new pg.Pool({
          connectionString: Redacted.isRedacted(url) ? Redacted.value(url) : url,
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
          catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
        }).pipe(Effect.tapError(() => Effect.promise(() => pool.end())))
        return pool
      }),
      (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
    )
  })

/** A `PgClient` layer over the app's own node-postgres `Pool`; the app keeps it (and ends it). */
export const poolLayer = (pool: unknown) => PgClient.layerFromPool({ acquire: Effect.succeed(pool as pg.Pool) })
