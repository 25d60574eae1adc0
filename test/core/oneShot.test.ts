/** The worker's one-shot result cell (src/infra/oneShot.ts). */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { unsafeMakeOneShot } from "../../src/infra/oneShot.ts"

describe("OneShot", () => {
  it.effect("a result set before the await is read at once", () =>
    Effect.gen(function*() {
      const cell = unsafeMakeOneShot<number, string>()
      cell.complete(Exit.succeed(1))
      expect(yield* cell.await).toBe(1)
    }))

  it.effect("a waiter is resumed by a later result, from another fiber", () =>
    Effect.gen(function*() {
      const cell = unsafeMakeOneShot<number, string>()
      const waiting = yield* Effect.fork(cell.await)
      yield* Effect.yieldNow()
      yield* Effect.fork(Effect.sync(() => cell.complete(Exit.succeed(2))))
      expect(yield* Fiber.join(waiting)).toBe(2)
    }))

  it.effect("the first result wins; a failure is the await's failure", () =>
    Effect.gen(function*() {
      const cell = unsafeMakeOneShot<number, string>()
      cell.complete(Exit.fail("first"))
      cell.complete(Exit.succeed(3))
      expect(yield* Effect.flip(cell.await)).toBe("first")
    }))

  it.effect("an interrupted waiter is forgotten: the result set later resumes nobody and can still be read", () =>
    Effect.gen(function*() {
      const cell = unsafeMakeOneShot<number, never>()
      const waiting = yield* Effect.fork(cell.await)
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(waiting)
      expect(Exit.isInterrupted(yield* Fiber.await(waiting))).toBe(true)
      cell.complete(Exit.succeed(4))
      expect(yield* cell.await).toBe(4)
    }))
})
