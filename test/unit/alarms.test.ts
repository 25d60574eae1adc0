/**
 * A worker's alarms (src/runtime/worker/alarms.ts): the doorbell rung at each instant a deferred
 * job is due again, on the Clock, whatever order the instants were asked in.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { makeAlarms } from "../../src/runtime/worker/alarms.ts"

const T0 = 1_791_039_632_175

describe("alarms", () => {
  it.scoped("rings at each instant asked for, the earliest first even when asked last; an instant asked twice rings once", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const at: Array<number> = []
      const clock = yield* Effect.clock
      const probe = yield* makeAlarms(() => {
        at.push(clock.unsafeCurrentTimeMillis() - T0)
      })
      probe.at(T0 + 3000)
      probe.at(T0 + 1000)
      probe.at(T0 + 1000)
      probe.at(T0 + 2000)
      yield* Effect.yieldNow()
      expect(at).toEqual([])
      yield* TestClock.adjust(999)
      expect(at).toEqual([])
      yield* TestClock.adjust(1)
      expect(at).toEqual([1000])
      yield* TestClock.adjust(1000)
      expect(at).toEqual([1000, 2000])
      // asked while waiting for a later one: rung at its own time
      probe.at(T0 + 2500)
      yield* TestClock.adjust(500)
      expect(at).toEqual([1000, 2000, 2500])
      yield* TestClock.adjust(500)
      expect(at).toEqual([1000, 2000, 2500, 3000])
      // an instant already past rings at once
      probe.at(T0)
      yield* Effect.repeatN(Effect.yieldNow(), 5)
      expect(at).toEqual([1000, 2000, 2500, 3000, 3000])
    }))
})
