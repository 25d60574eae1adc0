/**
 * Traces (docs/tracing.md): what an enqueue stores and what each attempt reports, through
 * Effect's own Tracer API only, so leasehold needs no tracing package. An app that installs a
 * tracer (@effect/opentelemetry's `NodeSdk.layer`, say) gets a producer span per enqueue, whose
 * traceparent is stored with the job (src/core/traceContext.ts), and a consumer span per
 * attempt linked to it, under which perform's own spans nest.
 *
 * Without one, Effect's default tracer would still build a span object (two random ids and
 * a map) for every `withSpan`, which nothing reads: so every span here is made only when the
 * installed tracer is not the default, and without one an enqueue and an attempt cost a read
 * of the current tracer, nothing more.
 */
import { Clock, Effect, Exit, Option, Tracer } from "effect"
import { isTracing } from "../infra/tracer.ts"
import { formatTraceparent, parseTraceparent } from "../core/traceContext.ts"
import type { JobRow } from "../core/model.ts"
import type { ProcessResult } from "./worker/results.ts"

/** Runs `traced` when a tracer other than Effect's default is installed, else `plain`. */
const ifTracing = <A, E, R, A2, E2, R2>(
  traced: () => Effect.Effect<A, E, R>,
  plain: () => Effect.Effect<A2, E2, R2>
): Effect.Effect<A | A2, E | E2, R | R2> =>
  Effect.tracerWith((tracer): Effect.Effect<A | A2, E | E2, R | R2> => isTracing(tracer) ? traced() : plain())

/** Span names and attribute keys (docs/tracing.md lists them). */
export const ATTEMPT_SPAN = "leasehold.attempt"
/** The name of the span around an enqueue (one per `enqueue` or `enqueueMany` call). */
export const ENQUEUE_SPAN = "leasehold.enqueue"

/**
 * Runs `enqueue` with the trace context its rows should carry: under a tracer, inside a
 * producer span (a child of the caller's span, or of an OpenTelemetry context active outside
 * Effect) whose traceparent `enqueue` stores; without one, `undefined` and no span.
 */
export const withEnqueueSpan = <A, E, R>(
  jobName: string,
  queue: string,
  enqueue: (traceContext: string | undefined) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  ifTracing(
    () =>
      Effect.useSpan(
        ENQUEUE_SPAN,
        {
          kind: "producer",
          captureStackTrace: false,
          attributes: { "leasehold.job.name": jobName, "leasehold.queue": queue }
        },
        (span) => Effect.withParentSpan(enqueue(formatTraceparent(span)), span)
      ),
    () => enqueue(undefined)
  )

/** Sets an attribute of the enqueue span (when there is one): the job ids, once written. */
export const annotateEnqueue = (key: string, value: unknown): Effect.Effect<void> =>
  ifTracing(() => Effect.annotateCurrentSpan(key, value), () => Effect.void)

/** What the attempt span's `leasehold.outcome` says of a result. */
const outcomeOf = (result: ProcessResult): string => {
  switch (result._tag) {
    case "Completed":
      return "completed"
    case "Failed":
      return "failed"
    case "Fenced":
      return "fenced"
    case "Cancelled":
      return "cancelled"
    case "Deferred":
      return "deferred"
    default:
      return result._tag.toLowerCase()
  }
}

/** The link to the span that enqueued `job`, if its row carries one. */
const enqueueLinks = (job: JobRow): ReadonlyArray<Tracer.SpanLink> => {
  const context = parseTraceparent(job.traceContext)
  return context === undefined ? [] : [{ _tag: "SpanLink", span: Tracer.externalSpan(context), attributes: {} }]
}

/**
 * Runs one attempt of `job` inside its consumer span (call it under a tracer only: `isTracing`,
 * src/infra/tracer.ts, read by the attempt once off its fiber): a child of the caller's
 * span when there is one (processNext inside a span) unless `root`, else the root of a trace of
 * its own; linked to the span that enqueued the job; with the job's id, name, attempt and
 * queue, and once it ended its outcome. The attempt itself sets the lease (`annotateAttempt`).
 */
export const traceAttempt = <E, R>(
  job: JobRow,
  attempt: Effect.Effect<ProcessResult, E, R>,
  root: boolean
): Effect.Effect<ProcessResult, E, R> =>
  Effect.flatMap(root ? Effect.succeedNone : Effect.option(Effect.currentParentSpan), (parent) =>
    Effect.useSpan(
      ATTEMPT_SPAN,
      {
        kind: "consumer",
        captureStackTrace: false,
        ...(Option.isSome(parent) ? { parent: parent.value } : { root: true }),
        links: enqueueLinks(job),
        attributes: {
          "leasehold.job.id": job.id,
          "leasehold.job.name": job.name,
          "leasehold.job.attempt": job.attempts,
          "leasehold.queue": job.queue
        }
      },
      (span) =>
        Effect.tap(Effect.withParentSpan(attempt, span), (result) => {
          span.attribute("leasehold.outcome", outcomeOf(result))
          if ("leaseLost" in result && result.leaseLost) span.attribute("leasehold.lease.lost", true)
          if (result._tag !== "Failed") return Effect.void
          span.attribute("leasehold.job.will_retry", result.willRetry)
          // The attempt's effect succeeds with its outcome: the span is ended here, as failed
          // with the job's error, so a tracer marks it an error (useSpan leaves an ended span be).
          return Effect.map(Clock.currentTimeNanos, (now) => span.end(now, Exit.fail(result.error)))
        })
    ))

/** Sets an attribute of the running attempt's span (when there is one). */
export const annotateAttempt = (key: string, value: unknown): Effect.Effect<void> =>
  ifTracing(() => Effect.annotateCurrentSpan(key, value), () => Effect.void)
