/**
 * What a claimed job is to run (docs/behaviour.md §6): its registered type, its stored payload
 * decoded with the type's Schema, and the lease its type names for that payload. A job this
 * worker cannot run (an unknown type, a payload that no longer decodes, a key function that
 * throws) fails its attempt here.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Cause, Effect, Either, Option, Schema } from "effect"
import type { ParseError } from "effect/ParseResult"
import { PayloadError, UnknownJobTypeError } from "../../core/errors.ts"
import { DEFAULT_BACKOFF } from "../../core/jobs.ts"
import { leaseNameFor } from "../../core/lease.ts"
import type { JobRow } from "../../core/model.ts"
import type { JobLeases, JobStore } from "../../ports/JobStore.ts"
import type { JobsApi, RegisteredJob } from "../Job.ts"
import type { Attempt, Steps } from "./attemptState.ts"
import { describe, recordFailure } from "./outcome.ts"
import type { ProcessResult } from "./results.ts"

// Each job type's decoder, made once per Schema (not per attempt).
const decoders = new WeakMap<Schema.Schema<unknown, any>, (u: unknown) => Effect.Effect<unknown, ParseError>>()

/**
 * Decodes a stored payload with its type's Schema, or says why it no longer decodes. A schema
 * that decodes synchronously (nearly all) gives its result at once, as a plain Either, without
 * an effect's steps per attempt; one with an asynchronous transformation gives an effect to run.
 */
const decodePayload = (
  job: JobRow,
  schema: Schema.Schema<unknown, any>
): Either.Either<unknown, string> | Effect.Effect<Either.Either<unknown, string>> => {
  let json: unknown
  try {
    json = JSON.parse(job.payload)
  } catch (e) {
    return Either.left(String(e))
  }
  let decode = decoders.get(schema)
  if (decode === undefined) {
    decode = Schema.decodeUnknown(schema)
    decoders.set(schema, decode)
  }
  // Schema's decoders give an Either (itself an effect) when nothing asynchronous ran.
  const decoded = decode(json)
  return Either.isEither(decoded)
    ? Either.mapLeft(decoded as Either.Either<unknown, ParseError>, (e) => e.message)
    : Effect.either(Effect.mapError(decoded, (e) => e.message))
}

/** A claimed job this worker can run. */
export interface Runnable {
  readonly registered: RegisteredJob
  readonly payload: unknown
  /** The lease its type names for its payload (none: it takes no lease). */
  readonly leaseName: string | undefined
}

/**
 * The attempt's job as a `Runnable`, or (left) the attempt's result once its failure is recorded
 * (the lease its claim took given back with it).
 */
export function* runnableJob(
  a: Attempt,
  jobs: JobsApi
): Steps<Either.Either<Runnable, ProcessResult>, SqlError, JobStore | JobLeases> {
  const job = a.job
  const registered = jobs.get(job.name)
  if (Option.isNone(registered)) {
    return Either.left(
      yield* recordFailure(
        job,
        DEFAULT_BACKOFF,
        describe(Cause.fail(new UnknownJobTypeError({ jobName: job.name }))),
        a.claimed
      )
    )
  }
  const type = registered.value.type
  const decoding = decodePayload(job, type.schema)
  const decoded = Either.isEither(decoding) ? decoding : yield* decoding
  if (Either.isLeft(decoded)) {
    const error = new PayloadError({ jobName: job.name, reason: `stored payload no longer decodes: ${decoded.left}` })
    return Either.left(yield* recordFailure(job, type.backoff, describe(Cause.fail(error)), a.claimed))
  }
  const payload = decoded.right

  // The key function may throw on a stored payload (another version of the app enqueued it):
  // that fails the attempt.
  let named: Either.Either<string | undefined, string>
  try {
    named = Either.right(leaseNameFor(type.name, type.lease, payload))
  } catch (e) {
    named = Either.left(`concurrencyKeyFor threw: ${String(e)}`)
  }
  if (Either.isLeft(named)) {
    return Either.left(yield* recordFailure(job, type.backoff, named.left, a.claimed))
  }
  return Either.right({ registered: registered.value, payload, leaseName: named.right })
}
