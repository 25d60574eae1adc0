/**
 * Database outages, simulated with a loopback TCP proxy in front of the shared PostgreSQL and
 * MariaDB servers (the servers themselves are never stopped). While the network is cut, a
 * LeaseLock call fails promptly with a typed SqlError (not a hang, not a defect) and changes
 * nothing; once it is restored, calls work again on the same client.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { MysqlClient } from "@effect/sql-mysql2"
import { PgClient } from "@effect/sql-pg"
import * as Reactivity from "@effect/experimental/Reactivity"
import type { SqlError } from "@effect/sql/SqlError"
import { Cause, Deferred, Effect, Exit, Fiber, Layer, Logger, Option, Redacted, Schema, Scope } from "effect"
import * as JobStore from "../../src/adapters/sql/JobStore.ts"
import * as LeaseLock from "../../src/LeaseLock.ts"
import { tableNames } from "../../src/core/tables.ts"
import * as Job from "../../src/runtime/Job.ts"
import * as Leasehold from "../../src/runtime/Leasehold.ts"
import * as Migrator from "../../src/runtime/migrate.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { MYSQL_URL, PG_URL, uniquePrefix } from "../support/databases.ts"
import { parseUrl, scopedBounded, throughProxy } from "../support/outage.ts"
import { startProxy } from "../support/proxy.ts"

const T0 = 1_791_039_632_175
const MINUTE = 60_000
/** Far longer than any call should take: a call still running then is a hang, reported as such. */
const HANG = "20 seconds"

/**
 * How a call ended, as plain data: its value, its typed error's tag, a defect, or a hang.
 * `disconnect` lets a hung call be abandoned at once, even if interrupting it would wait too.
 */
const settle = <A, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E>) =>
  effect.pipe(
    Effect.disconnect,
    Effect.timeoutFail({ duration: HANG, onTimeout: () => ({ _tag: "Hang" as const }) }),
    Effect.exit,
    Effect.map((exit) => {
      if (Exit.isSuccess(exit)) return { ok: exit.value }
      const failure = Cause.failureOption(exit.cause)
      return Option.isSome(failure) ? { failed: failure.value._tag } : { defect: Cause.pretty(exit.cause) }
    })
  )

interface Clients {
  /** Through the proxy: small pool, short connect timeout. */
  readonly proxied: SqlClient.SqlClient
  /** Straight to the server, for setup, checks during the outage and cleanup. */
  readonly direct: SqlClient.SqlClient
}

/** PostgreSQL clients: one through the proxy on `port` (small pool, short connect timeout), one direct. */
const pgClients = (port: number) =>
  Effect.gen(function*() {
    const direct = yield* PgClient.make({ url: Redacted.make(PG_URL), maxConnections: 2 })
    const proxied = yield* PgClient.make({
      ...throughProxy(PG_URL, port),
      maxConnections: 2,
      connectTimeout: "2 seconds"
    })
    return { direct, proxied }
  })

/** MariaDB clients: one through the proxy on `port`, one direct. */
const mysqlClients = (port: number) =>
  Effect.gen(function*() {
    const direct = yield* MysqlClient.make({ url: Redacted.make(MYSQL_URL), maxConnections: 2 })
    const proxied = yield* MysqlClient.make({
      ...throughProxy(MYSQL_URL, port),
      maxConnections: 2,
      poolConfig: { connectTimeout: 2000 }
    })
    return { direct, proxied }
  })

const lockOn = (sql: SqlClient.SqlClient, table: string) =>
  Effect.provideService(LeaseLock.make({ table }), SqlClient.SqlClient, sql)

/** The outage story, on clients built for the proxy's port. */
const outageScenario = (
  url: string,
  clients: (proxyPort: number) => Effect.Effect<Clients, SqlError, Scope.Scope | Reactivity.Reactivity>
) =>
  Effect.gen(function*() {
    const target = parseUrl(url)
    const proxy = yield* startProxy({ host: target.host, port: target.port })
    const { direct, proxied } = yield* clients(proxy.port)
    const table = `${uniquePrefix("outage")}locks`
    yield* Effect.addFinalizer(() => Effect.orDie(direct.unsafe(`DROP TABLE IF EXISTS ${table}`)))

    const lock = yield* lockOn(proxied, table)
    const check = yield* lockOn(direct, table)

    // Works through the proxy.
    yield* lock.ensureTable
    expect(yield* settle(lock.tryAcquire({ name: "held", owner: "a", host: "h-a", now: T0, ttlMs: MINUTE }))).toEqual({
      ok: true
    })
    const heldRow = { name: "held", owner: "a", host: "h-a", acquiredAt: T0, expiresAt: T0 + MINUTE }
    expect(yield* settle(lock.read("held"))).toEqual({ ok: Option.some(heldRow) })

    // The network goes down: every call fails with a typed SqlError, promptly.
    yield* proxy.cut()
    const later = T0 + 2 * MINUTE // "held" has expired by then: a take-over would succeed
    expect(yield* settle(lock.tryAcquire({ name: "free", owner: "b", now: T0, ttlMs: MINUTE }))).toEqual({
      failed: "SqlError"
    })
    expect(yield* settle(lock.tryAcquire({ name: "held", owner: "b", now: later, ttlMs: MINUTE }))).toEqual({
      failed: "SqlError"
    })
    expect(yield* settle(lock.renew({ name: "held", owner: "a", now: T0, ttlMs: 10 * MINUTE }))).toEqual({
      failed: "SqlError"
    })
    expect(yield* settle(lock.release({ name: "held", owner: "a" }))).toEqual({ failed: "SqlError" })
    expect(yield* settle(lock.ownerOf("held"))).toEqual({ failed: "SqlError" })
    expect(yield* proxy.openConnections()).toBe(0)

    // Nothing changed, as seen from a client that is not behind the proxy.
    expect(yield* settle(check.list)).toEqual({ ok: [heldRow] })

    // The network comes back: the same client works again, and still sees nothing changed.
    yield* proxy.restore()
    expect(yield* settle(lock.read("free"))).toEqual({ ok: Option.none() })
    expect(yield* settle(lock.read("held"))).toEqual({ ok: Option.some(heldRow) })
    expect(yield* settle(lock.tryAcquire({ name: "free", owner: "b", now: T0, ttlMs: MINUTE }))).toEqual({ ok: true })
    expect(yield* settle(lock.tryAcquire({ name: "held", owner: "b", host: "h-b", now: later, ttlMs: MINUTE })))
      .toEqual({ ok: true })
    expect(yield* settle(check.ownerOf("held"))).toEqual({ ok: Option.some("b") })

    // A second outage, with connections that were in use since the first, behaves the same.
    yield* proxy.cut()
    expect(yield* settle(lock.release({ name: "held", owner: "b" }))).toEqual({ failed: "SqlError" })
    yield* proxy.restore()
    expect(yield* settle(lock.release({ name: "held", owner: "b" }))).toEqual({ ok: true })
    expect(yield* settle(check.list)).toEqual({
      ok: [{ name: "free", owner: "b", host: null, acquiredAt: T0, expiresAt: T0 + MINUTE }]
    })
  }).pipe(scopedBounded, Effect.provide(Reactivity.layer))

describe("LeaseLock during a database outage (TCP proxy)", () => {
  it.live(
    "PostgreSQL: calls fail with SqlError while cut, change nothing, and work after restore",
    () => outageScenario(PG_URL, pgClients),
    { timeout: 120_000 }
  )

  it.live(
    "MariaDB: calls fail with SqlError while cut, change nothing, and work after restore",
    () => outageScenario(MYSQL_URL, mysqlClients),
    { timeout: 120_000 }
  )
})

// ---------------------------------------------------------------------------------------------
// A connection dropped during an attempt

const Gate = Schema.Struct({ n: Schema.Number })

/**
 * An exclusive job runs through the proxy; while perform is running the network is cut, perform
 * finishes, and the network comes back about a second later. The outcome write (with the lease
 * release) is retried until it lands: the job ends completed after one run, its lease is gone,
 * and the retry was logged. Nothing is lost and nothing ran twice.
 */
const droppedDuringAttempt = (
  url: string,
  clients: (proxyPort: number) => Effect.Effect<Clients, SqlError, Scope.Scope | Reactivity.Reactivity>
) =>
  Effect.gen(function*() {
    const target = parseUrl(url)
    const proxy = yield* startProxy({ host: target.host, port: target.port })
    const { direct, proxied } = yield* clients(proxy.port)
    const prefix = uniquePrefix("drop")
    const tables = tableNames(prefix)
    yield* Effect.addFinalizer(() =>
      Effect.orDie(
        Effect.forEach(
          [tables.jobs, tables.hosts, tables.jobLocks, tables.migrationLocks, tables.migrations],
          (t) => direct.unsafe(`DROP TABLE IF EXISTS ${t}`),
          { discard: true }
        )
      )
    )
    yield* Effect.provideService(Effect.flatMap(Migrator.make({ prefix }), (m) => m.run), SqlClient.SqlClient, direct)

    const started = yield* Deferred.make<void>()
    const gate = yield* Deferred.make<void>()
    let runs = 0
    const Slow = Job.define({
      name: "slow",
      schema: Gate,
      concurrencyKey: "drop",
      perform: () =>
        Effect.zipRight(
          Effect.sync(() => runs++),
          Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(gate))
        )
    })
    const logs: Array<string> = []
    const logger = Logger.make(({ message }) =>
      logs.push(Array.isArray(message) ? message.map(String).join(" ") : String(message))
    )
    const services = Leasehold.layer({ jobs: [Slow], prefix }).pipe(
      Layer.provide(Layer.succeed(SqlClient.SqlClient, proxied))
    )

    const id = yield* Job.enqueue(Slow, { n: 1 }).pipe(Effect.provide(services))
    const attempt = yield* Worker.processNext({ host: "drop-host" }).pipe(
      Effect.provide(services),
      Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
      Effect.fork
    )
    yield* Deferred.await(started)
    yield* proxy.cut()
    yield* Deferred.succeed(gate, undefined)
    yield* Effect.sleep("1 second")
    yield* proxy.restore()
    const result = yield* Fiber.join(attempt).pipe(
      Effect.timeoutFail({ duration: HANG, onTimeout: () => "the attempt hung" })
    )

    expect(result._tag).toBe("Completed")
    expect(result._tag === "Completed" && result.leaseLost).toBe(false)
    expect(runs).toBe(1)
    expect(logs.some((l) => l.includes(`finish (job ${id.id}): connection lost`))).toBe(true)
    const store = yield* Effect.provideService(JobStore.make({ prefix }), SqlClient.SqlClient, direct)
    const row = Option.getOrThrow(yield* store.get(id.id))
    expect({ status: row.status, attempts: row.attempts }).toEqual({ status: "completed", attempts: 1 })
    const leases = yield* Effect.provideService(LeaseLock.make({ table: tables.jobLocks }), SqlClient.SqlClient, direct)
    expect(yield* leases.list).toEqual([])
  }).pipe(scopedBounded, Effect.provide(Reactivity.layer))

describe("A connection dropped during an attempt (TCP proxy)", () => {
  it.live(
    "PostgreSQL: the outcome is written once the network is back; the job runs once and completes",
    () => droppedDuringAttempt(PG_URL, pgClients),
    { timeout: 120_000 }
  )

  it.live(
    "MariaDB: the outcome is written once the network is back; the job runs once and completes",
    () => droppedDuringAttempt(MYSQL_URL, mysqlClients),
    { timeout: 120_000 }
  )
})
