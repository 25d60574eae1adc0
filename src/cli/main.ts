/**
 * The `leasehold` command line: run a worker, enqueue, inspect and repair jobs and leases,
 * migrate, drain and resume hosts. Database from `--database-url` or `LEASEHOLD_DATABASE_URL`
 * (`postgres://…`, `mysql://…`, or an SQLite file path; default `./leasehold.db`).
 * Human-readable tables by default, `--json` for scripts. Bad input gets one line on stderr
 * and a non-zero exit code, never a stack trace; so does a database that cannot be reached,
 * except for `worker`, which waits for it (a warning per attempt, backoff up to 30 s).
 */
import { Args, Command, Options } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { SqlClient } from "@effect/sql"
import { Cause, Clock, Config, Console, Data, Duration, Effect, Layer, Logger, LogLevel, Option, Redacted as R, Schema } from "effect"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { JobLeases, JobStore } from "../adapters/JobStore.ts"
import * as JobStoreModule from "../adapters/JobStore.ts"
import { isExpired } from "../core/lease.ts"
import { JOB_STATUSES, type JobStatus } from "../core/jobs.ts"
import { type AnyJobType, enqueue, jobsLayer } from "../runtime/Job.ts"
import * as Leasehold from "../runtime/Leasehold.ts"
import * as Migrator from "../runtime/migrate.ts"
import * as Worker from "../runtime/Worker.ts"

/** A problem with what the user typed or pointed us at: printed as one line. */
export class CliError extends Data.TaggedError("CliError")<{ readonly message: string }> {}

// ---------------------------------------------------------------------------------------------
// Shared options

const databaseUrl = Options.text("database-url").pipe(
  Options.withDescription("postgres://…, mysql://…, or an SQLite file path"),
  Options.withFallbackConfig(Config.string("LEASEHOLD_DATABASE_URL")),
  Options.withDefault("./leasehold.db")
)
const prefix = Options.text("prefix").pipe(Options.withDescription("table prefix"), Options.withDefault("leasehold_"))
const json = Options.boolean("json").pipe(Options.withDescription("print JSON for scripts"))
const common = { databaseUrl, prefix, json }
type Common = { readonly databaseUrl: string; readonly prefix: string; readonly json: boolean }

/**
 * The SqlClient layer for a database URL, failing with the driver's error. Only the driver in
 * use is loaded (start-up time matters for a command line).
 */
const connectLayer = (url: string): Layer.Layer<SqlClient.SqlClient, unknown> => {
  const load = (f: () => Promise<Layer.Layer<SqlClient.SqlClient, unknown>>) => Layer.unwrapEffect(Effect.promise(f))
  if (isPostgres(url)) {
    return load(async () => {
      const { PgClient } = await import("@effect/sql-pg")
      return PgClient.layer({ url: Redacted(url), maxConnections: 10, connectTimeout: "10 seconds" })
    })
  }
  if (isMysql(url)) {
    return load(async () => {
      const { MysqlClient } = await import("@effect/sql-mysql2")
      return MysqlClient.layer({ url: Redacted(url.replace(/^mariadb:/, "mysql:")), maxConnections: 10 })
    })
  }
  const filename = url.replace(/^sqlite:(\/\/)?/, "").replace(/^file:/, "")
  return load(async () => {
    const { SqliteClient } = await import("@effect/sql-sqlite-node")
    return SqliteClient.layer({ filename })
  })
}

const isPostgres = (url: string) => /^postgres(ql)?:\/\//.test(url)
const isMysql = (url: string) => /^(mysql|mariadb):\/\//.test(url)

const connectFailed = (url: string) => (e: unknown) =>
  new CliError({ message: `cannot connect to the database (${redact(url)}): ${rootMessage(e)}` })

/** The SqlClient layer for a database URL; an unreachable database fails it at once. */
export const databaseLayer = (url: string): Layer.Layer<SqlClient.SqlClient, CliError> =>
  Layer.mapError(connectLayer(url), connectFailed(url))

/**
 * The worker's SqlClient layer: a PostgreSQL or MySQL/MariaDB server that cannot be reached is
 * waited for (each failed attempt logged as a warning, retried with backoff up to 30 s apart;
 * see `Leasehold.retryConnect`). An SQLite file has no server to wait for: it fails at once.
 */
export const workerDatabaseLayer = (url: string): Layer.Layer<SqlClient.SqlClient, CliError> =>
  isPostgres(url) || isMysql(url)
    ? Layer.mapError(Leasehold.retryConnect(connectLayer(url), { label: redact(url) }), connectFailed(url))
    : databaseLayer(url)

const Redacted = (s: string) => R.make(s)
const redact = (url: string) => url.replace(/\/\/([^:@/]+):([^@/]+)@/, "//$1:***@")

const rootMessage = (e: unknown): string => {
  let current: unknown = e
  for (let i = 0; i < 5; i++) {
    const cause = (current as { cause?: unknown } | null)?.cause
    if (cause === undefined || cause === null) break
    current = cause
  }
  if (current instanceof AggregateError && current.errors.length > 0) current = current.errors[0]
  const message = (current as { message?: unknown } | null)?.message
  return typeof message === "string" && message !== "" ? message : String(current)
}

/** Runs `effect` with the store services for the common options. */
const withStore = <A, E, R>(c: Common, effect: Effect.Effect<A, E, R>) =>
  Effect.provide(effect, JobStoreModule.layer({ prefix: c.prefix }).pipe(Layer.provideMerge(databaseLayer(c.databaseUrl))))

// ---------------------------------------------------------------------------------------------
// Output

const table = (records: ReadonlyArray<object>, columns: ReadonlyArray<string>): string => {
  const rows = records as ReadonlyArray<Record<string, unknown>>
  if (rows.length === 0) return "(none)"
  const cell = (v: unknown) => (v === null || v === undefined ? "-" : String(v).replace(/\s+/g, " "))
  const widths = columns.map((c) => Math.min(60, Math.max(c.length, ...rows.map((r) => cell(r[c]).length))))
  const line = (values: ReadonlyArray<string>) => values.map((v, i) => v.slice(0, widths[i]).padEnd(widths[i]!)).join("  ").trimEnd()
  return [line(columns), line(widths.map((w) => "-".repeat(w))), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join("\n")
}

const print = (c: Common, value: unknown, human: () => string) => Console.log(c.json ? JSON.stringify(value, null, 2) : human())

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
const inHuman = (ms: number) => {
  const s = Math.round(Math.abs(ms) / 1000)
  const text = s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`
  return ms < 0 ? `expired ${text} ago` : text
}

const parseDuration = (name: string, text: string) =>
  Option.match(Duration.decodeUnknown(/^\d+$/.test(text) ? `${text} seconds` : text), {
    onNone: () => Effect.fail(new CliError({ message: `--${name}: not a duration: ${JSON.stringify(text)} (try "30 seconds", "7 days")` })),
    onSome: (d) => Effect.succeed(d)
  })

// ---------------------------------------------------------------------------------------------
// Job modules

/** Loads an app's job types from a module: every export that is a job type (or an array of them). */
export const loadJobs = (module: string): Effect.Effect<ReadonlyArray<AnyJobType>, CliError> =>
  Effect.tryPromise({
    try: () => import(pathToFileURL(resolve(module)).href) as Promise<Record<string, unknown>>,
    catch: (e) => new CliError({ message: `cannot load job module ${module}: ${rootMessage(e)}` })
  }).pipe(
    Effect.flatMap((mod) => {
      const isJob = (v: unknown): v is AnyJobType =>
        typeof v === "object" && v !== null && "name" in v && "schema" in v && "perform" in v && "timeoutSeconds" in v
      const found = new Map<string, AnyJobType>()
      for (const value of Object.values(mod)) {
        for (const v of Array.isArray(value) ? value : [value]) if (isJob(v)) found.set(v.name, v)
      }
      return found.size === 0
        ? Effect.fail(new CliError({ message: `job module ${module} exports no job types (define them with Job.define)` }))
        : Effect.succeed([...found.values()])
    })
  )

const jobsModule = Options.text("jobs").pipe(
  Options.withDescription("module exporting the app's job types"),
  Options.withFallbackConfig(Config.string("LEASEHOLD_JOBS"))
)

// ---------------------------------------------------------------------------------------------
// Commands

const migrateRun = Command.make("migrate", common, (c) =>
  withStore(c, Effect.gen(function*() {
    const migrator = yield* Migrator.make({ prefix: c.prefix })
    const result = yield* migrator.run
    yield* print(c, result, () =>
      result.applied.length === 0
        ? "nothing to apply: the schema is up to date"
        : `applied ${result.applied.map((m) => `${m.id} (${m.name})`).join(", ")}`)
  })))

const migrateStatus = Command.make("status", common, (c) =>
  withStore(c, Effect.gen(function*() {
    const migrator = yield* Migrator.make({ prefix: c.prefix })
    const status = yield* migrator.status
    yield* print(c, status, () => {
      const lock = status.lock
      const lockLine = lock.owner === null
        ? "lock: free"
        : `lock: ${lock.held ? "held" : "expired"} by ${lock.owner} on ${lock.host ?? "?"}, held for ${inHuman(lock.heldForMs ?? 0)}, ${
          lock.held ? `expires in ${inHuman(lock.expiresInMs ?? 0)}` : inHuman(lock.expiresInMs ?? 0)
        }`
      return [
        `applied: ${status.applied.map((m) => m.id).join(", ") || "none"}`,
        `pending: ${status.pending.map((m) => `${m.id} (${m.name})`).join(", ") || "none"}`,
        lockLine
      ].join("\n")
    })
  })))

const migrateUnlock = Command.make("unlock", { ...common, force: Options.boolean("force") }, (c) =>
  withStore(c, Effect.gen(function*() {
    const migrator = yield* Migrator.make({ prefix: c.prefix })
    const result = yield* migrator.unlock({ force: c.force })
    yield* print(c, result, () =>
      result.removed ? "migration lock removed" : result.lock.owner === null ? "migration lock is free" : "migration lock is live: not removed (use --force)")
    if (!result.removed && result.lock.held) return yield* new CliError({ message: "the migration lock is live; not removed (use --force)" })
  })))

const migrate = migrateRun.pipe(Command.withSubcommands([migrateStatus, migrateUnlock]))

const worker = Command.make(
  "worker",
  {
    ...common,
    jobs: jobsModule,
    queue: Options.text("queue").pipe(Options.repeated, Options.withDescription("queue to work (repeatable; default all)")),
    concurrency: Options.integer("concurrency").pipe(Options.withDefault(4)),
    host: Options.text("host").pipe(Options.optional),
    hostCap: Options.integer("host-cap").pipe(Options.withDefault(0)),
    pollInterval: Options.text("poll-interval").pipe(Options.withDefault("1 second")),
    gracePeriod: Options.text("grace-period").pipe(Options.withDefault("30 seconds"))
  },
  (c) =>
    Effect.gen(function*() {
      const types = yield* loadJobs(c.jobs)
      const poll = yield* parseDuration("poll-interval", c.pollInterval)
      const grace = yield* parseDuration("grace-period", c.gracePeriod)
      if (c.concurrency < 1) return yield* new CliError({ message: "--concurrency must be at least 1" })
      const db = workerDatabaseLayer(c.databaseUrl)
      const services = Layer.mergeAll(JobStoreModule.layer({ prefix: c.prefix }), jobsLayer(...types) as Layer.Layer<import("../runtime/Job.ts").Jobs>)
      const program = Effect.gen(function*() {
        const migrator = yield* Migrator.make({ prefix: c.prefix })
        yield* migrator.run
        const handle = yield* Worker.make({
          queues: c.queue.length === 0 ? undefined : c.queue,
          concurrency: c.concurrency,
          host: Option.getOrUndefined(c.host),
          hostCap: c.hostCap,
          pollInterval: poll,
          gracePeriod: grace
        })
        yield* Console.error(`leasehold worker ${handle.host}: ${types.map((t) => t.name).join(", ")}; Ctrl-C to stop`)
        return yield* Effect.never
      })
      return yield* Effect.scoped(program).pipe(
        Effect.provide(services.pipe(Layer.provideMerge(db))),
        Logger.withMinimumLogLevel(LogLevel.Info)
      )
    })
)

const enqueueCommand = Command.make(
  "enqueue",
  {
    ...common,
    jobs: jobsModule,
    name: Args.text({ name: "job" }),
    payload: Args.text({ name: "payload-json" }).pipe(Args.withDefault("{}")),
    queue: Options.text("queue").pipe(Options.optional),
    priority: Options.integer("priority").pipe(Options.optional),
    delay: Options.text("delay").pipe(Options.optional),
    uniqueKey: Options.text("unique-key").pipe(Options.optional)
  },
  (c) =>
    Effect.gen(function*() {
      const types = yield* loadJobs(c.jobs)
      const type = types.find((t) => t.name === c.name)
      if (type === undefined) {
        return yield* new CliError({ message: `unknown job ${JSON.stringify(c.name)}; known: ${types.map((t) => t.name).join(", ")}` })
      }
      const payload = yield* Effect.try({
        try: () => JSON.parse(c.payload) as unknown,
        catch: (e) => new CliError({ message: `payload is not valid JSON: ${rootMessage(e)}` })
      })
      const decoded = yield* Effect.mapError(
        Schema.decodeUnknown(type.schema)(payload),
        (e) => new CliError({ message: `invalid payload for ${type.name}: ${e.message.replace(/\s+/g, " ")}` })
      )
      const delay = Option.isSome(c.delay) ? yield* parseDuration("delay", c.delay.value) : undefined
      const result = yield* withStore(c, enqueue(type, decoded, {
        queue: Option.getOrUndefined(c.queue),
        priority: Option.getOrUndefined(c.priority),
        delay,
        uniqueKey: Option.getOrUndefined(c.uniqueKey)
      }))
      yield* print(c, result, () => `${result.status} ${result.id}`)
    })
)

const statusOption = Options.choice("status", JOB_STATUSES).pipe(Options.optional)

const jobsList = Command.make(
  "list",
  { ...common, status: statusOption, queue: Options.text("queue").pipe(Options.optional), name: Options.text("name").pipe(Options.optional), limit: Options.integer("limit").pipe(Options.withDefault(50)) },
  (c) =>
    withStore(c, Effect.gen(function*() {
      if (c.limit < 0) return yield* new CliError({ message: "--limit must not be negative" })
      const rows = yield* (yield* JobStore).list({
        status: Option.getOrUndefined(c.status) as JobStatus | undefined,
        queue: Option.getOrUndefined(c.queue),
        name: Option.getOrUndefined(c.name),
        limit: c.limit
      })
      yield* print(c, rows, () =>
        table(
          rows.map((r) => ({ ...r, runAt: iso(r.runAt), lastError: r.lastError?.slice(0, 60) ?? null })),
          ["id", "name", "queue", "status", "attempts", "priority", "runAt", "claimedBy", "lastError"]
        ))
    }))
)

const jobsStats = Command.make("stats", common, (c) =>
  withStore(c, Effect.gen(function*() {
    const counts = yield* (yield* JobStore).counts
    yield* print(c, counts, () => table(counts, ["queue", "status", "count"]))
  })))

const jobsRetry = Command.make("retry", { ...common, id: Args.text({ name: "job-id" }) }, (c) =>
  withStore(c, Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const ok = yield* (yield* JobStore).retryDead(c.id, now)
    if (!ok) return yield* new CliError({ message: `no failed or interrupted job with id ${c.id}` })
    yield* print(c, { id: c.id, status: "pending" }, () => `job ${c.id} is pending again`)
  })))

const jobsPurge = Command.make(
  "purge",
  { ...common, status: Options.choice("status", ["completed", "failed", "interrupted"] as const).pipe(Options.withDefault("completed" as const)), olderThan: Options.text("older-than").pipe(Options.withDefault("7 days")) },
  (c) =>
    withStore(c, Effect.gen(function*() {
      const age = yield* parseDuration("older-than", c.olderThan)
      const now = yield* Clock.currentTimeMillis
      const n = yield* (yield* JobStore).purge(c.status, now - Duration.toMillis(age))
      yield* print(c, { purged: n }, () => `purged ${n} ${c.status} job(s) older than ${Duration.format(age)}`)
    }))
)

const jobs = Command.make("jobs").pipe(Command.withSubcommands([jobsList, jobsStats, jobsRetry, jobsPurge]))

const leasesList = Command.make("list", common, (c) =>
  withStore(c, Effect.gen(function*() {
    const leases = yield* JobLeases
    const rows = (yield* leases.tableExists) ? yield* leases.list : []
    const now = yield* Clock.currentTimeMillis
    yield* print(c, rows, () =>
      table(rows.map((r) => ({ ...r, expiresIn: inHuman(r.expiresAt - now) })), ["name", "owner", "host", "expiresIn"]))
  })))

const leasesClear = Command.make("clear", { ...common, name: Args.text({ name: "lease-name" }), force: Options.boolean("force") }, (c) =>
  withStore(c, Effect.gen(function*() {
    const leases = yield* JobLeases
    const now = yield* Clock.currentTimeMillis
    const row = (yield* leases.tableExists) ? yield* leases.read(c.name) : Option.none()
    if (Option.isNone(row)) return yield* new CliError({ message: `no lease named ${JSON.stringify(c.name)}` })
    const live = !isExpired(row.value.expiresAt, now)
    if (live && !c.force) {
      return yield* new CliError({
        message: `lease ${c.name} is live (held by ${row.value.owner} on ${row.value.host ?? "?"}, expires in ${inHuman(row.value.expiresAt - now)}); use --force to clear it anyway`
      })
    }
    const removed = yield* leases.release({ name: c.name, owner: row.value.owner, expiredBefore: c.force ? undefined : now })
    if (!removed) return yield* new CliError({ message: `lease ${c.name} changed hands meanwhile; not cleared` })
    yield* print(c, { cleared: c.name }, () => `cleared lease ${c.name}${live ? " (it was live)" : ""}`)
  })))

const leases = Command.make("leases").pipe(Command.withSubcommands([leasesList, leasesClear]))

const hostOption = Options.text("host").pipe(Options.withDescription("the worker host (see `status`)"))

const drainCommand = Command.make("drain", { ...common, host: hostOption, expiresIn: Options.text("expires-in").pipe(Options.optional) }, (c) =>
  withStore(c, Effect.gen(function*() {
    const expiresIn = Option.isSome(c.expiresIn) ? yield* parseDuration("expires-in", c.expiresIn.value) : undefined
    yield* Worker.drain({ host: c.host, expiresIn })
    yield* print(c, { host: c.host, draining: true }, () => `host ${c.host} is draining${expiresIn ? ` for ${Duration.format(expiresIn)}` : ""}`)
  })))

const resumeCommand = Command.make("resume", { ...common, host: hostOption }, (c) =>
  withStore(c, Effect.gen(function*() {
    yield* Worker.resume({ host: c.host })
    yield* print(c, { host: c.host, draining: false }, () => `host ${c.host} resumed`)
  })))

const statusCommand = Command.make("status", common, (c) =>
  withStore(c, Effect.gen(function*() {
    const store = yield* JobStore
    const now = yield* Clock.currentTimeMillis
    const hosts = yield* store.listHosts
    const counts = yield* store.counts
    const running = new Map<string, number>()
    for (const r of yield* store.list({ status: "processing", limit: 10_000 })) {
      running.set(r.claimedBy ?? "?", (running.get(r.claimedBy ?? "?") ?? 0) + 1)
    }
    const hostRows = hosts.map((h) => ({
      host: h.host,
      running: running.get(h.host) ?? 0,
      cap: h.maxConcurrent || "-",
      draining: h.draining && (h.drainExpiresAt === null || h.drainExpiresAt > now) ? (h.drainExpiresAt ? `until ${iso(h.drainExpiresAt)}` : "yes") : "no",
      lastSeen: `${inHuman(now - h.lastSeenAt)} ago`,
      version: h.codeVersion
    }))
    yield* print(c, { hosts: hostRows, counts }, () =>
      [table(hostRows, ["host", "running", "cap", "draining", "lastSeen", "version"]), "", table(counts, ["queue", "status", "count"])].join("\n"))
  })))

/** The whole command tree. */
export const leasehold = Command.make("leasehold").pipe(
  Command.withDescription("durable background jobs with fenced leases, in your own SQL database"),
  Command.withSubcommands([worker, enqueueCommand, jobs, leases, migrate, drainCommand, resumeCommand, statusCommand])
)

const cli = Command.run(leasehold, { name: "leasehold", version: "0.1.0" })

/** Runs the CLI on `argv` (without node and script), printing failures as one line. */
export const main = (argv: ReadonlyArray<string>) =>
  cli(["node", "leasehold", ...argv]).pipe(
    Effect.catchAllCause((cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.void
      const failure = Cause.failureOption(cause)
      // @effect/cli has already printed its own message for bad commands and options.
      if (Option.isSome(failure) && typeof failure.value === "object" && failure.value !== null && "_tag" in failure.value &&
        ["CommandMismatch", "MissingValue", "InvalidValue", "InvalidArgument", "UnclusteredFlag", "MultipleValuesDetected", "CorrectedFlag", "NoBuiltInMatch", "MissingFlag", "MissingSubcommand", "HelpRequested"].includes(String((failure.value as { _tag: string })._tag))) {
        return Effect.sync(() => {
          process.exitCode = (failure.value as { _tag: string })._tag === "HelpRequested" ? 0 : 2
        })
      }
      const raw = Option.match(failure, {
        onNone: () => rootMessage(Cause.squash(cause)),
        onSome: (e) => (e instanceof CliError ? e.message : rootMessage(e))
      })
      const message = /no such table|doesn't exist|does not exist/.test(raw) ? `${raw} (run \`leasehold migrate\` first?)` : raw
      return Effect.sync(() => {
        process.stderr.write(`leasehold: ${message}\n`)
        process.exitCode = 1
      })
    }),
    // Logs go to stderr, so --json output on stdout stays parseable; commands other than the
    // worker only speak up for warnings.
    Logger.withMinimumLogLevel(LogLevel.Warning),
    Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))),
    Effect.provide(NodeContext.layer)
  )

/**
 * Runs the CLI as a process: SIGINT and SIGTERM interrupt it, which closes the worker's scope
 * (graceful shutdown), and the exit code says how it went.
 */
export const run = (argv: ReadonlyArray<string>): void =>
  NodeRuntime.runMain(main(argv), { disableErrorReporting: true, disablePrettyLogger: true })
