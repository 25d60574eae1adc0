/**
 * The transient retry rule of src/adapters/sql/retry.ts on its own, without a database: a
 * statement rolled back is sent again at once, or, where the dialect sets `transientBackoff` (a
 * Galera cluster, src/adapters/sql/dialects.ts), after that wait. Each test runs on a TestClock
 * that never moves, so a wait taken on the caller's clock would hang it until its timeout.
 */
import { SqlError } from "@effect/sql/SqlError"
import { expect, it } from "@effect/vitest"
import { Effect, Logger, LogLevel } from "effect"
import { type FailureKinds, retryTransient } from "../../src/adapters/sql/retry.ts"

/** Fails like a deadlock victim `failures` times, then returns how many tries it took. */
const flaky = (failures: number) => {
  let tries = 0
  return Effect.suspend(() =>
    ++tries <= failures
      ? Effect.fail(new SqlError({ cause: "forced", message: "forced deadlock" }))
      : Effect.succeed(tries)
  )
}

/** Runs `effect`, returning its result and the log lines it wrote (DEBUG and up). */
const withLines = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const logger = Logger.make(({ message }) =>
      lines.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
    )
    const result = yield* effect.pipe(
      Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
      Logger.withMinimumLogLevel(LogLevel.Debug)
    )
    return { result, lines }
  })

const kinds = (transientBackoff?: (attempt: number) => number): FailureKinds => ({
  isTransient: (cause) => cause === "forced",
  isDisconnect: () => false,
  transientBackoff
})

it.effect("without a backoff, a statement rolled back is sent again at once", () =>
  Effect.gen(function*() {
    const { lines, result } = yield* withLines(retryTransient(kinds(), "claim", flaky(2)))
    expect(result).toBe(3)
    expect(lines.filter((l) => l.includes("sending it again"))).toEqual([
      "claim: rolled back by the database (forced deadlock); sending it again (1/8)",
      "claim: rolled back by the database (forced deadlock); sending it again (2/8)"
    ])
  }))

it.effect("with a backoff, each retry waits what it gives for that attempt, on the live clock", () =>
  Effect.gen(function*() {
    const asked: Array<number> = []
    const backoff = (attempt: number) => (asked.push(attempt), 3 + attempt)
    const { lines, result } = yield* withLines(retryTransient(kinds(backoff), "claim", flaky(2)))
    expect(result).toBe(3)
    expect(asked).toEqual([0, 1])
    expect(lines.filter((l) => l.includes("sending it again"))).toEqual([
      "claim: rolled back by the database (forced deadlock); sending it again in 3 ms (1/8)",
      "claim: rolled back by the database (forced deadlock); sending it again in 4 ms (2/8)"
    ])
  }))
