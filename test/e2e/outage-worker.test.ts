/**
 * A worker and its database outages (issue 6), on PostgreSQL and MariaDB, through a loopback
 * TCP proxy (the shared servers are never stopped):
 * - started while the database is down (the proxy starts cut), a worker built over
 *   `Leasehold.retryConnect` logs each failed connection attempt and retries; once the network
 *   is restored it is built and runs a job exactly once;
 * - once running, it survives the database going away and coming back: it logs what failed
 *   and carries on (on PostgreSQL between claims; and, on both, with a claim transaction
 *   open when the connection breaks — known to fail today, see that test);
 * - `retryConnect` bounded by `maxRetries` or `while` fails with the last error;
 * - the `leasehold worker` command waits for its database the same way.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { MysqlClient } from "@effect/sql-mysql2"
import { PgClient } from "@effect/sql-pg"
import * as Reactivity from "@effect/experimental/Reactivity"
import type { SqlError } from "@effect/sql/SqlError"
import { Context, Deferred, Effect, Exit, Layer, Logger, LogLevel, Option, Redacted, Schema, Scope } from "effect"
import { spawn } from "node:child_process"
import { join } from "node:path"
import { Job, Leasehold, Migrator, Worker } from "../../src/index.ts"
import { MYSQL_URL, PG_URL, uniquePrefix } from "../support/databases.ts"
import { dropPrefixed, parseUrl, scopedBounded, throughProxy } from "../support/outage.ts"
import { startProxy, type TcpProxy } from "../support/proxy.ts"

/** Generous bounds for the waits below, only so a broken build fails instead of hanging. */
const WAIT_MS = 20_000

/** The parts of a database URL a proxied client needs. */
interface Captured {
  readonly level: string
  readonly message: string
  readonly annotations: Record<string, unknown>
}

/** A logger that keeps every line (level, text, annotations) for the test to read. */
const captureLogs = () => {
  const lines: Array<Captured> = []
  const logger = Logger.make(({ annotations, logLevel, message }) => {
    const parts = Array.isArray(message) ? message : [message]
    lines.push({
      level: logLevel.label,
      message: parts.map((p) => (typeof p === "string" ? p : p instanceof Error ? p.message : JSON.stringify(p))).join(
        " "
      ),
      annotations: Object.fromEntries(annotations)
    })
  })
  return { lines, layer: Logger.replace(Logger.defaultLogger, logger) }
}

const realSleep = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

/** Polls `check` every 20 ms until it holds; fails after `WAIT_MS` (a bound, not a threshold). */
const waitUntil = <E, R>(what: string, check: Effect.Effect<boolean, E, R>): Effect.Effect<void, E | string, R> =>
  Effect.gen(function*() {
    for (let i = 0; i * 20 < WAIT_MS; i++) {
      if (yield* check) return
      yield* realSleep(20)
    }
    return yield* Effect.fail(`not reached within ${WAIT_MS / 1000} s: ${what}`)
  })

/** The connection-retry warning, as `Leasehold.retryConnect` writes it. */
const RETRY_LINE = /^cannot connect to the database \(behind the proxy\), attempt (\d+): .+; retrying in \d+\.\ds$/

interface Drivers {
  /** Straight to the server: migrations, enqueues, checks and cleanup. */
  readonly direct: Effect.Effect<SqlClient.SqlClient, SqlError, Scope.Scope | Reactivity.Reactivity>
  /** The driver's own layer, through the proxy on `port`: it fails to build while the proxy is cut. */
  readonly proxied: (port: number) => Layer.Layer<SqlClient.SqlClient, unknown>
}

const HOST = "outage-worker"

/**
 * Migrated tables under a fresh prefix, a proxy (cut or not), and a worker being built in a
 * forked fiber over `Leasehold.retryConnect` through the proxy, its logs captured.
 */
const setUp = (url: string, drivers: Drivers, options: { readonly cut: boolean; readonly hostCap?: number }) =>
  Effect.gen(function*() {
    const target = parseUrl(url)
    const direct = yield* drivers.direct
    const prefix = uniquePrefix("outw")
    yield* Effect.addFinalizer(() => dropPrefixed(direct, prefix))
    yield* Effect.flatMap(Migrator.make({ prefix }), (m) => m.run).pipe(
      Effect.provideService(SqlClient.SqlClient, direct)
    )

    // A job type that counts its runs.
    const runs: Array<number> = []
    const Count = Job.define({
      name: "OutageCount",
      schema: Schema.Struct({ n: Schema.Number }),
      maxRetries: 0,
      perform: ({ n }) => Effect.sync(() => void runs.push(n))
    })
    const enqueue = (n: number) =>
      Job.enqueue(Count, { n }).pipe(
        Effect.provide(Leasehold.layer({ prefix, jobs: [Count] })),
        Effect.provideService(SqlClient.SqlClient, direct)
      )
    const statusOf = (id: string) =>
      Effect.map(
        direct.unsafe<{ status: string; attempts: number }>(
          `SELECT status, attempts FROM ${prefix}jobs WHERE id = '${id}'`
        ),
        (rows) => rows[0] === undefined ? undefined : { status: rows[0].status, attempts: Number(rows[0].attempts) }
      )
    /** Enqueues a job (straight to the server) and waits until the worker has completed it. */
    const runJob = (n: number) =>
      Effect.gen(function*() {
        const { id } = yield* enqueue(n)
        yield* waitUntil(`job ${n} completed`, Effect.map(statusOf(id), (s) => s?.status === "completed"))
        return yield* statusOf(id)
      })

    const proxy: TcpProxy = yield* startProxy({ host: target.host, port: target.port }, { cut: options.cut })
    const logs = captureLogs()
    const built = yield* Deferred.make<void>()
    const workerLayer = Worker.layer({
      host: HOST,
      concurrency: 1,
      pollInterval: "50 millis",
      hostCap: options.hostCap
    }).pipe(
      Layer.provideMerge(Leasehold.layer({ prefix, jobs: [Count] })),
      Layer.provideMerge(
        Leasehold.retryConnect(drivers.proxied(proxy.port), {
          base: "20 millis",
          max: "100 millis",
          label: "behind the proxy"
        })
      )
    )
    yield* Deferred.succeed(built, undefined).pipe(
      Effect.zipRight(Effect.never),
      Effect.provide(workerLayer),
      Effect.provide(logs.layer),
      // A worker fiber that dies says so in the captured logs.
      Effect.withUnhandledErrorLogLevel(Option.some(LogLevel.Warning)),
      Effect.forkScoped
    )
    return { target, direct, prefix, proxy, logs, built, runs, runJob }
  })

/**
 * The worker's own warnings that show it noticed an outage and carries on: its drain check or
 * claim failed, or the end of the attempt it was finishing lost its connection and is being
 * sent again (the cut can fall after the outcome was written and before the reply arrived).
 */
const CARRIES_ON = /^(hosts table unreadable|claim failed|finish \(job [^)]+\): connection lost)/
const DIED = /^Fiber terminated with an unhandled error/

/**
 * Waits until the worker logged, after line `from`, that it noticed the outage (and carries on),
 * or that one of its fibers died; fails in the second case.
 */
const noticedOutage = (logs: ReturnType<typeof captureLogs>, from: number) =>
  Effect.gen(function*() {
    const after = () => logs.lines.slice(from).filter((l) => l.level === "WARN")
    yield* waitUntil(
      "the outage noticed",
      Effect.sync(() => after().some((l) => CARRIES_ON.test(l.message) || DIED.test(l.message)))
    )
    const died = after().filter((l) => DIED.test(l.message))
    if (died.length > 0) return yield* Effect.fail(`a worker fiber died in the outage: ${died[0]!.message}`)
  })

const startsWhileDown = (url: string, drivers: Drivers, options: { readonly laterOutage: boolean }) =>
  Effect.gen(function*() {
    const { built, logs, proxy, runJob, runs, target } = yield* setUp(url, drivers, { cut: true })

    // The database is down: the worker keeps trying, and says so, attempt 1, 2, 3 … each with
    // its error and the next delay.
    const retries = () => logs.lines.filter((l) => RETRY_LINE.test(l.message))
    yield* waitUntil("three connection attempts logged", Effect.sync(() => retries().length >= 3))
    expect(yield* Deferred.isDone(built)).toBe(false)
    const firstThree = retries().slice(0, 3)
    expect(firstThree.map((l) => l.level)).toEqual(["WARN", "WARN", "WARN"])
    expect(firstThree.map((l) => Number(RETRY_LINE.exec(l.message)![1]))).toEqual([1, 2, 3])
    expect(firstThree.map((l) => l.annotations.attempt)).toEqual([1, 2, 3])
    for (const l of firstThree) expect(l.annotations.retryInMs).toEqual(expect.any(Number))
    expect(yield* proxy.refusedConnections()).toBeGreaterThanOrEqual(3)
    if (target.password !== undefined) {
      expect(logs.lines.some((l) => l.message.includes(Redacted.value(target.password!)))).toBe(false)
    }

    // The database comes back: the worker is built and runs a job, once.
    yield* proxy.restore()
    yield* waitUntil("the worker built", Deferred.isDone(built))
    expect(yield* runJob(1)).toEqual({ status: "completed", attempts: 1 })
    expect(runs).toEqual([1])

    if (options.laterOutage) {
      // The database goes away again: the worker logs what fails (its drain check fails closed,
      // or its claim fails) and carries on; once the network is back it runs the next job, once.
      const from = logs.lines.length
      yield* proxy.cut()
      yield* noticedOutage(logs, from)
      yield* proxy.restore()
      expect(yield* runJob(2)).toEqual({ status: "completed", attempts: 1 })
      expect(runs).toEqual([1, 2])
    }
    expect(logs.lines.filter((l) => DIED.test(l.message))).toEqual([])
  }).pipe(scopedBounded, Effect.provide(Reactivity.layer))

/**
 * The connection breaks while the worker has a claim transaction open (a host cap makes the
 * claim one transaction on both databases; MariaDB's claim always is one): the claim is held
 * open by a lock on the host row taken straight on the server, then the proxy is cut.
 */
const outageInClaimTransaction = (url: string, drivers: Drivers) =>
  Effect.gen(function*() {
    const { built, direct, logs, prefix, proxy, runJob, runs } = yield* setUp(url, drivers, { cut: false, hostCap: 5 })
    yield* waitUntil("the worker built", Deferred.isDone(built))
    expect(yield* runJob(1)).toEqual({ status: "completed", attempts: 1 })

    // Hold the worker's host row locked, so its next claim transaction waits on it.
    const release = yield* Deferred.make<void>()
    const locked = yield* Deferred.make<void>()
    yield* direct.withTransaction(Effect.gen(function*() {
      yield* direct.unsafe(`SELECT host FROM ${prefix}hosts WHERE host = '${HOST}' FOR UPDATE`)
      yield* Deferred.succeed(locked, undefined)
      yield* Deferred.await(release)
    })).pipe(Effect.ensuring(Deferred.succeed(locked, undefined)), Effect.forkScoped)
    yield* Deferred.await(locked)
    const waitingOnLock = direct.onDialectOrElse({
      pg: () =>
        direct<
          { n: number }
        >`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE ${`%${prefix}hosts%`}`,
      // (information_schema.INNODB_TRX does not always list a waiting prepared statement.)
      orElse: () =>
        direct<
          { n: number }
        >`SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE COMMAND IN ('Execute', 'Query') AND INFO LIKE ${`%INSERT INTO \`${prefix}hosts\`%`}`
    })
    yield* waitUntil(
      "the worker's claim waiting on the host row",
      Effect.map(waitingOnLock, (r) => Number(r[0]?.n ?? 0) > 0)
    )

    // The network goes down under the open claim transaction; the lock is let go.
    const from = logs.lines.length
    yield* proxy.cut()
    yield* Deferred.succeed(release, undefined)
    yield* noticedOutage(logs, from)

    // Back: the worker still claims, and runs the next job once.
    yield* proxy.restore()
    expect(yield* runJob(2)).toEqual({ status: "completed", attempts: 1 })
    expect(runs).toEqual([1, 2])
  }).pipe(scopedBounded, Effect.provide(Reactivity.layer))

const postgres: Drivers = {
  direct: PgClient.make({ url: Redacted.make(PG_URL), maxConnections: 3 }),
  proxied: (port) => PgClient.layer({ ...throughProxy(PG_URL, port), maxConnections: 3, connectTimeout: "2 seconds" })
}

const mariadb: Drivers = {
  direct: MysqlClient.make({ url: Redacted.make(MYSQL_URL), maxConnections: 3 }),
  proxied: (port) =>
    MysqlClient.layer({ ...throughProxy(MYSQL_URL, port), maxConnections: 3, poolConfig: { connectTimeout: 2000 } })
}

describe("a worker started while the database is down (TCP proxy, starts cut)", () => {
  it.live(
    "PostgreSQL: logs its retries, starts once the database is back, runs the job once, and survives a later outage",
    () => startsWhileDown(PG_URL, postgres, { laterOutage: true }),
    { timeout: 60_000 }
  )

  it.live(
    "MariaDB: logs its retries, starts once the database is back, runs the job once, and survives a later outage",
    () => startsWhileDown(MYSQL_URL, mariadb, { laterOutage: true }),
    { timeout: 60_000 }
  )
})

// When the connection breaks inside a transaction, @effect/sql's ROLLBACK fails too and becomes
// a defect; the worker loop must survive that (it once died there and silently stopped claiming).
describe("a running worker whose connection breaks inside a claim transaction", () => {
  it.live(
    "PostgreSQL (host cap): logs the failed claim, carries on, and runs the next job once",
    () => outageInClaimTransaction(PG_URL, postgres),
    { timeout: 60_000 }
  )

  it.live(
    "MariaDB: logs the failed claim, carries on, and runs the next job once",
    () => outageInClaimTransaction(MYSQL_URL, mariadb),
    { timeout: 60_000 }
  )
})

describe("Leasehold.retryConnect (no database needed)", () => {
  class Conn extends Context.Tag("test/Conn")<Conn, number>() {}

  it.live("maxRetries: 2 tries three times, logs each (credentials masked), and fails with the last error", () =>
    Effect.gen(function*() {
      let tries = 0
      const flaky = Layer.effect(
        Conn,
        Effect.suspend(() => Effect.fail(new Error(`refused by mysql://app:hunter2@db:3306/x (#${++tries})`)))
      )
      const logs = captureLogs()
      const exit = yield* Effect.exit(
        Effect.provide(
          Conn,
          Leasehold.retryConnect(flaky, { base: "1 millis", maxRetries: 2, label: "mysql://app:hunter2@db/x" })
        )
      ).pipe(
        Effect.provide(logs.layer)
      )
      expect(tries).toBe(3)
      expect(exit).toEqual(Exit.fail(new Error("refused by mysql://app:hunter2@db:3306/x (#3)")))
      expect(logs.lines.map((l) => [l.level, l.message.replace(/retrying in \d+\.\ds/, "retrying in <s>")])).toEqual([
        [
          "WARN",
          "cannot connect to the database (mysql://app:***@db/x), attempt 1: refused by mysql://app:***@db:3306/x (#1); retrying in <s>"
        ],
        [
          "WARN",
          "cannot connect to the database (mysql://app:***@db/x), attempt 2: refused by mysql://app:***@db:3306/x (#2); retrying in <s>"
        ],
        [
          "WARN",
          "cannot connect to the database (mysql://app:***@db/x), attempt 3: refused by mysql://app:***@db:3306/x (#3); giving up"
        ]
      ])
      expect(logs.lines.map((l) => l.annotations.attempt)).toEqual([1, 2, 3])
    }))

  it.live("a `while` that refuses the error fails at once; a layer that builds is built once", () =>
    Effect.gen(function*() {
      let tries = 0
      const refused = Layer.effect(Conn, Effect.suspend(() => Effect.fail(`bad config (#${++tries})`)))
      const logs = captureLogs()
      const exit = yield* Effect.exit(
        Effect.provide(Conn, Leasehold.retryConnect(refused, { while: (e) => !e.startsWith("bad config") }))
      ).pipe(
        Effect.provide(logs.layer)
      )
      expect(exit).toEqual(Exit.fail("bad config (#1)"))
      expect(logs.lines.map((l) => l.message)).toEqual([
        "cannot connect to the database, attempt 1: bad config (#1); giving up"
      ])

      let builds = 0
      const fine = Layer.effect(Conn, Effect.sync(() => ++builds))
      expect(yield* Effect.provide(Conn, Leasehold.retryConnect(fine))).toBe(1)
      expect(builds).toBe(1)
    }))
})

const BIN = join(import.meta.dirname, "..", "..", "dist", "cli", "bin.js")
const JOBS = join(import.meta.dirname, "..", "fixtures", "jobs.mjs")

/** `leasehold worker …` as a child process, its stderr collected; killed when the scope closes. */
const spawnWorker = (args: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, [BIN, "worker", ...args], { env: { ...process.env, LEASEHOLD_JOBS: JOBS } })
      const out = { stderr: "" }
      child.stderr.on("data", (d) => (out.stderr += String(d)))
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      return { child, out, exited }
    }),
    ({ child }) => Effect.sync(() => void (child.exitCode === null && child.kill("SIGKILL")))
  )

describe("`leasehold worker` started while its database is down", () => {
  it.live(
    "logs its failed attempts (password masked), starts once the database is back, and stops on SIGTERM",
    () =>
      Effect.gen(function*() {
        const target = parseUrl(PG_URL)
        const direct = yield* postgres.direct
        const prefix = uniquePrefix("outcli")
        yield* Effect.addFinalizer(() => dropPrefixed(direct, prefix))
        const proxy = yield* startProxy({ host: target.host, port: target.port }, { cut: true })
        // A password in the URL (the server's, or one a trusting server ignores) must never be logged.
        const password = target.password === undefined ? "never-logged-s3cret" : Redacted.value(target.password)
        const url = `postgres://${encodeURIComponent(target.username)}:${
          encodeURIComponent(password)
        }@127.0.0.1:${proxy.port}/${target.database}`
        const { exited, out, child } = yield* spawnWorker([
          "--database-url",
          url,
          "--prefix",
          prefix,
          "--host",
          "cli-outage",
          "--poll-interval",
          "100 millis"
        ])

        const shown = `postgres://${target.username}:***@127.0.0.1:${proxy.port}/${target.database}`
        const line = (n: number) => `message="cannot connect to the database (${shown}), attempt ${n}: `
        yield* waitUntil("a failed attempt logged by the CLI", Effect.sync(() => out.stderr.includes(line(1))))
        expect(out.stderr).toMatch(/level=WARN .*attempt 1: .+; retrying in \d+\.\ds" attempt=1 retryInMs=\d+/)
        expect(out.stderr).not.toContain(password)
        expect(child.exitCode).toBe(null)

        yield* proxy.restore()
        yield* waitUntil(
          "the worker started",
          Effect.sync(() => /leasehold worker cli-outage: .*Greet.*; Ctrl-C to stop/.test(out.stderr))
        )
        child.kill("SIGTERM")
        expect(yield* Effect.promise(() => exited)).toBe(0)
        expect(out.stderr).not.toContain(password)
        expect(out.stderr).not.toMatch(/\n\s+at /)
      }).pipe(scopedBounded, Effect.provide(Reactivity.layer)),
    { timeout: 60_000 }
  )
})
