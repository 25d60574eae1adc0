/**
 * One log line per finished attempt at info, with its duration (src/runtime/worker/observe.ts),
 * for every entry point; none when the minimum level is above info.
 */
import { expect, it } from "@effect/vitest"
import { Effect, HashMap, List, Logger, LogLevel, Schema, TestClock } from "effect"
import { define, enqueue } from "../../src/runtime/Job.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { TestLeasehold } from "../../src/testing.ts"

interface Line {
  readonly level: string
  readonly message: unknown
  readonly annotations: Record<string, unknown>
}

const capture = (lines: Array<Line>) =>
  Logger.add(Logger.make(({ annotations, logLevel, message }) => {
    lines.push({
      level: logLevel.label,
      message: List.isList(message) ? List.toArray(message)[0] : Array.isArray(message) ? message[0] : message,
      annotations: Object.fromEntries(HashMap.toEntries(annotations))
    })
  }))

// Takes 1.5 s of the TestClock; fails when asked to.
const Timed = define({
  name: "timed",
  queue: "q",
  maxRetries: 1,
  schema: Schema.Struct({ fail: Schema.Boolean }),
  perform: ({ fail }) =>
    Effect.zipRight(TestClock.adjust("1500 millis"), fail ? Effect.fail(new Error("no")) : Effect.void)
})

it.effect("each finished attempt logs one info line with its outcome and duration", () => {
  const lines: Array<Line> = []
  return Effect.gen(function*() {
    const ok = yield* enqueue(Timed, { fail: false })
    yield* Worker.processNext({ host: "h" })
    yield* enqueue(Timed, { fail: true })
    yield* Worker.processQueue({ limit: 1 })
    const info = lines.filter((l) => l.level === "INFO" && String(l.message).startsWith("attempt"))
    expect(info.map((l) => l.message)).toEqual([
      "attempt completed in 1500 ms",
      "attempt failed, will retry in 1500 ms"
    ])
    expect(info[0]!.annotations).toEqual({
      jobId: ok.id,
      jobName: "timed",
      attempt: 1,
      queue: "q",
      outcome: "completed",
      durationMs: 1500
    })
  }).pipe(Effect.provide(TestLeasehold.layer({ jobs: [Timed] })), Effect.provide(capture(lines)))
})

it.effect("above info, no attempt line is written", () => {
  const lines: Array<Line> = []
  return Effect.gen(function*() {
    yield* enqueue(Timed, { fail: false })
    expect(yield* Worker.processNext({ host: "h" })).toMatchObject({ _tag: "Completed" })
    expect(lines.filter((l) => String(l.message).startsWith("attempt"))).toEqual([])
  }).pipe(
    Effect.provide(TestLeasehold.layer({ jobs: [Timed] })),
    Logger.withMinimumLogLevel(LogLevel.Warning),
    Effect.provide(capture(lines))
  )
})
