/** The long-running worker's buffer of claimed jobs not yet started (src/runtime/worker/readyBuffer.ts). */
import { expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import fc from "fast-check"
import { makeReadyBuffer } from "../../src/runtime/worker/readyBuffer.ts"

it.effect("items come out oldest first, to takers waiting before or after they were added", () =>
  Effect.gen(function*() {
    const buffer = makeReadyBuffer<number>()
    const early = yield* Effect.fork(buffer.take)
    yield* Effect.yieldNow()
    buffer.offerAll([1, 2, 3])
    expect(yield* Fiber.join(early)).toBe(1)
    expect(yield* buffer.take).toBe(2)
    expect(buffer.takeAll()).toEqual([3])
    expect(buffer.takeAll()).toEqual([])
  }))

it.effect("a taker interrupted while waiting is handed nothing: the next item goes to the next taker", () =>
  Effect.gen(function*() {
    const buffer = makeReadyBuffer<string>()
    const gone = yield* Effect.fork(buffer.take)
    yield* Effect.yieldNow()
    yield* Fiber.interrupt(gone)
    buffer.offerAll(["a"])
    expect(yield* buffer.take).toBe("a")
  }))

it.effect("shutdown interrupts the waiting takers and every later take; what waited is still taken back", () =>
  Effect.gen(function*() {
    const buffer = makeReadyBuffer<number>()
    const waiting = yield* Effect.fork(buffer.take)
    yield* Effect.yieldNow()
    buffer.shutdown()
    expect(Exit.isInterrupted(yield* Fiber.await(waiting))).toBe(true)
    const later = yield* Effect.fork(buffer.take)
    expect(Exit.isInterrupted(yield* Fiber.await(later))).toBe(true)
  }))

it("takes and adds in any order lose and repeat nothing, in order (fast-check)", () =>
  fc.assert(
    fc.property(fc.array(fc.oneof(fc.constant("take" as const), fc.array(fc.nat(), { maxLength: 4 }))), (steps) => {
      const buffer = makeReadyBuffer<number>()
      const added: Array<number> = []
      const taken: Array<number> = []
      for (const step of steps) {
        if (step === "take") {
          if (taken.length < added.length) taken.push(Effect.runSync(buffer.take))
        } else {
          buffer.offerAll(step)
          added.push(...step)
        }
      }
      taken.push(...buffer.takeAll())
      expect(taken).toEqual(added)
    })
  ))
