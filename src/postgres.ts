/**
 * leasehold/postgres: leasehold on PostgreSQL, with LISTEN/NOTIFY wake-ups. Needs the optional
 * peer dependencies `pg` and `@effect/sql-pg` installed; "leasehold" itself never loads them.
 *
 * ```ts
 * import * as Postgres from "leasehold/postgres"
 * const Services = Postgres.layer({ url: process.env.DATABASE_URL!, jobs: [SendEmail] })
 * ```
 */
import { Layer, type Redacted } from "effect"
import { clientLayer, type PostgresClientOptions } from "./adapters/postgres/client.ts"
import type { AnyJobType } from "./runtime/Job.ts"
import * as Leasehold from "./runtime/Leasehold.ts"

export { clientLayer, PgClient, type PostgresClientOptions, PreparingClient } from "./adapters/postgres/client.ts"

/** Options of `layer`: leasehold's, and where the database is. */
export interface PostgresOptions<Types extends ReadonlyArray<AnyJobType>>
  extends Leasehold.LeaseholdOptions<Types>, PostgresClientOptions
{
  /** A `postgres://` or `postgresql://` URL. */
  readonly url: string | Redacted.Redacted
}

/**
 * leasehold's services (`Leasehold.layer`) over a new PostgreSQL client for `url`, which the
 * layer also provides, so the app's own queries and transactions can share its pool.
 */
export const layer = <const Types extends ReadonlyArray<AnyJobType>>(options: PostgresOptions<Types>) =>
  Leasehold.layer(options).pipe(Layer.provideMerge(clientLayer(options.url, options)))
