/**
 * The mark a SqlClient spreading over a MariaDB Galera cluster carries (src/adapters/mysql/cluster.ts
 * sets it), so the SQL stores add the checks only a cluster needs, and a single MySQL/MariaDB server
 * runs no extra statement. The mark is an own enumerable symbol: `withoutTransforms()` copies the
 * client's own properties, so it keeps it.
 */
const GALERA_CLUSTER: unique symbol = Symbol.for("leasehold/galeraCluster")

/** Marks `client` as spreading over a Galera cluster; returns it. */
export const markGaleraCluster = <C extends object>(client: C): C => Object.assign(client, { [GALERA_CLUSTER]: true })

/** Whether `client` was marked by `markGaleraCluster`. */
export const isGaleraCluster = (client: object): boolean =>
  (client as { readonly [GALERA_CLUSTER]?: unknown })[GALERA_CLUSTER] === true

/**
 * Before COMMIT: whether the session still has its transaction open, and the GTID of the last
 * write set it replicated. After COMMIT: that GTID again; a committed write set moves it on.
 */
export const writeSetCheck = {
  beforeCommit: "SELECT @@in_transaction AS open, WSREP_LAST_WRITTEN_GTID() AS gtid",
  afterCommit: "SELECT WSREP_LAST_WRITTEN_GTID() AS gtid"
} as const
