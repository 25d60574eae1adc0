/**
 * Attempt timeouts are durations slept, not deadlines read off the Clock
 * (src/runtime/worker/watchdog.ts): a Clock that jumps ahead, or reads ahead of time passing as
 * the chaos run's does (scripts/chaos/clock.ts), must not end an attempt early.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Ref, TestClock } from "effect"
import { watch } from "../../src/runtime/worker/watchdog.ts"

/** `base` read `jump.ms` ahead; its sleeps are the base clock's. */
const jumpingClock = (base: Clock.Clock, jump: { ms: number }): Clock.Clock => ({
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  unsafeCurrentTimeMillis: () => base.unsafeCurrentTimeMillis() + jump.ms,
  unsafeCurrentTimeNanos: () => base.unsafeCurrentTimeNanos() + BigInt(jump.ms) * 1_000_000n,
  currentTimeMillis: Effect.map(base.currentTimeMillis, (t) => t + jump.ms),
  currentTimeNanos: Effect.map(base.currentTimeNanos, (t) => t + BigInt(jump.ms) * 1_000_000n),
  sleep: (duration) => base.sleep(duration)
})

describe("attempt timeouts", () => {
  it.effect("fire once their time has passed, whatever the Clock reads meanwhile; a cancelled one never does", () =>
    Effect.gen(function*() {
      const jump = { ms: 0 }
      const base = yield* Effect.clock
      const fired = yield* Ref.make<ReadonlyArray<string>>([])
      const late = (name: string) => Ref.update(fired, (f) => [...f, name])
      const timers = Effect.gen(function*() {
        const cancelLong = yield* watch(Duration.seconds(30), late("long"))
        yield* watch(Duration.seconds(10), late("short"))
        yield* yield* watch(Duration.seconds(5), late("cancelled"))
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
})
