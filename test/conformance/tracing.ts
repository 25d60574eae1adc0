/**
 * Traces (docs/tracing.md, src/runtime/tracing.ts) on every adapter: with @effect/opentelemetry's
 * tracer and an in-memory exporter, an enqueue stores the traceparent of its producer span with
 * the job, and each attempt reports a consumer span linked to it, with the job's id, name,
 * attempt, queue, lease and outcome, under which perform's own spans nest; without a tracer,
 * nothing is stored. Timing runs under TestClock.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { SpanKind, SpanStatusCode } from "@opentelemetry/api"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { expect, layer } from "@effect/vitest"
import { Effect, Option, Schema, TestClock } from "effect"
import { leaseNameFor } from "../../src/core/lease.ts"
import { JobStore } from "../../src/JobStore.ts"
import { define, enqueue, enqueueMany } from "../../src/runtime/Job.ts"
import { processNext } from "../../src/runtime/Worker.ts"
import { type AdapterName, layerFor } from "../support/databases.ts"
import { withJobs } from "../support/jobs.ts"

const T0 = 1_791_039_632_175
const SECOND = 1000

const Order = Schema.Struct({ account: Schema.String })
const Traced = define({
  name: "traced",
  queue: "traces",
  schema: Order,
  concurrencyKeyFor: (p) => p.account,
  perform: ({ account }) => Effect.withSpan(Effect.annotateCurrentSpan("account", account), "charge card")
})
const Flaky = define({
  name: "traced-flaky",
  schema: Order,
  maxRetries: 1,
  backoff: { kind: "linear", baseSeconds: 1, maxSeconds: 1 },
  perform: () => Effect.fail(new Error("card declined"))
})

/** A tracer that keeps every ended span in memory, and the exporter to read them from. */
const tracing = () => {
  const exporter = new InMemorySpanExporter()
  const layer = NodeSdk.layer(() => ({
    resource: { serviceName: "leasehold-test" },
    spanProcessor: new SimpleSpanProcessor(exporter)
  }))
  const spans = Effect.sync(() => exporter.getFinishedSpans())
  return { layer, spans }
}

const named = (spans: ReadonlyArray<ReadableSpan>, name: string) => spans.filter((s) => s.name === name)
const one = (spans: ReadonlyArray<ReadableSpan>, name: string) => {
  const found = named(spans, name)
  expect(found.map((s) => s.name)).toEqual([name])
  return found[0]!
}
const ids = (span: ReadableSpan) => ({ traceId: span.spanContext().traceId, spanId: span.spanContext().spanId })
const row = (id: string) => Effect.flatMap(JobStore, (s) => Effect.map(s.get(id), Option.getOrThrow))

export const tracingConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "tr"), { timeout: 180_000 })(`Tracing conformance on ${adapter}`, (it) => {
    it.effect("an attempt's span: the job's attributes, a link to the enqueue's span, perform's spans beneath it", () => {
      const t = tracing()
      return withJobs(
        [Traced],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const { id } = yield* enqueue(Traced, { account: "a-1" }).pipe(Effect.withSpan("handle request"))
          const stored = (yield* row(id)).traceContext
          const result = yield* processNext({ host: "h" })
          expect(result._tag).toBe("Completed")

          const spans = yield* t.spans
          const request = one(spans, "handle request")
          const enqueued = one(spans, "leasehold.enqueue")
          const attempt = one(spans, "leasehold.attempt")
          const charge = one(spans, "charge card")
          // The enqueue's producer span is the request's child; its traceparent is on the row.
          expect(enqueued.kind).toBe(SpanKind.PRODUCER)
          expect(enqueued.parentSpanContext?.spanId).toBe(ids(request).spanId)
          expect(ids(enqueued).traceId).toBe(ids(request).traceId)
          expect(enqueued.attributes).toMatchObject({
            "leasehold.job.name": "traced",
            "leasehold.queue": "traces",
            "leasehold.job.id": id
          })
          expect(stored).toBe(`00-${ids(enqueued).traceId}-${ids(enqueued).spanId}-01`)
          // The attempt: a trace of its own, linked to the enqueue's span.
          expect(attempt.kind).toBe(SpanKind.CONSUMER)
          expect(attempt.parentSpanContext).toBeUndefined()
          expect(ids(attempt).traceId).not.toBe(ids(request).traceId)
          expect(attempt.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId }))).toEqual([
            ids(enqueued)
          ])
          expect(attempt.attributes).toEqual({
            "leasehold.job.id": id,
            "leasehold.job.name": "traced",
            "leasehold.job.attempt": 1,
            "leasehold.queue": "traces",
            "leasehold.lease.name": leaseNameFor("traced", Traced.lease, { account: "a-1" }),
            "leasehold.lease.fencing_token": expect.stringMatching(/^\d+$/),
            "leasehold.outcome": "completed"
          })
          expect(attempt.status.code).toBe(SpanStatusCode.OK)
          // perform's own span nests under the attempt's.
          expect(charge.parentSpanContext?.spanId).toBe(ids(attempt).spanId)
          expect(ids(charge).traceId).toBe(ids(attempt).traceId)
          expect(charge.attributes).toMatchObject({ account: "a-1" })
        })
      ).pipe(Effect.provide(t.layer))
    })

    it.effect("a failed attempt's span says failed, whether it retries, and is an error; each attempt links to the enqueue", () => {
      const t = tracing()
      return withJobs(
        [Flaky],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const { id } = yield* enqueue(Flaky, { account: "a-2" })
          yield* processNext({ host: "h" })
          yield* TestClock.adjust(2 * SECOND)
          yield* processNext({ host: "h" })
          expect((yield* row(id)).status).toBe("failed")

          const spans = yield* t.spans
          // No caller's span: the enqueue's span starts a trace, and is still what the attempts link to.
          const enqueued = one(spans, "leasehold.enqueue")
          expect(enqueued.parentSpanContext).toBeUndefined()
          const attempts = named(spans, "leasehold.attempt")
          expect(attempts.map((s) => s.attributes)).toEqual([
            {
              "leasehold.job.id": id,
              "leasehold.job.name": "traced-flaky",
              "leasehold.job.attempt": 1,
              "leasehold.queue": "default",
              "leasehold.outcome": "failed",
              "leasehold.job.will_retry": true
            },
            {
              "leasehold.job.id": id,
              "leasehold.job.name": "traced-flaky",
              "leasehold.job.attempt": 2,
              "leasehold.queue": "default",
              "leasehold.outcome": "failed",
              "leasehold.job.will_retry": false
            }
          ])
          for (const attempt of attempts) {
            expect(attempt.status.code).toBe(SpanStatusCode.ERROR)
            expect(attempt.status.message).toContain("card declined")
            expect(attempt.links.map((l) => l.context.spanId)).toEqual([ids(enqueued).spanId])
          }
          expect(new Set(attempts.map((s) => ids(s).traceId)).size).toBe(2)
        })
      ).pipe(Effect.provide(t.layer))
    })

    it.effect("enqueueMany: one span for the call, its traceparent on every row; processNext in a span nests the attempt", () => {
      const t = tracing()
      return withJobs(
        [Traced],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const many = yield* enqueueMany(Traced, [{ account: "b-1" }, { account: "b-2" }])
          const rows = yield* Effect.forEach(many.jobs, (j) => row(j.id))
          yield* processNext({ host: "h" }).pipe(Effect.withSpan("cron tick"))

          const spans = yield* t.spans
          const enqueued = one(spans, "leasehold.enqueue")
          expect(enqueued.attributes).toMatchObject({ "leasehold.job.count": 2 })
          const parent = `00-${ids(enqueued).traceId}-${ids(enqueued).spanId}-01`
          expect(rows.map((r) => r.traceContext)).toEqual([parent, parent])
          const attempt = one(spans, "leasehold.attempt")
          const tick = one(spans, "cron tick")
          expect(attempt.parentSpanContext?.spanId).toBe(ids(tick).spanId)
          expect(attempt.links.map((l) => l.context.spanId)).toEqual([ids(enqueued).spanId])
        })
      ).pipe(Effect.provide(t.layer))
    })

    it.effect("without a tracer: no trace context is stored, even inside a span, and the job runs", () =>
      withJobs(
        [Traced],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const { id } = yield* enqueue(Traced, { account: "c-1" }).pipe(Effect.withSpan("handle request"))
          const many = yield* enqueueMany(Traced, [{ account: "c-2" }])
          expect((yield* row(id)).traceContext).toBeNull()
          expect((yield* row(many.jobs[0]!.id)).traceContext).toBeNull()
          expect((yield* processNext({ host: "h" }))._tag).toBe("Completed")
        })
      ))

    it.effect("a stored trace context that is not a traceparent is ignored: the attempt has no link", () => {
      const t = tracing()
      return withJobs(
        [Traced],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          // A row written by another tool may hold anything.
          const store = yield* JobStore
          yield* store.insert({
            id: "odd-trace",
            name: "traced",
            queue: "traces",
            payload: JSON.stringify({ account: "d-1" }),
            priority: 0,
            maxRetries: 0,
            claimTimeout: 60,
            uniqueKey: "odd-trace",
            runAt: T0,
            now: T0,
            traceContext: "00-not-a-traceparent"
          })
          expect((yield* row("odd-trace")).traceContext).toBe("00-not-a-traceparent")
          expect((yield* processNext({ host: "h" }))._tag).toBe("Completed")
          const attempt = one(yield* t.spans, "leasehold.attempt")
          expect(attempt.links).toEqual([])
          expect(attempt.attributes).toMatchObject({
            "leasehold.job.id": "odd-trace",
            "leasehold.outcome": "completed"
          })
        })
      ).pipe(Effect.provide(t.layer))
    })
  })
