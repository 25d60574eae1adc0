/**
 * The long-running worker's gate of busy keys (src/runtime/worker/keyGate.ts): what a waiting
 * attempt is told when its turn comes, in particular whether the holder that promised it the
 * lease woke a job asleep in the database instead (`passedOver`; docs/behaviour.md §9).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { makeKeyGate, type PassedLease } from "../../src/runtime/worker/keyGate.ts"
import { makeWatchdog } from "../../src/runtime/worker/watchdog.ts"

const job = (id: string) => ({ id, priority: 0, createdAt: 0, claimTimeout: null })
const lease: PassedLease = { name: "k", fencingToken: 2n, expiresAt: 1_000_000 }

// A holder on key "k" and an attempt waiting for it; `end` settles the holder's finish as the
// attempt's end would (./attempt.ts), and the waiter's turn is returned.
const holderThenWaiter = (end: (gate: ReturnType<typeof makeKeyGate>) => void) =>
  Effect.gen(function*() {
    const gate = makeKeyGate(yield* makeWatchdog())
    expect(yield* gate.turn("k", 1, "holder", job("a"))).toEqual({ _tag: "Open" })
    gate.enter("k", "holder", 1_000_000)
    const waiting = yield* Effect.fork(gate.turn("k", 1, "waiter", job("b")))
    yield* Effect.yieldNow()
    expect(gate.finishing("holder", 0)).toMatchObject({ owner: "waiter" })
    end(gate)
    return yield* Fiber.join(waiting)
  })

describe("keyGate", () => {
  it.scoped("a waiter passed the lease starts with it, not passed over", () =>
    Effect.gen(function*() {
      const turn = yield* holderThenWaiter((gate) => expect(gate.passedOn("holder", lease)).toBe(true))
      expect(turn).toMatchObject({ _tag: "Waited", lease, passedOver: false })
    }))

  it.scoped("a waiter whose promised lease was released and handed off instead is told it was passed over", () =>
    Effect.gen(function*() {
      const turn = yield* holderThenWaiter((gate) => {
        expect(gate.passedOn("holder", undefined)).toBe(true)
        gate.leave("holder")
      })
      expect(turn).toMatchObject({ _tag: "Waited", lease: undefined, passedOver: true })
    }))

  it.scoped("a waiter whose holder left without a finish (no promise kept or broken) is not passed over", () =>
    Effect.gen(function*() {
      const gate = makeKeyGate(yield* makeWatchdog())
      yield* gate.turn("k", 1, "holder", job("a"))
      gate.enter("k", "holder", 1_000_000)
      const waiting = yield* Effect.fork(gate.turn("k", 1, "waiter", job("b")))
      yield* Effect.yieldNow()
      gate.leave("holder")
      expect(yield* Fiber.join(waiting)).toMatchObject({ _tag: "Waited", lease: undefined, passedOver: false })
    }))
})
