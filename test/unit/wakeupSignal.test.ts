/**
 * Wake-up notifications sent after the write, one at a time (src/adapters/sql/wakeupSignal.ts):
 * requests made while one is in flight share the next; a failed one is logged at DEBUG and does
 * not stop the next; inside a transaction the notification is sent in it, unmarked.
 */
import { expect, it } from "@effect/vitest"
import { SqlError } from "@effect/sql/SqlError"
import { Deferred, Effect, Logger, LogLevel } from "effect"
import { isOwnRing } from "../../src/adapters/localWakeups.ts"
import { makeWakeupSignal } from "../../src/adapters/sql/wakeupSignal.ts"

const settle = Effect.repeatN(Effect.yieldNow(), 20)

/** A signal whose notifications record their payload and end when the test lets them. */
const recordingSignal = Effect.gen(function*() {
  const sent: Array<string> = []
  const gates: Array<Deferred.Deferred<void, SqlError>> = []
  const signal = makeWakeupSignal((payload) =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void, SqlError>()
      sent.push(payload)
      gates.push(gate)
      yield* Deferred.await(gate)
    })
  )
  const end = (n: number, error?: SqlError) =>
    error === undefined ? Deferred.succeed(gates[n]!, undefined) : Deferred.fail(gates[n]!, error)
  return { signal, sent, end }
})

it.effect("requests while a notification is in flight share one more; then the signal is idle", () =>
  Effect.gen(function*() {
    const { end, sent, signal } = yield* recordingSignal
    yield* signal.afterCommit
    yield* settle
    expect(sent).toHaveLength(1)
    expect(isOwnRing(sent[0])).toBe(true)
    for (let i = 0; i < 50; i++) yield* signal.afterCommit
    yield* end(0)
    yield* settle
    expect(sent).toHaveLength(2)
    yield* end(1)
    yield* settle
    expect(sent).toHaveLength(2)
    // Idle again: the next request sends at once.
    yield* signal.afterCommit
    yield* settle
    expect(sent).toHaveLength(3)
    yield* end(2)
  }))

it.effect("a notification that fails is logged at DEBUG and the next request sends again", () =>
  Effect.gen(function*() {
    const { end, sent, signal } = yield* recordingSignal
    const logged: Array<string> = []
    const logger = Logger.make(({ logLevel, message }) => logged.push(`${logLevel.label} ${String(message)}`))
    yield* Effect.gen(function*() {
      yield* signal.afterCommit
      yield* settle
      yield* end(0, new SqlError({ message: "the database went away" }))
      yield* settle
    }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)), Logger.withMinimumLogLevel(LogLevel.Debug))
    expect(logged.some((l) => l.startsWith("DEBUG wake-up notification not sent"))).toBe(true)
    yield* signal.afterCommit
    yield* settle
    expect(sent).toHaveLength(2)
    yield* end(1)
  }))

it.effect("inside a transaction the notification is sent at once, in it, and unmarked", () =>
  Effect.gen(function*() {
    const sent: Array<string> = []
    const signal = makeWakeupSignal((payload) => Effect.sync(() => sent.push(payload)))
    yield* signal.inTransaction
    expect(sent).toEqual([""])
  }))
