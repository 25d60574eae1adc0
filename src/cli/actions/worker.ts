/** What `worker` does (declared in ../commands/worker.ts, loaded only to run). */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as SqlJobStore from "../../adapters/sql/JobStore.ts"
import { jobsLayer } from "../../runtime/Job.ts"
import type { Jobs } from "../../runtime/Job.ts"
import * as Metrics from "../../runtime/metricsServer.ts"
import * as Migrator from "../../runtime/migrate.ts"
import * as Worker from "../../runtime/Worker.ts"
import { workerDatabaseLayer } from "../database.ts"
import { CliError } from "../format.ts"
import { loadJobs } from "../jobModule.ts"
import { currentLauncher, launcherExit, startedByNpmExec } from "../launcher.ts"
import { type LogFormat, textLogger, workerLogger } from "../logging.ts"
import type { Common } from "../options.ts"
import { CurrentSession } from "../terminal.ts"

/** The values of `worker`. */
export interface WorkerConfig extends Common {
  readonly jobs: string
  readonly queue: ReadonlyArray<string>
  readonly concurrency: number
  readonly host: Option.Option<string>
  readonly hostCap: number
  readonly pollInterval: number
  readonly gracePeriod: number
  readonly logFormat: Option.Option<LogFormat>
  readonly metricsPort: Option.Option<number>
  readonly metricsHost: string
  readonly retentionCompleted: Option.Option<number | false>
  readonly retentionDead: Option.Option<number | false>
  readonly retentionHosts: Option.Option<number | false>
  readonly retentionLostLeases: Option.Option<number | false>
  readonly noRetention: boolean
}

/**
 * The worker's `retention` option from `--retention-completed`, `--retention-dead`,
 * `--retention-hosts`, `--retention-lost-leases` (each a duration or never; absent: the default) and `--no-retention`
 * (off, and not with the others) (docs/behaviour.md §13).
 */
export const retentionOf = (c: WorkerConfig): Effect.Effect<Worker.RetentionConfig | false, CliError> => {
  const kinds = {
    completed: Option.getOrUndefined(c.retentionCompleted),
    dead: Option.getOrUndefined(c.retentionDead),
    hosts: Option.getOrUndefined(c.retentionHosts),
    lostLeases: Option.getOrUndefined(c.retentionLostLeases)
  }
  if (!c.noRetention) return Effect.succeed(kinds)
  return Object.values(kinds).every((v) => v === undefined)
    ? Effect.succeed(false)
    : Effect.fail(new CliError({ message: "give --no-retention or --retention-…, not both" }))
}

/**
 * Migrates, then works the queues until interrupted, or, when npm exec (npx) started it, until
 * that npm process is gone (../launcher.ts). The database is waited for if it is down at start-up
 * (`workerDatabaseLayer`); an interrupt closes the worker's scope, so running attempts get
 * the grace period to finish (docs/behaviour.md §9). Logs at info and above unless
 * `--log-level` says otherwise (src/cli/main.ts), one line per finished attempt among them, as
 * `--log-format` says (logfmt; JSON lines with `--json`). Finished jobs and silent hosts are
 * deleted as the `--retention-…` options say (`retentionOf`).
 */
export const worker = (c: WorkerConfig) => {
  const format = Option.getOrElse(c.logFormat, (): LogFormat => (c.json ? "json" : "logfmt"))
  return Effect.gen(function*() {
    // Taken first, so that an npm gone while the worker starts is noticed too.
    const launcher = startedByNpmExec((yield* CurrentSession).io.env) ? currentLauncher() : undefined
    const retention = yield* retentionOf(c)
    const types = yield* loadJobs(c.jobs)
    const services = Layer.mergeAll(SqlJobStore.layer({ prefix: c.prefix }), jobsLayer(...types) as Layer.Layer<Jobs>)
    const names = types.map((t) => t.name).join(", ")
    const program = Effect.gen(function*() {
      const migrator = yield* Migrator.make({ prefix: c.prefix })
      yield* migrator.run
      const handle = yield* Worker.make({
        queues: c.queue.length === 0 ? undefined : c.queue,
        concurrency: c.concurrency,
        host: Option.getOrUndefined(c.host),
        hostCap: c.hostCap,
        pollInterval: c.pollInterval,
        gracePeriod: c.gracePeriod,
        retention
      })
      if (Option.isSome(c.metricsPort)) {
        const { port } = yield* Metrics.serve({ port: c.metricsPort.value, host: c.metricsHost })
        yield* Effect.logInfo(`metrics at http://${c.metricsHost}:${port}/metrics`)
      }
      // The banner is an info line: a JSON log line in JSON, and quiet below info.
      const level = yield* FiberRef.get(FiberRef.currentMinimumLogLevel)
      yield* format === "json"
        ? Effect.logInfo("worker started").pipe(Effect.annotateLogs({ host: handle.host, jobs: names }))
        : LogLevel.greaterThan(level, LogLevel.Info)
        ? Effect.void
        : Console.error(`leasehold worker ${handle.host}: ${names}; Ctrl-C to stop`)
      return yield* Effect.never
    })
    const run = Effect.scoped(program).pipe(
      Effect.provide(services.pipe(Layer.provideMerge(workerDatabaseLayer(c.databaseUrl))))
    )
    if (launcher === undefined) return yield* run
    // npm does not pass SIGTERM on (../launcher.ts): once it is gone, the worker is interrupted
    // as SIGTERM interrupts it, whether it is running (its attempts get the grace period) or
    // still starting (waiting for its database).
    const orphaned = Effect.zipRight(
      launcherExit(launcher, c.pollInterval),
      Effect.logWarning(
        "the npm exec that started this worker is gone (npm does not pass signals on); stopping as on SIGTERM"
      )
    )
    return yield* Effect.raceFirst(run, orphaned)
  }).pipe(format === "logfmt" ? (self) => self : Effect.provide(Logger.replace(textLogger, workerLogger(format))))
}
