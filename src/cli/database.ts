/**
 * The command line's database: a URL (`postgres://…`, `mysql://…`/`mariadb://…`, or an SQLite
 * file) becomes a SqlClient layer (src/adapters/clients.ts, which loads only the driver in use),
 * and the store services sit on it under the table prefix. Credentials in the URL never reach an
 * error line (src/infra/credentials.ts). Loaded only when a command runs (src/cli/commands/).
 */
import type { SqlClient } from "@effect/sql/SqlClient"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { existsSync } from "node:fs"
import { clientLayerForUrl } from "../adapters/clients.ts"
import * as SqlJobStore from "../adapters/sql/JobStore.ts"
import { maskCredentials } from "../infra/credentials.ts"
import type { JobLeases, JobStore } from "../ports/JobStore.ts"
import type { ScheduleStore } from "../ports/ScheduleStore.ts"
import { schemaGap, schemaGapMessage } from "../dashboard/unmigrated.ts"
import * as Leasehold from "../runtime/Leasehold.ts"
import { errorChain } from "../adapters/schemaErrors.ts"
import { databaseTarget } from "./databaseUrl.ts"
import { CliError, rootMessage } from "./format.ts"

const connectFailed = (url: string) => (e: unknown) =>
  new CliError({ message: `cannot connect to the database (${maskCredentials(url)}): ${rootMessage(e)}` })

/** What a command may do to a database that is not there yet. */
export interface Access {
  /**
   * Whether a missing SQLite file may be created (`migrate`, `worker`, `enqueue`); every other
   * command refuses it rather than leave an empty file behind a typo.
   */
  readonly create: boolean
}

/**
 * The URL checked before anything connects (./databaseUrl.ts): a typo of a server URL, an unknown
 * `scheme://` or a bare word is refused, and so is a missing SQLite file unless `access.create`.
 */
const checkUrl = (url: string, access: Access): Effect.Effect<void, CliError> => {
  const target = databaseTarget(url)
  if (target._tag === "Refused") return Effect.fail(new CliError({ message: target.message }))
  if (target._tag === "Server") return Effect.void
  const file = target.file
  if (access.create || file === "" || file === ":memory:" || existsSync(file)) return Effect.void
  return Effect.fail(
    new CliError({
      message: `the SQLite database file ${file} does not exist (check --database-url or LEASEHOLD_DATABASE_URL; ` +
        "`leasehold migrate` creates it)"
    })
  )
}

/** The SqlClient layer for a database URL; an unreachable database fails it at once. */
export const databaseLayer = (url: string, access: Access): Layer.Layer<SqlClient, CliError> =>
  Layer.unwrapEffect(Effect.as(checkUrl(url, access), Layer.mapError(clientLayerForUrl(url), connectFailed(url))))

/**
 * Connection errors that waiting cannot mend: an unknown host, a database that does not exist,
 * a refused login, a driver that is not installed, a URL the driver cannot read. Anything else
 * (a refused or reset connection, a timeout, a server starting up or shutting down, a DNS server
 * that did not answer) may heal, and the worker waits for it.
 */
const PERMANENT = new Set<unknown>([
  "ENOTFOUND", // no such host (EAI_AGAIN, a resolver that did not answer, may heal)
  "ERR_INVALID_URL",
  "3D000", // PostgreSQL invalid_catalog_name: no such database
  "28P01", // PostgreSQL invalid_password
  "28000", // PostgreSQL invalid_authorization_specification: no such role, refused by pg_hba.conf
  "ER_BAD_DB_ERROR", // MySQL 1049: unknown database
  "ER_ACCESS_DENIED_ERROR", // MySQL 1045
  "ER_ACCESS_DENIED_NO_PASSWORD_ERROR", // MySQL 1698
  "ER_DBACCESS_DENIED_ERROR", // MySQL 1044
  "ER_NOT_SUPPORTED_AUTH_MODE", // MySQL 1251
  "DriverNotInstalledError"
])

/** Whether waiting for the database cannot help with this connection error. */
export const isPermanentConnectError = (e: unknown): boolean =>
  errorChain(e).some((link) => PERMANENT.has(link.tag) || link.codes.some((code) => PERMANENT.has(code)))

/** Carries a permanent connection error past the retries, as a defect (retries see only failures). */
class Permanent {
  constructor(readonly error: unknown) {}
}

/**
 * The worker's SqlClient layer: a PostgreSQL or MySQL/MariaDB server that cannot be reached is
 * waited for (each failed attempt logged as a warning, retried with backoff up to 30 s apart;
 * see `Leasehold.retryConnect`), unless the error is one waiting cannot mend
 * (`isPermanentConnectError`): that fails at once, with one line. An SQLite file has no server
 * to wait for: it fails at once.
 */
export const workerDatabaseLayer = (url: string): Layer.Layer<SqlClient, CliError> => {
  if (databaseTarget(url)._tag !== "Server") return databaseLayer(url, { create: true })
  const attempt = Layer.catchAll(
    clientLayerForUrl(url),
    (e) => isPermanentConnectError(e) ? Layer.die(new Permanent(e)) : Layer.fail(e)
  )
  const waited = Layer.catchAllCause(
    Leasehold.retryConnect(attempt, { label: maskCredentials(url) }),
    (cause) => {
      const permanent = Option.filter(Cause.dieOption(cause), (d): d is Permanent => d instanceof Permanent)
      return Option.isSome(permanent)
        ? Layer.fail(connectFailed(url)(permanent.value.error))
        : Layer.failCause(Cause.map(cause, connectFailed(url)))
    }
  )
  return Layer.unwrapEffect(Effect.as(checkUrl(url, { create: true }), waited))
}

/**
 * Runs `effect` with the store services under `prefix`, on the database at `databaseUrl`;
 * `access` says whether a missing SQLite file may be created. Tables that are not there (or
 * older than the code) fail it with one line saying so and how to run the migrations
 * (src/dashboard/unmigrated.ts), whatever the command read or wrote.
 */
export const withStore = <A, E, R>(
  c: { readonly databaseUrl: string; readonly prefix: string },
  access: Access,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | CliError, Exclude<R, JobStore | JobLeases | ScheduleStore | SqlClient>> =>
  Effect.provide(
    effect,
    SqlJobStore.layer({ prefix: c.prefix }).pipe(Layer.provideMerge(databaseLayer(c.databaseUrl, access)))
  ).pipe(Effect.mapError((e) => {
    const gap = e instanceof CliError ? undefined : schemaGap(e)
    return gap === undefined ? e : new CliError({ message: schemaGapMessage(gap, c.prefix) })
  }))
