/**
 * leasehold's Galera cluster client (src/adapters/mysql/cluster.ts) on the cluster of
 * scripts/galera/start: statements go round the nodes, a node that refuses connections is left
 * out and the statement served by another, each connection waits for causality
 * (wsrep_sync_wait), and a node outside the primary component counts as unreachable.
 */
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { nodeUrls } from "../../src/adapters/mysql/cluster.ts"
import { clientLayer, clusterClientLayer } from "../../src/adapters/mysql/client.ts"
import { mysql } from "../../src/adapters/mysql/dialect.ts"
import { GALERA_URL } from "../support/databases.ts"

const nodes = nodeUrls(GALERA_URL) ?? []
// Port 1 on loopback: nothing listens, the connection is refused at once.
const DEAD = "mysql://root@127.0.0.1:1/test"

const portsServing = (n: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.forEach(
      Array.from({ length: n }),
      () => Effect.map(sql.unsafe<{ port: number }>("SELECT @@port AS port"), (r) => Number(r[0]?.port))
    ))

it("a URL with several hosts names one URL per node; one host is not a cluster", () => {
  expect(nodeUrls("mariadb://u:p@a:3307,b:3308,c/db?ssl=1")).toEqual([
    "mysql://u:p@a:3307/db?ssl=1",
    "mysql://u:p@b:3308/db?ssl=1",
    "mysql://u:p@c/db?ssl=1"
  ])
  expect(nodeUrls("mysql://u@a:3306/db")).toBeUndefined()
})

it.live("statements go round the three nodes, and every connection waits for causality", () =>
  Effect.gen(function*() {
    const ports = yield* portsServing(6)
    expect(new Set(ports)).toEqual(new Set(nodes.map((u) => Number(new URL(u).port))))
    const sql = yield* SqlClient.SqlClient
    const waits = yield* Effect.forEach(
      [1, 2, 3],
      () => sql.unsafe<{ w: number }>("SELECT @@SESSION.wsrep_sync_wait AS w")
    )
    expect(waits.map((r) => Number(r[0]?.w))).toEqual([7, 7, 7])
  }).pipe(Effect.provide(clientLayer(GALERA_URL))))

it.live("a node that refuses connections is left out: every statement is served by the others", () =>
  Effect.gen(function*() {
    const ports = yield* portsServing(9)
    expect(ports).toHaveLength(9)
    expect(ports).not.toContain(1)
  }).pipe(Effect.provide(clusterClientLayer([DEAD, ...nodes]))))

it.live("with no node reachable, building the client fails with the driver's error", () =>
  Effect.gen(function*() {
    const failure = yield* Effect.flip(Effect.scoped(Effect.asVoid(
      portsServing(1).pipe(
        Effect.provide(clusterClientLayer([DEAD, "mysql://root@127.0.0.1:2/test"]))
      )
    )))
    expect(failure).toBeInstanceOf(SqlError)
    expect(mysql.isDisconnect((failure as SqlError).cause)).toBe(true)
  }))

it("a node outside the primary component (WSREP 1047) is a disconnect, not a transient failure", () => {
  // mysql2's error for the server's reply, as a node cut off by gmcast.isolate sends it.
  const error = Object.assign(new Error("WSREP has not yet prepared node for application use"), {
    code: "ER_UNKNOWN_COM_ERROR",
    errno: 1047,
    sqlState: "08S01",
    fatal: false
  })
  expect(mysql.isDisconnect(error)).toBe(true)
  expect(mysql.isTransient(error)).toBe(false)
  // The same code without WSREP (an unknown command on plain MySQL) is neither.
  const plain = Object.assign(new Error("Unknown command"), { code: "ER_UNKNOWN_COM_ERROR", errno: 1047 })
  expect(mysql.isDisconnect(plain)).toBe(false)
})
