/** What `enqueue` does (declared in ../commands/enqueue.ts, loaded only to run). */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { enqueue as enqueueJob } from "../../runtime/Job.ts"
import { withStore } from "../database.ts"
import { CliError, print, rootMessage } from "../format.ts"
import { loadJobs } from "../jobModule.ts"
import type { Common } from "../options.ts"

/** The values of `enqueue`. */
export interface EnqueueConfig extends Common {
  readonly jobs: string
  readonly name: string
  readonly payload: string
  readonly queue: Option.Option<string>
  readonly priority: Option.Option<number>
  readonly delay: Option.Option<number>
  readonly uniqueKey: Option.Option<string>
}

/**
 * Enqueues one job. The job name, JSON and payload schema are checked before the database is
 * touched, so bad input writes nothing (docs/behaviour.md §4). A missing SQLite file is created
 * (and then has no tables: the line says to migrate).
 */
export const enqueue = (c: EnqueueConfig) =>
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
    const result = yield* withStore(
      c,
      { create: true },
      enqueueJob(type, decoded, {
        queue: Option.getOrUndefined(c.queue),
        priority: Option.getOrUndefined(c.priority),
        delay: Option.getOrUndefined(c.delay),
        uniqueKey: Option.getOrUndefined(c.uniqueKey)
      })
    )
    yield* print(c, result, () => `${result.status} ${result.id}`)
  })
