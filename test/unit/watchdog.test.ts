/**
 * Attempt timeouts are durations slept, not deadlines read off the Clock
 * (src/runtime/worker/watchdog.ts): a Clock that jumps ahead, or reads ahead of time passing as
 * the chaos run's does (scripts/chaos/clock.ts), must not end an attempt early. Both ways to
 * watch (a timer per attempt, and a worker's shared watchdog) are held to the same rules.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Ref, TestClock } from "effect"
import { makeWatchdog, watch, type Watch } from "../../src/runtime/worker/watchdog.ts"

/** `base` read `jump.ms` ahead; its sleeps are the base clock's. */
const jumpingClock = (base: Clock.Clock, jump: { ms: number }): Clock.Clock => ({
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  unsafeCurrentTimeMillis: () => base.unsafeCurrentTimeMillis() + jump.ms,
  unsafeCurrentTimeNanos: () => base.unsafeCurrentTimeNanos() + BigInt(jump.ms) * 1_000_000n,
  currentTimeMillis: Effect.map(base.currentTimeMillis, (t) => t + jump.ms),
  currentTimeNanos: Effect.map(base.currentTimeNanos, (t) => t + BigInt(jump.ms) * 1_000_000n),
  sleep: (duration) => base.sleep(duration)
})

const ways: ReadonlyArray<readonly [string, Effect.Effect<Watch, never, import("effect").Scope.Scope>]> = [
  ["a timer per attempt", Effect.succeed(watch)],
  ["a shared watchdog", makeWatchdog()]
]

describe("attempt timeouts", () => {
  for (const [way, make] of ways) {
    it.scoped(`${way}: fire once their time has passed, whatever the Clock reads meanwhile; a cancelled one never does`, () =>
      Effect.gen(function*() {
        const jump = { ms: 0 }
        const base = yield* Effect.clock
        const fired = yield* Ref.make<ReadonlyArray<string>>([])
        const late = (name: string) => Ref.update(fired, (f) => [...f, name])
        const timers = Effect.gen(function*() {
          const timer = yield* make
          const cancelLong = yield* timer(Duration.seconds(30), late("long"))
          yield* timer(Duration.seconds(10), late("short"))
          yield* yield* timer(Duration.seconds(5), late("cancelled"))
          return cancelLong
        })
        const cancelLong = yield* Effect.withClock(timers, jumpingClock(base, jump))
        // The clock jumps an hour ahead: nothing has run for that long, so nothing fires.
        jump.ms = 3_600_000
        yield* TestClock.adjust("9 seconds")
        expect(yield* Ref.get(fired)).toEqual([])
        yield* TestClock.adjust("1 second")
        expect(yield* Ref.get(fired)).toEqual(["short"])
        yield* cancelLong
        yield* TestClock.adjust("1 minute")
        expect(yield* Ref.get(fired)).toEqual(["short"])
      }))
  }

  it.scoped("the shared watchdog: an attempt that begins mid-step is late by at most a step, never early", () =>
    Effect.gen(function*() {
      const timer = yield* makeWatchdog(Duration.millis(250))
      const fired = yield* Ref.make<ReadonlyArray<readonly [string, number]>>([])
      const late = (name: string) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => Ref.update(fired, (f) => [...f, [name, now] as const]))
      const t0 = yield* Clock.currentTimeMillis
      yield* timer(Duration.seconds(2), late("first"))
      yield* TestClock.adjust("100 millis")
      // Begins 100 ms into a 250 ms step: counts from the step's end (t0 + 250).
      yield* timer(Duration.seconds(1), late("second"))
      yield* TestClock.adjust("1149 millis")
      expect(yield* Ref.get(fired)).toEqual([])
      yield* TestClock.adjust("1 milli")
      expect(yield* Ref.get(fired)).toEqual([["second", t0 + 1250]])
      yield* TestClock.adjust("750 millis")
      expect(yield* Ref.get(fired)).toEqual([["second", t0 + 1250], ["first", t0 + 2000]])
      // Idle again: a new attempt is counted from when it begins.
      yield* TestClock.adjust("1 hour")
      const t1 = yield* Clock.currentTimeMillis
      yield* timer(Duration.millis(300), late("third"))
      yield* TestClock.adjust("300 millis")
      expect((yield* Ref.get(fired))[2]).toEqual(["third", t1 + 300])
    }))
})
