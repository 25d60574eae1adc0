/**
 * The long-running worker's doorbell (src/runtime/worker/doorbell.ts): what ends its claimer's
 * idle wait, and whether that asks for a look at the whole queue (a ring, the poll, the stop) or
 * only wakes it for a narrower claim (a nudge: a busy key's next job, ./keyClaims.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, TestClock } from "effect"
import { makeDoorbell } from "../../src/runtime/worker/doorbell.ts"

const POLL = Duration.seconds(1)

// The probe keeps real time (src/runtime/worker/doorbell.ts), not the TestClock.
const realWait = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

describe("doorbell", () => {
  it.scoped("a ring ends the wait with a look; a nudge without one; both together with one", () =>
    Effect.gen(function*() {
      const bell = yield* makeDoorbell(POLL)
      // Rung or nudged before the wait: the wait ends at once.
      yield* bell.ring
      expect(yield* bell.idle).toBe(true)
      bell.nudge()
      expect(yield* bell.idle).toBe(false)
      bell.nudge()
      bell.ringNow()
      expect(yield* bell.idle).toBe(true)
      // A nudge after a ring that was already taken asks for no look again.
      bell.ringNow()
      expect(yield* bell.idle).toBe(true)
      bell.nudge()
      expect(yield* bell.idle).toBe(false)
      // During the wait.
      const waiting = yield* Effect.fork(bell.idle)
      yield* Effect.yieldNow()
      bell.nudge()
      expect(yield* Fiber.join(waiting)).toBe(false)
    }))

  it.scoped("the poll interval ends the wait with a look, and after the stop the wait returns at once", () =>
    Effect.gen(function*() {
      const bell = yield* makeDoorbell(POLL)
      const waiting = yield* Effect.fork(bell.idle)
      yield* TestClock.adjust(Duration.millis(999))
      expect(waiting.unsafePoll()).toBeNull()
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* Fiber.join(waiting)).toBe(true)
      yield* bell.stop
      expect(bell.stopping()).toBe(true)
      expect(yield* bell.idle).toBe(true)
      expect(yield* bell.idle).toBe(true)
    }))

  it.scoped("a wait's poll is its own: one ended by a ring does not end the next wait early", () =>
    Effect.gen(function*() {
      const bell = yield* makeDoorbell(POLL)
      const first = yield* Effect.fork(bell.idle)
      yield* TestClock.adjust(Duration.millis(500))
      bell.ringNow()
      expect(yield* Fiber.join(first)).toBe(true)
      // The first wait's poll would have come at 1,000 ms; the second's comes at 1,500 ms.
      const second = yield* Effect.fork(bell.idle)
      yield* TestClock.adjust(Duration.millis(600))
      expect(second.unsafePoll()).toBeNull()
      yield* TestClock.adjust(Duration.millis(400))
      expect(yield* Fiber.join(second)).toBe(true)
      // Nothing was left behind for a third wait: it waits for its own poll too.
      const third = yield* Effect.fork(bell.idle)
      yield* TestClock.adjust(Duration.millis(999))
      expect(third.unsafePoll()).toBeNull()
      bell.nudge()
      expect(yield* Fiber.join(third)).toBe(false)
    }))

  it.scoped("a probe's changed signal ends the wait, and it probes only while a wait lasts", () =>
    Effect.gen(function*() {
      let signal = "a"
      let looks = 0
      const bell = yield* makeDoorbell(POLL, {
        everyMs: 5,
        look: Effect.sync(() => {
          looks++
          return signal
        })
      })
      // The first read counts as a change.
      expect(yield* bell.idle).toBe(true)
      // The same signal: the wait goes on (the poll is on the TestClock, which stands still).
      const waiting = yield* Effect.fork(bell.idle)
      yield* realWait(40)
      expect(waiting.unsafePoll()).toBeNull()
      expect(looks).toBeGreaterThan(2)
      signal = "b"
      expect(yield* Fiber.join(waiting)).toBe(true)
      // A wait ended by a ring leaves no probe behind.
      const rung = yield* Effect.fork(bell.idle)
      yield* realWait(20)
      bell.ringNow()
      expect(yield* Fiber.join(rung)).toBe(true)
      yield* realWait(15)
      const after = looks
      yield* realWait(40)
      expect(looks).toBe(after)
    }))
})
