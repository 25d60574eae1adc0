/** What `enqueue` does (declared in ../commands/enqueue.ts, loaded only to run). */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { UniqueUntil } from "../../core/model.ts"
import { type AnyJobType, enqueue as enqueueJob, enqueueMany } from "../../runtime/Job.ts"
import { withStore } from "../database.ts"
import { CliError, print, rootMessage } from "../format.ts"
import { loadJobs } from "../jobModule.ts"
import type { Common } from "../options.ts"

/** The values of `enqueue`. */
export interface EnqueueConfig extends Common {
  readonly jobs: string
  readonly name: string
  readonly payload: Option.Option<string>
  readonly many: Option.Option<string>
  readonly queue: Option.Option<string>
  readonly priority: Option.Option<number>
  readonly delay: Option.Option<number>
  readonly uniqueKey: Option.Option<string>
  readonly uniqueKeyField: Option.Option<string>
  readonly uniqueUntil: UniqueUntil
}

/** The payloads of a `--many` file: a JSON array, or one JSON value per (non-blank) line. */
const readPayloads = (file: string) =>
  Effect.gen(function*() {
    const text = yield* Effect.tryPromise({
      try: async () =>
        file === "-"
          ? (await import("node:stream/consumers")).text(process.stdin)
          : (await import("node:fs/promises")).readFile(file, "utf8"),
      catch: (e) => new CliError({ message: `--many: cannot read ${file === "-" ? "stdin" : file}: ${rootMessage(e)}` })
    })
    if (text.trimStart().startsWith("[")) {
      const all = yield* Effect.try({
        try: () => JSON.parse(text) as unknown,
        catch: (e) => new CliError({ message: `--many: not a JSON array: ${rootMessage(e)}` })
      })
      if (!Array.isArray(all)) return yield* new CliError({ message: "--many: not a JSON array" })
      return all as ReadonlyArray<unknown>
    }
    const lines = text.split("\n").map((line, i) => ({ line: line.trim(), at: i + 1 })).filter((l) => l.line !== "")
    return yield* Effect.forEach(lines, ({ at, line }) =>
      Effect.try({
        try: () => JSON.parse(line) as unknown,
        catch: (e) => new CliError({ message: `--many: line ${at} is not valid JSON: ${rootMessage(e)}` })
      }))
  })

/** A payload decoded with its type's Schema, or one line saying why not. */
const decode = (type: AnyJobType, payload: unknown, where: string) =>
  Effect.mapError(
    Schema.decodeUnknown(type.schema)(payload),
    (e) => new CliError({ message: `invalid payload for ${type.name}${where}: ${e.message.replace(/\s+/g, " ")}` })
  )

/** The unique key `field` of a raw payload: its text, or none when absent. */
const keyField = (field: string, payload: unknown, index: number) => {
  const value = payload !== null && typeof payload === "object"
    ? (payload as Record<string, unknown>)[field]
    : undefined
  if (value === undefined || value === null) return Effect.succeed(undefined)
  if (typeof value === "string" || typeof value === "number") return Effect.succeed(String(value))
  return Effect.fail(
    new CliError({ message: `--unique-key-field: payloads[${index}].${field} is not a string or a number` })
  )
}

/**
 * Enqueues one job, or with `--many` one per payload of a file. The job name, JSON and payload
 * schema are checked before the database is touched, so bad input writes nothing
 * (docs/behaviour.md §4). A missing SQLite file is created (and then has no tables: the line
 * says to migrate).
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
    const options = {
      queue: Option.getOrUndefined(c.queue),
      priority: Option.getOrUndefined(c.priority),
      delay: Option.getOrUndefined(c.delay),
      uniqueUntil: c.uniqueUntil
    }
    if (Option.isSome(c.many)) {
      if (Option.isSome(c.payload)) {
        return yield* new CliError({ message: "--many reads the payloads from its file: give no <payload-json>" })
      }
      if (Option.isSome(c.uniqueKey)) {
        return yield* new CliError({ message: "--unique-key names one job: with --many, use --unique-key-field" })
      }
      const raw = yield* readPayloads(c.many.value)
      const field = Option.getOrUndefined(c.uniqueKeyField)
      const keys = field === undefined ? [] : yield* Effect.forEach(raw, (p, i) => keyField(field, p, i))
      const payloads = yield* Effect.forEach(raw, (p, i) => decode(type, p, ` (payloads[${i}])`))
      const result = yield* withStore(
        c,
        { create: true },
        enqueueMany(type, payloads, { ...options, uniqueKey: field === undefined ? undefined : (_, i) => keys[i] })
      )
      return yield* print(c, result, () =>
        [
          `${result.inserted} pending, ${result.duplicates.length} duplicate`,
          ...result.duplicates.map((d) => `duplicate payloads[${d.index}] ${d.uniqueKey} ${d.id}`)
        ].join("\n"))
    }
    if (Option.isSome(c.uniqueKeyField)) {
      return yield* new CliError({ message: "--unique-key-field goes with --many; for one job, use --unique-key" })
    }
    const payload = yield* Effect.try({
      try: () => JSON.parse(Option.getOrElse(c.payload, () => "{}")) as unknown,
      catch: (e) => new CliError({ message: `payload is not valid JSON: ${rootMessage(e)}` })
    })
    const decoded = yield* decode(type, payload, "")
    const result = yield* withStore(
      c,
      { create: true },
      enqueueJob(type, decoded, { ...options, uniqueKey: Option.getOrUndefined(c.uniqueKey) })
    )
    yield* print(c, result, () => `${result.status} ${result.id}`)
  })
