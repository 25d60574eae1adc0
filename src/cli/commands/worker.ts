/** `leasehold worker --jobs <module>`: runs the app's jobs until SIGINT or SIGTERM. */
import { Command, Options } from "@effect/cli"
import { Console, Effect, Layer, Logger, LogLevel, Option } from "effect"
import * as SqlJobStore from "../../adapters/sql/JobStore.ts"
import { jobsLayer } from "../../runtime/Job.ts"
import type { Jobs } from "../../runtime/Job.ts"
import * as Migrator from "../../runtime/migrate.ts"
import * as Worker from "../../runtime/Worker.ts"
import { workerDatabaseLayer } from "../database.ts"
import { CliError } from "../format.ts"
import { common, durationFlag, jobsModule, loadJobs } from "../options.ts"

/**
 * Migrates, then works the queues. The database is waited for if it is down at start-up
 * (`workerDatabaseLayer`); an interrupt closes the worker's scope, so running attempts get
 * the grace period to finish (docs/behaviour.md §9).
 */
export const worker = Command.make(
  "worker",
  {
    ...common,
    jobs: jobsModule,
    queue: Options.text("queue").pipe(
      Options.repeated,
      Options.withDescription("queue to work (repeatable; default all)")
    ),
    concurrency: Options.integer("concurrency").pipe(Options.withDefault(4)),
    host: Options.text("host").pipe(Options.optional),
    hostCap: Options.integer("host-cap").pipe(Options.withDefault(0)),
    pollInterval: Options.text("poll-interval").pipe(Options.withDefault("1 second")),
    gracePeriod: Options.text("grace-period").pipe(Options.withDefault("30 seconds"))
  },
  (c) =>
    Effect.gen(function*() {
      const types = yield* loadJobs(c.jobs)
      const poll = yield* durationFlag("poll-interval", c.pollInterval, { positive: true })
      const grace = yield* durationFlag("grace-period", c.gracePeriod, { positive: true })
      if (c.concurrency < 1) return yield* new CliError({ message: "--concurrency must be at least 1" })
      const db = workerDatabaseLayer(c.databaseUrl)
      const services = Layer.mergeAll(SqlJobStore.layer({ prefix: c.prefix }), jobsLayer(...types) as Layer.Layer<Jobs>)
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
