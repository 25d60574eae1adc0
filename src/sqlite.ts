/**
 * leasehold/sqlite: leasehold on an embedded SQLite file. Needs the optional peer dependencies
 * `better-sqlite3` and `@effect/sql-sqlite-node` installed; "leasehold" itself never loads them.
 *
 * ```ts
 * import * as Sqlite from "leasehold/sqlite"
 * const Services = Sqlite.layer({ filename: "jobs.db", jobs: [SendEmail] })
 * ```
 */
import { Layer } from "effect"
import { clientLayer } from "./adapters/sqlite/client.ts"
import type { AnyJobType } from "./runtime/Job.ts"
import * as Leasehold from "./runtime/Leasehold.ts"

export { clientLayer, SqliteClient } from "./adapters/sqlite/client.ts"

/** Options of `layer`: leasehold's, and the database file. */
export interface SqliteOptions<Types extends ReadonlyArray<AnyJobType>> extends Leasehold.LeaseholdOptions<Types> {
  /** The database file, created if missing (`:memory:` for a private in-memory database). */
  readonly filename: string
}

/**
 * leasehold's services (`Leasehold.layer`) over a new SQLite client on `filename`, which the
 * layer also provides, so the app's own queries and transactions can use it.
 */
export const layer = <const Types extends ReadonlyArray<AnyJobType>>(options: SqliteOptions<Types>) =>
  Leasehold.layer(options).pipe(Layer.provideMerge(clientLayer(options.filename)))
