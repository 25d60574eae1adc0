/**
 * The command line's database: a URL (`postgres://…`, `mysql://…`/`mariadb://…`, or an SQLite
 * file path) becomes a SqlClient layer (src/adapters/clients.ts, which loads only the driver in
 * use), and the store services sit on it under the table prefix. Credentials in the URL never
 * reach an error line (src/core/credentials.ts).
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { clientLayerForUrl, isMysqlUrl, isPostgresUrl } from "../adapters/clients.ts"
import * as SqlJobStore from "../adapters/sql/JobStore.ts"
import { maskCredentials } from "../core/credentials.ts"
import type { JobLeases, JobStore } from "../ports/JobStore.ts"
import * as Leasehold from "../runtime/Leasehold.ts"
import { CliError, rootMessage } from "./format.ts"

const connectFailed = (url: string) => (e: unknown) =>
  new CliError({ message: `cannot connect to the database (${maskCredentials(url)}): ${rootMessage(e)}` })

/** The SqlClient layer for a database URL; an unreachable database fails it at once. */
export const databaseLayer = (url: string): Layer.Layer<SqlClient.SqlClient, CliError> =>
  Layer.mapError(clientLayerForUrl(url), connectFailed(url))

/**
 * The worker's SqlClient layer: a PostgreSQL or MySQL/MariaDB server that cannot be reached is
 * waited for (each failed attempt logged as a warning, retried with backoff up to 30 s apart;
 * see `Leasehold.retryConnect`). An SQLite file has no server to wait for: it fails at once.
 */
export const workerDatabaseLayer = (url: string): Layer.Layer<SqlClient.SqlClient, CliError> =>
  isPostgresUrl(url) || isMysqlUrl(url)
    ? Layer.mapError(
      Leasehold.retryConnect(clientLayerForUrl(url), { label: maskCredentials(url) }),
      connectFailed(url)
    )
    : databaseLayer(url)

/** Runs `effect` with the store services under `prefix`, on the database at `databaseUrl`. */
export const withStore = <A, E, R>(
  c: { readonly databaseUrl: string; readonly prefix: string },
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | CliError, Exclude<R, JobStore | JobLeases | SqlClient.SqlClient>> =>
  Effect.provide(effect, SqlJobStore.layer({ prefix: c.prefix }).pipe(Layer.provideMerge(databaseLayer(c.databaseUrl))))
