/**
 * A SqlClient over several nodes of one MariaDB Galera cluster (docs/scale-out.md): one mysql2
 * pool per node, each statement (or transaction) on a connection of the next healthy node in
 * turn. A node that refuses or drops connections, or answers that it is not in the primary
 * component (WSREP not ready, 1047), is left out for `recheckAfterMs` and its connection
 * destroyed, so a caller that retries (src/adapters/sql/retry.ts) lands on another node.
 *
 * Every connection runs with `wsrep_sync_wait` set (default 7: reads, UPDATE/DELETE and
 * INSERT/REPLACE wait until the node has applied every write set committed anywhere before
 * they started). Without it a statement sent to one node right after a commit on another can
 * miss that commit: a fenced finish would match no row and report a lost lease that was held.
 *
 * The client is marked as a cluster (./galera.ts): a lease acquisition then checks that its
 * COMMIT really replicated its writes (src/adapters/sql/transaction.ts, `mustCommitWrites`).
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as Client from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import { MysqlClient } from "@effect/sql-mysql2"
import { Context, Effect, Layer, Redacted, type Scope, Stream } from "effect"
import * as Mysql from "mysql2"
import { registerPoolSize } from "../sql/connections.ts"
import { markGaleraCluster } from "./galera.ts"

export { nodeUrls } from "./urls.ts"

/** Options of `clusterClientLayer`. */
export interface ClusterClientOptions {
  /** Connections per node (default 10). */
  readonly maxConnectionsPerNode?: number | undefined
  /** `wsrep_sync_wait` for every connection (default 7; 0 turns causal waits off). */
  readonly syncWait?: number | undefined
  /** How long a node that failed is left out before it is tried again (default 2000 ms). */
  readonly recheckAfterMs?: number | undefined
  /** How long a connection attempt may take (default 2000 ms). */
  readonly connectTimeoutMs?: number | undefined
}

// Errors after which a node is left out for a while: the connection is gone, or the node is not
// in the primary component (a node cut off from the group answers 1047 to every statement).
const nodeUnusable = (cause: unknown): boolean => {
  const e = cause as { fatal?: unknown; code?: unknown; message?: unknown } | null
  if (e === null || typeof e !== "object") return false
  if (e.fatal === true) return true
  const code = typeof e.code === "string" ? e.code : ""
  return ["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "PROTOCOL_CONNECTION_LOST", "ER_SERVER_SHUTDOWN"]
    .includes(code) ||
    (code === "ER_UNKNOWN_COM_ERROR" && /WSREP/.test(String(e.message)))
}

interface Node {
  readonly label: string
  readonly pool: Mysql.Pool
  leftOutUntil: number
}

/** A SqlClient (dialect mysql) spreading its statements over the Galera nodes at `urls`. */
export const makeClusterClient = (
  urls: ReadonlyArray<string>,
  options: ClusterClientOptions = {}
): Effect.Effect<Client.SqlClient, SqlError, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function*() {
    if (urls.length === 0) {
      return yield* Effect.fail(new SqlError({ message: "a cluster client needs at least one node URL" }))
    }
    const syncWait = options.syncWait ?? 7
    const recheckAfter = options.recheckAfterMs ?? 2000
    const nodes: Array<Node> = urls.map((url) => {
      const parsed = new URL(url.replace(/^mariadb:/, "mysql:"))
      return {
        label: parsed.host,
        leftOutUntil: 0,
        pool: Mysql.createPool({
          uri: url.replace(/^mariadb:/, "mysql:"),
          multipleStatements: true,
          supportBigNumbers: true,
          connectionLimit: options.maxConnectionsPerNode ?? 10,
          connectTimeout: options.connectTimeoutMs ?? 2000
        })
      }
    })
    yield* Effect.addFinalizer(() =>
      Effect.forEach(nodes, (n) => Effect.async<void>((resume) => n.pool.end(() => resume(Effect.void))), {
        discard: true
      })
    )
    const prepared = new WeakSet<object>()
    let turn = 0

    // The nodes in the order to try them: healthy ones from the next in turn, then the ones left
    // out (soonest back first), so a cluster with every node down still reports a real error.
    const order = (): Array<Node> => {
      const now = Date.now()
      const start = turn++ % nodes.length
      const rotated = [...nodes.slice(start), ...nodes.slice(0, start)]
      return [
        ...rotated.filter((n) => n.leftOutUntil <= now),
        ...rotated.filter((n) => n.leftOutUntil > now).sort((a, b) => a.leftOutUntil - b.leftOutUntil)
      ]
    }
    // Wall-clock time on purpose (like the reconnect waits in ../sql/retry.ts): an outage lasts
    // real seconds whatever Clock the caller's fiber has.
    const leaveOut = (node: Node) => {
      node.leftOutUntil = Date.now() + recheckAfter
    }

    const raw = (
      conn: Mysql.PoolConnection,
      sql: string,
      values: ReadonlyArray<unknown>,
      method: "execute" | "query",
      rowsAsArray = false
    ) =>
      Effect.async<unknown, SqlError>((resume) => {
        ;(conn as any)[method]({ sql, values, rowsAsArray }, (cause: unknown, results: unknown) =>
          resume(
            cause
              ? Effect.fail(new SqlError({ cause, message: "Failed to execute statement" }))
              : Effect.succeed(results)
          ))
      })

    const getConnection = (node: Node) =>
      Effect.async<Mysql.PoolConnection, SqlError>((resume) => {
        node.pool.getConnection((cause, conn) =>
          resume(
            cause
              ? Effect.fail(new SqlError({ cause, message: `Failed to connect to Galera node ${node.label}` }))
              : Effect.succeed(conn)
          )
        )
      }).pipe(
        Effect.tap((conn) =>
          prepared.has(conn) || syncWait === 0
            ? Effect.void
            : raw(conn, `SET SESSION wsrep_sync_wait = ${syncWait}`, [], "query").pipe(
              Effect.tap(() => prepared.add(conn)),
              // A connection that cannot be prepared is not given back to the pool.
              Effect.tapError(() => Effect.sync(() => conn.destroy()))
            )
        ),
        Effect.tapError((e) =>
          Effect.sync(() => {
            if (nodeUnusable(e.cause)) leaveOut(node)
          })
        )
      )

    const acquire: Effect.Effect<Connection, SqlError, Scope.Scope> = Effect.suspend(() => {
      const candidates = order()
      const tryFrom = (i: number): Effect.Effect<readonly [Node, Mysql.PoolConnection], SqlError> => {
        const node = candidates[i]!
        return Effect.catchAll(
          Effect.map(getConnection(node), (conn) => [node, conn] as const),
          (e) => (i + 1 < candidates.length ? tryFrom(i + 1) : Effect.fail(e))
        )
      }
      return Effect.map(
        Effect.acquireRelease(
          Effect.map(tryFrom(0), ([node, conn]) => ({ node, conn, broken: false })),
          (held) => Effect.sync(() => (held.broken ? held.conn.destroy() : held.conn.release()))
        ),
        (held) => {
          const run = (sql: string, values: ReadonlyArray<unknown>, method: "execute" | "query", rowsAsArray = false) =>
            Effect.tapError(raw(held.conn, sql, values, method, rowsAsArray), (e) =>
              Effect.sync(() => {
                if (nodeUnusable(e.cause)) {
                  held.broken = true
                  leaveOut(held.node)
                }
              }))
          const rows = (
            sql: string,
            values: ReadonlyArray<unknown>,
            method: "execute" | "query",
            rowsAsArray = false
          ) => Effect.map(run(sql, values, method, rowsAsArray), (r) => (Array.isArray(r) ? r : []))
          const connection: Connection = {
            execute: (sql, params, transform) =>
              transform ? Effect.map(rows(sql, params, "execute"), transform) : rows(sql, params, "execute"),
            executeRaw: (sql, params) => run(sql, params, "execute"),
            executeValues: (sql, params) => rows(sql, params, "execute", true),
            executeUnprepared: (sql, params, transform) =>
              transform ? Effect.map(rows(sql, params, "query"), transform) : rows(sql, params, "query"),
            executeStream: (sql, params, transform) =>
              Stream.flatMap(
                Stream.fromEffect(
                  transform ? Effect.map(rows(sql, params, "execute"), transform) : rows(sql, params, "execute")
                ),
                Stream.fromIterable
              )
          }
          return connection
        }
      )
    })

    // Fail at start when no node answers, as MysqlClient does for its one server.
    yield* Effect.scoped(acquire).pipe(Effect.asVoid)

    const client = markGaleraCluster(
      yield* Client.make({
        acquirer: acquire,
        transactionAcquirer: acquire,
        compiler: MysqlClient.makeCompiler(),
        spanAttributes: [["db.system.name", "mysql"], ["server.address", nodes.map((n) => n.label).join(",")]]
      })
    )
    registerPoolSize(client, nodes.length * (options.maxConnectionsPerNode ?? 10))
    return client
  })

/** A SqlClient layer spreading statements over the Galera nodes at `urls` (see `makeClusterClient`). */
export const clusterClientLayer = (
  urls: ReadonlyArray<string | Redacted.Redacted>,
  options: ClusterClientOptions = {}
): Layer.Layer<Client.SqlClient, SqlError> =>
  Layer.scopedContext(
    Effect.map(
      makeClusterClient(urls.map((u) => (typeof u === "string" ? u : Redacted.value(u))), options),
      (client) => Context.make(Client.SqlClient, client)
    )
  ).pipe(Layer.provide(Reactivity.layer))
