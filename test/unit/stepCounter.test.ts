/**
 * The bench's step counter (bench/lib/steps.ts, scenario 10): it counts the steps of the program
 * it runs and of the fibers that program forks, only between `start` and `stop`, and the same
 * program counts the same every time.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { makeStepCounter } from "../../bench/lib/steps.ts"

// `n` steps of one kind, some in a forked fiber.
const work = (n: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < n; i++) yield* Effect.sync(() => i)
    const child = yield* Effect.fork(
      Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) => Effect.sync(() => i))
    )
    yield* Fiber.join(child)
  })

it.effect("counts the steps between start and stop, forked fibers' too, the same each time", () =>
  Effect.gen(function*() {
    const counter = makeStepCounter()
    const countOf = (n: number) =>
      counter.counted(Effect.gen(function*() {
        yield* work(n) // not counted: before start
        counter.start()
        yield* work(n)
        const steps = counter.stop()
        yield* work(n) // not counted: after stop
        return steps
      }))
    const ten = yield* countOf(10)
    expect(ten).toBeGreaterThan(20)
    expect(yield* countOf(10)).toBe(ten)
    // Ten more iterations in each fiber: more steps; the steps after its stop were not counted.
    const twenty = yield* countOf(20)
    expect(twenty).toBeGreaterThan(ten)
    expect(counter.stop()).toBe(twenty)
  }))

it.effect("with detail, breaks the steps down by kind and source, and the parts add up to the count", () =>
  Effect.gen(function*() {
    const counter = makeStepCounter({ detail: true })
    const steps = yield* counter.counted(Effect.gen(function*() {
      counter.start()
      yield* work(10)
      return counter.stop()
    }))
    const parts = counter.breakdown()
    expect(parts.reduce((sum, [, n]) => sum + n, 0)).toBe(steps)
    // The ten syncs of the loop (and the forked fiber's ten) are one source.
    expect(parts.find(([source]) => source.startsWith("Sync") && source.includes("=> i"))?.[1]).toBe(20)
    counter.clear()
    expect(counter.breakdown()).toEqual([])
    expect(makeStepCounter().breakdown()).toEqual([])
  }))
