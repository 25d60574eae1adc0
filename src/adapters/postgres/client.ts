/**
 * PostgreSQL's SqlClient, the one module that loads @effect/sql-pg for a connection (the
 * wake-ups load node-postgres themselves). Reached through "leasehold/postgres" or, for a URL,
 * src/adapters/clients.ts, so that an app on another database never loads it.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import type pg from "pg"

export { PgClient }

/** Options of `clientLayer`. */
export interface PostgresClientOptions {
  /** Pool size (default 10). */
  readonly maxConnections?: number | undefined
}

/** A `PgClient` layer (also a `SqlClient`) for a `postgres://` URL. */
export const clientLayer = (url: string | Redacted.Redacted, options: PostgresClientOptions = {}) =>
  PgClient.layer({
    url: typeof url === "string" ? Redacted.make(url) : url,
    maxConnections: options.maxConnections ?? 10,
    connectTimeout: "10 seconds"
  })

/** A `PgClient` layer over the app's own node-postgres `Pool`; the app keeps it (and ends it). */
export const poolLayer = (pool: unknown) => PgClient.layerFromPool({ acquire: Effect.succeed(pool as pg.Pool) })
