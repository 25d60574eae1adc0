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

/**
 * The wait (ms) before a statement or transaction that lost certification `attempt + 1` times in
 * a row is sent again: a random moment below 5 ms, the bound doubling each time up to 250 ms (at
 * most about 0.8 s over the eight retries of src/adapters/sql/retry.ts). Certification is
 * optimistic: of the transactions that wrote one row on several nodes at once, the first to
 * commit wins and every other is rolled back; sent again at once, the losers meet each other
 * again and one wins each round, so with ten claims on one host row (a host cap) the last lost
 * nine times in a row and gave up. Spread out at random, most of them no longer overlap; windows
 * shorter than a claim's own few milliseconds still let some give up (twenty claims, as the
 * per-host cap's concurrency test of test/conformance/worker.ts races them). How the wait is
 * taken: test/unit/transientRetry.test.ts.
 */
export const certificationBackoff = (attempt: number): number => Math.random() * Math.min(250, 5 * 2 ** attempt)
