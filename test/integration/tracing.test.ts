/**
 * Traces beyond the per-adapter suite (test/conformance/tracing.ts): the stored traceparent's
 * format (src/core/traceContext.ts); a long-running worker wired as docs/tracing.md shows it
 * (the tracer provided around the services) reports each attempt linked to its enqueue; and with
 * Effect's default tracer no attempt span is made at all (src/runtime/tracing.ts); the Promise
 * client's `tracing` option does the same for apps without Effect, whose enqueue takes the
 * OpenTelemetry context active where it is called.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import * as OtelApi from "@opentelemetry/api"
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Deferred, Effect, Option, Schedule, Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { afterAll, describe, expect, it } from "vitest"
import { formatTraceparent, parseTraceparent } from "../../src/core/traceContext.ts"
import { Job, Migrator, Worker } from "../../src/index.ts"
import { createLeasehold, defineJob } from "../../src/promise.ts"
import * as Sqlite from "../../src/sqlite.ts"

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
const SPAN = "00f067aa0ba902b7"

describe("the stored trace context", () => {
  it("is a W3C traceparent of version 00, sampled or not", () => {
    expect(formatTraceparent({ traceId: TRACE, spanId: SPAN, sampled: true })).toBe(`00-${TRACE}-${SPAN}-01`)
    expect(formatTraceparent({ traceId: TRACE, spanId: SPAN, sampled: false })).toBe(`00-${TRACE}-${SPAN}-00`)
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true })
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: false })
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-03`)?.sampled).toBe(true)
  })

  it("is not made from ids that are not W3C ids, and a stored value that is not one reads as none", () => {
    expect(formatTraceparent({ traceId: "native", spanId: SPAN, sampled: true })).toBeUndefined()
    expect(formatTraceparent({ traceId: TRACE, spanId: "0".repeat(16), sampled: true })).toBeUndefined()
    expect(formatTraceparent({ traceId: "0".repeat(32), spanId: SPAN, sampled: true })).toBeUndefined()
    expect(formatTraceparent({ traceId: TRACE.toUpperCase(), spanId: SPAN, sampled: true })).toBeUndefined()
    for (
      const text of [null, undefined, "", `01-${TRACE}-${SPAN}-01`, `00-${TRACE}-${SPAN}`, `00-${TRACE}-${SPAN}-01-x`]
    ) {
      expect(parseTraceparent(text)).toBeUndefined()
    }
    expect(parseTraceparent(`00-${"0".repeat(32)}-${SPAN}-01`)).toBeUndefined()
  })
})

const Ping = Schema.Struct({ n: Schema.Number })

it("a long-running worker under NodeSdk.layer reports each attempt as a trace of its own, linked to its enqueue", async () => {
  const exporter = new InMemorySpanExporter()
  const Tracing = NodeSdk.layer(() => ({
    resource: { serviceName: "leasehold-test" },
    spanProcessor: new SimpleSpanProcessor(exporter)
  }))
  const attemptSpan = Effect.flatMap(
    Effect.sync(() => exporter.getFinishedSpans().find((s) => s.name === "leasehold.attempt")),
    Effect.fromNullable
  )
  const program = Effect.gen(function*() {
    const ran = yield* Deferred.make<void>()
    const Pinged = Job.define({ name: "pinged", schema: Ping, perform: () => Deferred.succeed(ran, undefined) })
    const services = Sqlite.layer({ filename: ":memory:", jobs: [Pinged] })
    return yield* Effect.scoped(Effect.gen(function*() {
      yield* (yield* Migrator.make()).run
      yield* Worker.make({ concurrency: 1, pollInterval: "20 millis" })
      const { id } = yield* Job.enqueue(Pinged, { n: 1 }).pipe(Effect.withSpan("handle request"))
      yield* Deferred.await(ran)
      // The span ends once the outcome is recorded, a moment after perform.
      const attempt = yield* Effect.retry(attemptSpan, Schedule.spaced("10 millis"))
      // Read before the tracer's layer closes: shutting down clears the exporter.
      const enqueued = exporter.getFinishedSpans().find((s) => s.name === "leasehold.enqueue")!
      return { id, attempt, enqueued }
      // A worker started inside a span: its attempts are still traces of their own.
    })).pipe(Effect.withSpan("app main"), Effect.provide(services))
  }).pipe(Effect.provide(Tracing))
  const { attempt, enqueued, id } = await Effect.runPromise(program)
  expect(attempt.attributes).toMatchObject({ "leasehold.job.id": id, "leasehold.outcome": "completed" })
  expect(attempt.links.map((l) => l.context.spanId)).toEqual([enqueued.spanContext().spanId])
  expect(attempt.parentSpanContext).toBeUndefined()
})

it("with Effect's default tracer, perform runs under no span of leasehold's", async () => {
  const seen: Array<Option.Option<string>> = []
  const Probe = Job.define({
    name: "probe",
    schema: Ping,
    perform: () => Effect.map(Effect.option(Effect.currentSpan), (span) => seen.push(Option.map(span, (s) => s.name)))
  })
  await Effect.runPromise(
    Effect.gen(function*() {
      yield* (yield* Migrator.make()).run
      yield* Job.enqueue(Probe, { n: 1 })
      expect((yield* Worker.processNext({ host: "h" }))._tag).toBe("Completed")
      // Inside the caller's span, perform sees that span: nothing of leasehold's in between.
      yield* Job.enqueue(Probe, { n: 2 })
      yield* Worker.processNext({ host: "h" }).pipe(Effect.withSpan("caller"))
    }).pipe(Effect.provide(Sqlite.layer({ filename: ":memory:", jobs: [Probe] })))
  )
  expect(seen).toEqual([Option.none(), Option.some("caller")])
})

const dir = mkdtempSync(join(tmpdir(), "leasehold-tracing-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

it("the Promise client with `tracing`: an enqueue in an OpenTelemetry context is its child, the attempt links to it", async () => {
  const exporter = new InMemorySpanExporter()
  const tracing = NodeSdk.layer(() => ({
    resource: { serviceName: "leasehold-test" },
    spanProcessor: new SimpleSpanProcessor(exporter)
  }))
  // The app's own instrumentation: a context manager, and a request span (its ids are enough).
  const manager = new AsyncLocalStorageContextManager().enable()
  OtelApi.context.setGlobalContextManager(manager)
  const request = OtelApi.trace.wrapSpanContext({ traceId: TRACE, spanId: SPAN, traceFlags: 1 })
  let ran = () => {}
  const performed = new Promise<void>((resolve) => (ran = resolve))
  const Pinged = defineJob({ name: "pinged", perform: async () => ran() })
  const lh = await createLeasehold({ url: join(dir, "promise.db"), jobs: [Pinged], tracing })
  try {
    await lh.migrate()
    const { id } = await OtelApi.context.with(
      OtelApi.trace.setSpan(OtelApi.context.active(), request),
      () => lh.enqueue(Pinged, {})
    )
    await lh.startWorker({ pollInterval: "20 millis" })
    await performed
    let attempt: ReadableSpan | undefined
    // The span ends once the outcome is recorded, a moment after perform.
    while ((attempt = exporter.getFinishedSpans().find((s) => s.name === "leasehold.attempt")) === undefined) {
      await sleep(10)
    }
    const enqueued = exporter.getFinishedSpans().find((s) => s.name === "leasehold.enqueue")!
    expect(enqueued.spanContext().traceId).toBe(TRACE)
    expect(enqueued.parentSpanContext?.spanId).toBe(SPAN)
    expect((await lh.getJob(id))?.traceContext).toBe(`00-${TRACE}-${enqueued.spanContext().spanId}-01`)
    expect(attempt.attributes).toMatchObject({ "leasehold.job.id": id, "leasehold.outcome": "completed" })
    expect(attempt.links.map((l) => l.context.spanId)).toEqual([enqueued.spanContext().spanId])
  } finally {
    await lh.close()
    OtelApi.context.disable()
  }
})
