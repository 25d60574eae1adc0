/** Picks the dialect of a `SqlClient`, once, when a store is built. */
import type { SqlClient } from "@effect/sql/SqlClient"
import { mysql } from "../mysql/dialect.ts"
import { certificationBackoff, isGaleraCluster } from "../mysql/galera.ts"
import { postgres } from "../postgres/dialect.ts"
import { sqlite } from "../sqlite/dialect.ts"
import type { Dialect } from "./dialect.ts"

// MySQL/MariaDB on a Galera cluster: the same statements, and a retry after a lost certification
// waits a random moment first (src/adapters/sql/retry.ts `FailureKinds`).
const mysqlOnGalera: Dialect = { ...mysql, transientBackoff: certificationBackoff }

/** The dialect of `sql`; other databases are refused with a clear defect. */
export const dialectOf = (sql: SqlClient): Dialect =>
  sql.onDialectOrElse({
    pg: () => postgres,
    mysql: () => (isGaleraCluster(sql) ? mysqlOnGalera : mysql),
    sqlite: () => sqlite,
    orElse: () => {
      throw new Error("leasehold supports PostgreSQL, MySQL/MariaDB and SQLite")
    }
  })

export { mysql, postgres, sqlite }
