/** `leasehold enqueue <job> '<payload-json>'`: one job, its payload checked against its type first. */
import { Args, Command, Options } from "@effect/cli"
import { Effect, Option, Schema } from "effect"
import { enqueue as enqueueJob } from "../../runtime/Job.ts"
import { withStore } from "../database.ts"
import { CliError, print, rootMessage } from "../format.ts"
import { common, durationFlag, jobsModule, loadJobs } from "../options.ts"

/**
 * Enqueues one job. The job name, JSON and payload schema are checked before the database is
 * touched, so bad input writes nothing (docs/behaviour.md §4).
 */
export const enqueue = Command.make(
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
        return yield* new CliError({
          message: `unknown job ${JSON.stringify(c.name)}; known: ${types.map((t) => t.name).join(", ")}`
        })
      }
      const payload = yield* Effect.try({
        try: () => JSON.parse(c.payload) as unknown,
        catch: (e) => new CliError({ message: `payload is not valid JSON: ${rootMessage(e)}` })
      })
      const decoded = yield* Effect.mapError(
        Schema.decodeUnknown(type.schema)(payload),
        (e) => new CliError({ message: `invalid payload for ${type.name}: ${e.message.replace(/\s+/g, " ")}` })
      )
      const delay = Option.isSome(c.delay) ? yield* durationFlag("delay", c.delay.value) : undefined
      const result = yield* withStore(
        c,
        enqueueJob(type, decoded, {
          queue: Option.getOrUndefined(c.queue),
          priority: Option.getOrUndefined(c.priority),
          delay,
          uniqueKey: Option.getOrUndefined(c.uniqueKey)
        })
      )
      yield* print(c, result, () => `${result.status} ${result.id}`)
    })
)
