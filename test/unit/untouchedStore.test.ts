/**
 * The guard of the store-free checks (./untouchedStore.ts) is not vacuous: a call that gets past
 * its checks reaches the store, is recorded, and the check dies.
 */
import { expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Schema } from "effect"
import { define, enqueue } from "../../src/runtime/Job.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { untouchedStore, withUntouchedStore } from "./untouchedStore.ts"

const Plain = define({ name: "plain", schema: Schema.Struct({ s: Schema.String }), perform: () => Effect.void })

it.effect("a valid enqueue, processNext, drain or long-running worker reaches the store: it is recorded, and the check dies", () =>
  Effect.gen(function*() {
    const calls: ReadonlyArray<readonly [string, Effect.Effect<unknown, unknown, Worker.WorkerServices>]> = [
      ["enqueue", enqueue(Plain, { s: "x" })],
      ["processNext", Worker.processNext({ host: "h" })],
      ["drain", Worker.drain({ host: "h", expiresIn: "1 minute" })],
      ["long-running worker", Effect.scoped(Worker.make({ host: "h", concurrency: 1 }))]
    ]
    for (const [label, call] of calls) {
      const store = untouchedStore([Plain])
      yield* Effect.exit(Effect.provide(call, store.layer))
      expect(store.touched.length, label).toBeGreaterThan(0)
      // the worker logs and ignores a failed host-row write; withUntouchedStore still dies
      const exit = yield* Effect.exit(withUntouchedStore([Plain], call))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause), label).toBe(true)
    }
  }))

it.effect("withUntouchedStore dies when the store was called, even if the effect caught the defect", () =>
  Effect.gen(function*() {
    const caught = Effect.catchAllDefect(Effect.asVoid(enqueue(Plain, { s: "x" })), () => Effect.void)
    const exit = yield* Effect.exit(withUntouchedStore([Plain], caught))
    expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
  }))
