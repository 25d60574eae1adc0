/**
 * Databases of the chaos run: which ones, how to connect (PostgreSQL, MariaDB/MySQL, an SQLite
 * file shared by several processes), how to drop a run's tables, and how to restart a server.
 * Loopback only.
 */
import { SqlClient } from "@effect/sql"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import { execFile } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { isMysqlUrl, isPostgresUrl } from "../../src/adapters/clients.ts"
import { nodeUrls } from "../../src/adapters/mysql/urls.ts"

/**
 * The databases a chaos run can use: "galera" is the three-node MariaDB Galera cluster of
 * scripts/galera/start, reached through leasehold's cluster client (every node in one URL).
 */
export type DbKind = "pg" | "mysql" | "sqlite" | "galera"

/** The database kinds of the full run (`--db all`, `npm run chaos`), in the order runs report them. */
export const DB_KINDS: ReadonlyArray<DbKind> = ["pg", "mysql", "sqlite"]

/** The PostgreSQL URL (LEASEHOLD_PG_URL, else the local test database). */
export const PG_URL = process.env.LEASEHOLD_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
/** The MariaDB/MySQL URL (LEASEHOLD_MYSQL_URL, else the local test database). */
export const MYSQL_URL = process.env.LEASEHOLD_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test"

/** The Galera cluster, every node in one URL (LEASEHOLD_GALERA_URL, else scripts/galera/start's). */
export const GALERA_URL = process.env.LEASEHOLD_GALERA_URL ??
  "mysql://root@127.0.0.1:3307,127.0.0.1:3308,127.0.0.1:3309/test"

/** The connection URL (or SQLite file path) for a kind; SQLite needs its file. */
export const urlFor = (kind: DbKind, sqliteFile: string): string =>
  kind === "pg" ? PG_URL : kind === "mysql" ? MYSQL_URL : kind === "galera" ? GALERA_URL : sqliteFile

/** The kind of a URL as the worker entry receives it (several hosts: a Galera cluster). */
export const kindOfUrl = (url: string): DbKind => {
  if (nodeUrls(url) !== undefined) return "galera"
  return isPostgresUrl(url) ? "pg" : isMysqlUrl(url) ? "mysql" : "sqlite"
}

/**
 * A SqlClient layer for a URL. PostgreSQL's layer also provides `PgClient`, so a worker on it
 * wakes on LISTEN/NOTIFY. Pools are small: several processes share one server.
 */
export const sqlLayer = (url: string, maxConnections = 6): Layer.Layer<SqlClient.SqlClient, unknown> => {
  // Only the driver in use is loaded: a worker process starts faster on a busy machine.
  const load = <A>(f: () => Promise<Layer.Layer<A, unknown>>) => Layer.unwrapEffect(Effect.promise(f))
  switch (kindOfUrl(url)) {
    case "pg":
      // leasehold's own client layer, as an app gets it from leasehold/postgres (named prepared
      // statements, src/adapters/postgres/preparing.ts): the guarantees are checked on what ships.
      return load(async () =>
        (await import("../../src/adapters/postgres/client.ts")).clientLayer(url, { maxConnections })
      )
    case "mysql":
      return load(async () =>
        (await import("@effect/sql-mysql2")).MysqlClient.layer({
          url: Redacted.make(url.replace(/^mariadb:/, "mysql:")),
          maxConnections
        })
      )
    case "galera":
      return load(async () => {
        const cluster = await import("../../src/adapters/mysql/cluster.ts")
        return cluster.clusterClientLayer(nodeUrls(url) ?? [url], {
          maxConnectionsPerNode: Math.max(2, Math.ceil(maxConnections / 2))
        })
      })
    case "sqlite":
      return load(async () =>
        (await import("@effect/sql-sqlite-node")).SqliteClient.layer({
          filename: url.replace(/^sqlite:(\/\/)?/, "").replace(/^file:/, "")
        })
      )
  }
}

/**
 * How long the controller's SQLite connection waits for the write lock before SQLITE_BUSY (wall
 * ms; better-sqlite3's default is 5 s). better-sqlite3 is synchronous: while it waits, the
 * controller's whole event loop waits with it, including the timer that sends SIGCONT to a worker
 * it paused. If that worker was stopped holding the write lock, an enqueue blocks for leasehold's
 * nine tries of 5 s (45 s) and gives up, and the pause lasts as long. With 25 ms, one enqueue
 * blocks for about a quarter of a second at most, and the controller retries it later
 * (`retryFor`, which sleeps between tries), so the SIGCONT comes on time.
 */
export const CONTROLLER_BUSY_TIMEOUT_MS = 25

/**
 * The controller's SqlClient layer: `sqlLayer`, and on SQLite a busy timeout of
 * `CONTROLLER_BUSY_TIMEOUT_MS` on its connection (the client has one, so the pragma holds for
 * every statement). The workers keep the default: a worker blocking on the lock stalls only itself.
 */
export const controllerSqlLayer = (
  url: string,
  maxConnections?: number
): Layer.Layer<SqlClient.SqlClient, unknown> =>
  kindOfUrl(url) !== "sqlite"
    ? sqlLayer(url, maxConnections)
    : Layer.tap(
      sqlLayer(url, maxConnections),
      (context) =>
        Context.get(context, SqlClient.SqlClient).unsafe(`PRAGMA busy_timeout = ${CONTROLLER_BUSY_TIMEOUT_MS}`)
    )

/** Loads the driver module for a URL now, so a later `sqlLayer` finds it in the module cache. */
export const preloadDriver = async (url: string): Promise<void> => {
  const kind = kindOfUrl(url)
  await (kind === "pg"
    ? import("@effect/sql-pg")
    : kind === "mysql"
    ? import("@effect/sql-mysql2")
    : kind === "galera"
    ? import("../../src/adapters/mysql/cluster.ts")
    : import("@effect/sql-sqlite-node"))
}

/** Quotes a table name of this run (already restricted to [a-z0-9_]). */
export const quoteIdent = (sql: SqlClient.SqlClient, name: string): string => {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`unexpected table name ${name}`)
  return sql.onDialectOrElse({ mysql: () => `\`${name}\``, orElse: () => `"${name}"` })
}

/** Drops every table whose name starts with `prefix`, found through the catalog. */
export const dropPrefixed = (prefix: string): Effect.Effect<ReadonlyArray<string>, unknown, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const like = `${prefix.replace(/_/g, "\\_")}%`
    const rows = yield* sql.onDialectOrElse({
      pg: () =>
        sql<
          { n: string }
        >`SELECT table_name AS n FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE ${like}`,
      mysql: () =>
        sql<
          { n: string }
        >`SELECT table_name AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE ${like}`,
      orElse: () =>
        sql<{ n: string }>`SELECT name AS n FROM sqlite_master WHERE type = 'table' AND name LIKE ${like} ESCAPE '\\'`
    })
    const names = rows.map((r) => String(r.n)).filter((n) => n.startsWith(prefix))
    for (const n of names) yield* sql.unsafe(`DROP TABLE IF EXISTS ${quoteIdent(sql, n)}`)
    return names
  })

/** Runs a command (no shell), bounded by `timeoutMs`; resolves with its exit code and output. */
export const runCommand = (
  file: string,
  args: ReadonlyArray<string>,
  timeoutMs: number
): Promise<{ readonly code: number; readonly output: string }> =>
  new Promise((resolve) => {
    execFile(file, [...args], { timeout: timeoutMs, killSignal: "SIGKILL" }, (error, stdout, stderr) => {
      const code = error === null
        ? 0
        : typeof (error as { code?: unknown }).code === "number"
        ? (error as { code: number }).code
        : 1
      resolve({ code, output: `${stdout}${stderr}`.trim() })
    })
  })

const command = (file: string, args: ReadonlyArray<string>, timeoutMs: number) =>
  Effect.promise(() => runCommand(file, args, timeoutMs))

/**
 * Polls `check` every 250 ms until it holds or `limitMs` of wall-clock time pass. (Deadlines here
 * are wall-clock on purpose: the controller may run under the warped chaos clock.)
 */
export const waitUntil = (check: Effect.Effect<boolean>, limitMs: number): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const deadline = Date.now() + limitMs
    for (;;) {
      if (yield* check) return true
      if (Date.now() >= deadline) return false
      yield* Effect.sleep(Duration.millis(250))
    }
  })

/**
 * Runs `effect` until it succeeds, retrying every `everyMs` (wall clock) for at most `limitMs`;
 * then fails with the last error. For writes that must outlive a database restart.
 */
export const retryFor = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  limitMs: number,
  everyMs = 250
): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const deadline = Date.now() + limitMs
    for (;;) {
      const result = yield* Effect.either(effect)
      if (result._tag === "Right") return result.right
      if (Date.now() >= deadline) return yield* Effect.fail(result.left)
      yield* Effect.sleep(Duration.millis(everyMs))
    }
  })

/** What one server restart did, for the summary. */
export interface RestartReport {
  readonly kind: DbKind
  readonly ok: boolean
  /** Wall-clock ms from the stop command until the server answered again. */
  readonly downMs: number
  readonly detail: string
}

/** The pid file of the MariaDB server on :3306 (Debian's default, as .ci/run starts it). */
const MARIADB_PID_FILE = "/run/mysqld/mysqld.pid"

const readPidFile = (path: string): string => {
  try {
    return readFileSync(path, "utf8").trim()
  } catch {
    return ""
  }
}

/** Whether a process runs (signal 0 checks without sending anything); false for no pid. */
const processAlive = (pid: number): boolean => {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * Restarts the database server of `kind` and waits (up to 90 s) until it answers again.
 * PostgreSQL: `pg_ctlcluster --skip-systemctl-redirect <version> main restart`. MariaDB:
 * `mariadb-admin -uroot shutdown`, wait for mariadbd to exit, then `start-stop-daemon --start
 * --oknodo --background --exec /usr/sbin/mariadbd`. SQLite has no server: nothing happens.
 * Galera: node 1 is killed and restarted (`killGaleraNode`), never the server on 3306; the chaos
 * plan uses its own node faults instead. The restarted server is a system daemon and is left running.
 */
export const restartServer = (kind: DbKind): Effect.Effect<RestartReport> =>
  Effect.gen(function*() {
    const started = Date.now()
    if (kind === "sqlite") return { kind, ok: true, downMs: 0, detail: "no server" }
    if (kind === "galera") return yield* killGaleraNode(1, 5000)
    if (kind === "pg") {
      const versions = readdirSync("/etc/postgresql").filter((v) => /^\d+$/.test(v))
      const version = versions[0]
      if (version === undefined) return { kind, ok: false, downMs: 0, detail: "no cluster under /etc/postgresql" }
      const r = yield* command("pg_ctlcluster", ["--skip-systemctl-redirect", version, "main", "restart"], 60_000)
      const up = yield* waitUntil(
        Effect.map(command("pg_isready", ["-h", "127.0.0.1", "-p", "5432", "-q"], 5_000), (x) => x.code === 0),
        90_000
      )
      return {
        kind,
        ok: r.code === 0 && up,
        downMs: Date.now() - started,
        detail: `pg_ctlcluster exit ${r.code}${r.output ? `: ${r.output.slice(0, 200)}` : ""}`
      }
    }
    // The :3306 server is known by its pid file, not by its binary: the Galera test cluster's
    // nodes (scripts/galera/start) run the same mariadbd, and a check by name would wait for them.
    const pid = Number(readPidFile(MARIADB_PID_FILE))
    const down = yield* command("mariadb-admin", ["-uroot", "shutdown"], 60_000)
    // start-stop-daemon --oknodo does nothing while the old process still runs: wait for it to go.
    const gone = yield* waitUntil(Effect.sync(() => !processAlive(pid)), 60_000)
    const start = yield* command("start-stop-daemon", [
      "--start",
      "--oknodo",
      "--background",
      "--pidfile",
      MARIADB_PID_FILE,
      "--exec",
      "/usr/sbin/mariadbd"
    ], 30_000)
    const up = yield* waitUntil(
      Effect.map(command("mariadb-admin", ["-h", "127.0.0.1", "-P", "3306", "-uroot", "ping"], 5_000), (x) =>
        x.code === 0),
      90_000
    )
    return {
      kind,
      ok: down.code === 0 && gone && start.code === 0 && up,
      downMs: Date.now() - started,
      detail: `shutdown exit ${down.code}, old process gone ${gone}, start exit ${start.code}, answering ${up}`
    }
  })

// ---------------------------------------------------------------------------------------------
// Galera node faults (scripts/galera/start's cluster)

const GALERA_DIR = process.env.LEASEHOLD_GALERA_DIR ?? join(process.env.TMPDIR ?? "/tmp", "leasehold-galera")
const GALERA_START = join(dirname(fileURLToPath(import.meta.url)), "..", "galera", "start")

/** Runs one statement on one Galera node (1-3) with the mariadb client; resolves with its output. */
const onNode = (node: number, statement: string) =>
  command(
    "mariadb",
    ["-h", "127.0.0.1", "-P", String(3306 + node), "-uroot", "--connect-timeout=3", "-Nse", statement],
    10_000
  )

/** Whether a node answers and is Synced with a primary component of three. */
const nodeSynced = (node: number) =>
  Effect.map(
    onNode(node, "SHOW STATUS WHERE Variable_name IN ('wsrep_local_state_comment', 'wsrep_cluster_size')"),
    (r) => r.code === 0 && /Synced/.test(r.output) && /wsrep_cluster_size\s+3/.test(r.output)
  )

/**
 * kill -9 of one Galera node's mariadbd (the other two keep quorum), `downMs` of wall time
 * down, then `scripts/galera/start <node>`: it restarts and rejoins (IST), and is waited for
 * until it is Synced in a cluster of three again.
 */
export const killGaleraNode = (node: number, downMs: number): Effect.Effect<RestartReport> =>
  Effect.gen(function*() {
    const started = Date.now()
    const pid = Number(readFileSync(join(GALERA_DIR, `node${node}`, "mariadbd.pid"), "utf8").trim())
    const killed = yield* Effect.sync(() => {
      try {
        process.kill(pid, "SIGKILL")
        return true
      } catch {
        return false
      }
    })
    yield* Effect.sleep(Duration.millis(downMs))
    const start = yield* command(GALERA_START, [String(node)], 150_000)
    const synced = yield* waitUntil(nodeSynced(node), 60_000)
    return {
      kind: "galera" as const,
      ok: killed && start.code === 0 && synced,
      downMs: Date.now() - started,
      detail: `node ${node} (pid ${pid}) kill -9 ${
        killed ? "sent" : "FAILED"
      }, restart exit ${start.code}, rejoined ${synced}`
    }
  })

/**
 * Cuts one Galera node off from the group for `forMs` (its provider option gmcast.isolate=1: it
 * drops out of the primary component and refuses every statement with WSREP 1047), then lets it
 * back and waits until it is Synced in a cluster of three again.
 */
export const isolateGaleraNode = (node: number, forMs: number): Effect.Effect<RestartReport> =>
  Effect.gen(function*() {
    const started = Date.now()
    const cut = yield* onNode(node, "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=1'")
    yield* Effect.sleep(Duration.millis(forMs))
    const back = yield* onNode(node, "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=0'")
    const synced = yield* waitUntil(nodeSynced(node), 60_000)
    return {
      kind: "galera" as const,
      ok: cut.code === 0 && back.code === 0 && synced,
      downMs: Date.now() - started,
      detail: `node ${node} cut off from the group (gmcast.isolate) for ${
        (forMs / 1000).toFixed(1)
      } s: isolate exit ${cut.code}, rejoin exit ${back.code}, Synced again ${synced}`
    }
  })
