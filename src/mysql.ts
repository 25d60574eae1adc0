/**
 * leasehold/mysql: leasehold on MySQL or MariaDB. Needs the optional peer dependencies `mysql2`
 * and `@effect/sql-mysql2` installed; "leasehold" itself never loads them.
 *
 * ```ts
 * import * as Mysql from "leasehold/mysql"
 * const Services = Mysql.layer({ url: "mariadb://app@127.0.0.1:3306/app", jobs: [SendEmail] })
 * // a Galera cluster: every node's address in one URL (docs/scale-out.md)
 * const Spread = Mysql.layer({ url: "mariadb://app@db1:3306,db2:3306,db3:3306/app", jobs: [SendEmail] })
 * ```
 */
import { Layer, type Redacted } from "effect"
import { clientLayer, type MysqlClientOptions } from "./adapters/mysql/client.ts"
import type { AnyJobType } from "./runtime/Job.ts"
import * as Leasehold from "./runtime/Leasehold.ts"

export {
  clientLayer,
  type ClusterClientOptions,
  clusterClientLayer,
  MysqlClient,
  type MysqlClientOptions
} from "./adapters/mysql/client.ts"

/** Options of `layer`: leasehold's, and where the database is. */
export interface MysqlOptions<Types extends ReadonlyArray<AnyJobType>>
  extends Leasehold.LeaseholdOptions<Types>, MysqlClientOptions
{
  /** A `mysql://` or `mariadb://` URL; several hosts separated by commas for a Galera cluster. */
  readonly url: string | Redacted.Redacted
}

/**
 * leasehold's services (`Leasehold.layer`) over a new MySQL/MariaDB client for `url`, which the
 * layer also provides, so the app's own queries and transactions can share its pool.
 */
export const layer = <const Types extends ReadonlyArray<AnyJobType>>(options: MysqlOptions<Types>) =>
  Leasehold.layer(options).pipe(Layer.provideMerge(clientLayer(options.url, options)))
