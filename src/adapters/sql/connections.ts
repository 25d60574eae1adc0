/**
 * How many connections a `SqlClient` can hold at once, for the enqueues' share of them
 * (src/core/connections.ts): what a client layer of leasehold's registered, else the pool size in
 * the app's `PgClient` or `MysqlClient` configuration, else one for SQLite (a single connection)
 * and the drivers' default for the others.
 */
import type { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Option } from "effect"
import { DEFAULT_POOL_SIZE } from "../../core/connections.ts"
import type { Dialect } from "./dialect.ts"

const sizes = new WeakMap<SqlClient, number>()

/** Records the pool size of a client a leasehold client layer built (over a pool it knows). */
export const registerPoolSize = (client: SqlClient, size: number): void => {
  if (Number.isFinite(size) && size >= 1) sizes.set(client, Math.floor(size))
}

/**
 * The clients' configurations, found by their tags' keys so that this module loads neither
 * driver package (as src/adapters/wakeups.ts finds the `PgClient`).
 */
interface Configured {
  readonly config: { readonly maxConnections?: number | undefined }
}
const clientTags = [
  Context.GenericTag<Configured>("@effect/sql-pg/PgClient"),
  Context.GenericTag<Configured>("@effect/sql-mysql2/MysqlClient")
]

/** The pool size of `client` (see the module's comment). */
export const poolSizeOf = (client: SqlClient, dialect: Dialect): Effect.Effect<number> =>
  Effect.map(Effect.context<never>(), (context) => {
    const registered = sizes.get(client)
    if (registered !== undefined) return registered
    if (dialect.inProcess) return 1
    for (const tag of clientTags) {
      const configured = Option.getOrUndefined(Context.getOption(context, tag))?.config.maxConnections
      if (configured !== undefined && configured >= 1) return configured
    }
    return DEFAULT_POOL_SIZE
  })
