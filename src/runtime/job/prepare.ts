/**
 * Enqueue's checks (docs/behaviour.md §4): one job's payload validated and encoded with its
 * type's Schema, every option and the lease it will take checked, and the row to insert made.
 * Nothing here writes.
 */
import { type Duration, Either, ParseResult, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { EnqueueInputError, PayloadError } from "../../core/errors.ts"
import { isInt32, keyProblem, MAX_INT32, MIN_INT32 } from "../../core/input.ts"
import { MAX_NAME_LENGTH, MAX_UNIQUE_KEY_LENGTH } from "../../core/jobs.ts"
import { leaseInputProblem, leaseNameFor } from "../../core/lease.ts"
import { type NewJob, UNIQUE_UNTIL, type UniqueUntil } from "../../core/model.ts"
import { durationMillis, type JobType } from "./define.ts"

/** Options of one enqueue; defaults come from the job type. */
export interface EnqueueOptions {
  readonly queue?: string | undefined
  readonly priority?: number | undefined
  /** Epoch ms when it becomes due: a whole number ≥ 0 (a time in the past means now). */
  readonly runAt?: number | undefined
  /** Due after this long, ≥ 0 (ignored when runAt is given). */
  readonly delay?: Duration.DurationInput | undefined
  /** At most one job with this key, whatever its status, until purged (≤ 255 characters); see `uniqueUntil`. */
  readonly uniqueKey?: string | undefined
  /**
   * How long the unique key stays taken: until the job is purged ("purged", the default), or
   * until it is finished ("finished": once it completed or died, a new enqueue with the key
   * takes it).
   */
  readonly uniqueUntil?: UniqueUntil | undefined
}

const inputLeft = (field: string, reason: string) => Either.left(new EnqueueInputError({ field, reason }))

/** Thrown by enqueue's JSON replacer on a number JSON cannot hold. */
class NonJsonNumber {
  constructor(readonly value: number) {}
}

/** A schema's encoder and decoder, built once per schema (building one costs more than using it). */
const codecs = new WeakMap<Schema.Schema<any, any, never>, {
  readonly encode: (a: unknown) => Either.Either<unknown, ParseResult.ParseError>
  readonly decode: (u: unknown) => Either.Either<unknown, ParseResult.ParseError>
}>()
const codecOf = <A, I>(schema: Schema.Schema<A, I, never>) => {
  let codec = codecs.get(schema)
  if (codec === undefined) {
    codec = { encode: Schema.encodeEither(schema) as never, decode: Schema.decodeUnknownEither(schema) }
    codecs.set(schema, codec)
  }
  return codec as {
    readonly encode: (a: A) => Either.Either<I, ParseResult.ParseError>
    readonly decode: (u: unknown) => Either.Either<A, ParseResult.ParseError>
  }
}

/**
 * One job checked and turned into a row to insert, at `now`: the payload validated and encoded
 * with the type's Schema (it must decode again from the JSON that is stored), every option and
 * the lease it will take checked. Writes nothing.
 */
export const prepare = <A, I, R>(
  type: JobType<string, A, I, R>,
  payload: A,
  options: EnqueueOptions,
  now: number,
  traceContext: string | undefined
): Either.Either<NewJob, PayloadError | EnqueueInputError> =>
  Either.gen(function*() {
    const payloadError = (reason: string) => new PayloadError({ jobName: type.name, reason })
    const encoded = yield* codecOf(type.schema).encode(payload).pipe(
      Either.mapLeft((e) => payloadError(ParseResult.TreeFormatter.formatErrorSync(e)))
    )
    const json = yield* Either.try({
      // NaN and ±Infinity have no JSON form: JSON.stringify would store null in their place.
      try: () =>
        JSON.stringify(encoded, (_key, value: unknown) => {
          if (typeof value === "number" && !Number.isFinite(value)) throw new NonJsonNumber(value)
          return value
        }),
      catch: (e) =>
        payloadError(
          e instanceof NonJsonNumber
            ? `${e.value} has no JSON form (it would be stored as null)`
            : `not JSON-serialisable: ${String(e)}`
        )
    })
    if (json === undefined) return yield* Either.left(payloadError("encodes to nothing"))
    // What is stored must decode again, or every attempt of the job would fail.
    const stored = yield* codecOf(type.schema).decode(JSON.parse(json) as unknown).pipe(
      Either.mapLeft((e) =>
        payloadError(`does not decode again once stored as JSON: ${ParseResult.TreeFormatter.formatErrorSync(e)}`)
      )
    )

    const queue = options.queue ?? type.queue
    if (typeof queue !== "string" || queue.length === 0 || queue.length > MAX_NAME_LENGTH) {
      return yield* inputLeft("queue", `must be 1 to ${MAX_NAME_LENGTH} characters`)
    }
    const priority = options.priority ?? type.priority
    if (!isInt32(priority)) {
      return yield* inputLeft("priority", `must be a whole number from ${MIN_INT32} to ${MAX_INT32}, got ${priority}`)
    }
    if (options.uniqueKey !== undefined) {
      if (typeof options.uniqueKey !== "string") return yield* inputLeft("uniqueKey", "must be a string")
      if (options.uniqueKey.length > MAX_UNIQUE_KEY_LENGTH) {
        return yield* inputLeft(
          "uniqueKey",
          `is ${options.uniqueKey.length} characters; at most ${MAX_UNIQUE_KEY_LENGTH} fit`
        )
      }
      if (options.uniqueKey.length === 0) return yield* inputLeft("uniqueKey", "is empty")
    }
    // Keys compare exactly on every database (a worker for queue `mail` must not claim `mail `).
    for (const [field, value] of [["queue", queue], ["uniqueKey", options.uniqueKey ?? ""]] as const) {
      const text = keyProblem(value)
      if (text !== undefined) return yield* inputLeft(field, text)
    }
    const uniqueUntil = options.uniqueUntil ?? "purged"
    if (!UNIQUE_UNTIL.includes(uniqueUntil)) {
      return yield* inputLeft("uniqueUntil", `must be "purged" or "finished", got ${String(uniqueUntil)}`)
    }
    // The lease the job will take: a key the lock table cannot hold would fail every attempt.
    const leaseName = yield* Either.try({
      try: () => leaseNameFor(type.name, type.lease, stored),
      catch: (e) => new EnqueueInputError({ field: "concurrencyKey", reason: `concurrencyKeyFor threw: ${String(e)}` })
    })
    const leaseProblem = leaseName === undefined ? undefined : leaseInputProblem("name", leaseName)
    if (leaseProblem !== undefined) return yield* inputLeft("concurrencyKey", leaseProblem)

    let runAt = now
    if (options.runAt !== undefined) {
      if (!Number.isSafeInteger(options.runAt) || options.runAt < 0) {
        return yield* inputLeft("runAt", `must be whole epoch ms, at least 0, got ${options.runAt}`)
      }
      runAt = options.runAt
    } else if (options.delay !== undefined) {
      const ms = durationMillis(options.delay)
      if (Either.isLeft(ms)) return yield* inputLeft("delay", ms.left)
      runAt = now + Math.ceil(ms.right)
      if (!Number.isSafeInteger(runAt)) return yield* inputLeft("delay", `is too large: ${String(options.delay)}`)
    }
    const id = randomUUID()
    return {
      id,
      name: type.name,
      queue,
      payload: json,
      priority,
      maxRetries: type.maxRetries,
      claimTimeout: type.timeoutSeconds,
      uniqueKey: options.uniqueKey ?? id,
      uniqueUntil,
      runAt,
      now,
      ...(traceContext === undefined ? {} : { traceContext }),
      ...(leaseName === undefined ? {} : { claimLease: leaseName })
    }
  })
