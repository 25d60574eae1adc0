/**
 * The long-running worker's gate of busy keys (src/runtime/worker/keyGate.ts): what a waiting
 * attempt is told when its wait ends, in particular whether it is next in line for its key here
 * (`inLine`: its turn came, rather than its wait timing out; docs/behaviour.md §9).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import { GATE_WAIT_MS, type KeyGate, makeKeyGate, type PassedLease } from "../../src/runtime/worker/keyGate.ts"
import { makeWatchdog } from "../../src/runtime/worker/watchdog.ts"

const job = (id: string) => ({ id, priority: 0, createdAt: 0, claimTimeout: null })
const lease: PassedLease = { name: "k", fencingToken: 2n, expiresAt: 1_000_000 }

// A holder on key "k" and an attempt waiting for it; `end` settles the holder's end as the
// attempt's end would (./attempt.ts), and the waiter's turn is returned.
const holderThenWaiter = (end: (gate: KeyGate) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    const gate = makeKeyGate(yield* makeWatchdog())
    expect(yield* gate.turn("k", 1, "holder", job("a"))).toEqual({ _tag: "Open" })
    gate.enter("k", "holder", 1_000_000)
    const waiting = yield* Effect.fork(gate.turn("k", 1, "waiter", job("b")))
    yield* Effect.yieldNow()
    yield* end(gate)
    return yield* Fiber.join(waiting)
  })

// The holder's finish as ./attempt.ts makes it: the waiter is promised the lease, then passed it
// (`passed`), or not (undefined: the finish released it and handed off instead, and the holder
// then leaves as its attempt ends).
const finishes = (passed: PassedLease | undefined) => (gate: KeyGate) =>
  Effect.sync(() => {
    expect(gate.finishing("holder", 0)).toMatchObject({ owner: "waiter" })
    expect(gate.passedOn("holder", passed)).toBe(true)
    if (passed === undefined) gate.leave("holder")
  })

describe("keyGate", () => {
  it.scoped("a waiter passed the lease by its holder's finish starts with it, next in line", () =>
    Effect.gen(function*() {
      const turn = yield* holderThenWaiter(finishes(lease))
      expect(turn).toMatchObject({ _tag: "Waited", lease, inLine: true })
    }))

  it.scoped("a waiter whose promised lease was released and handed off instead is still next in line", () =>
    Effect.gen(function*() {
      const turn = yield* holderThenWaiter(finishes(undefined))
      expect(turn).toMatchObject({ _tag: "Waited", lease: undefined, inLine: true })
    }))

  it.scoped("a waiter whose holder left without passing the lease is next in line, to take it", () =>
    Effect.gen(function*() {
      const turn = yield* holderThenWaiter((gate) => Effect.sync(() => gate.leave("holder")))
      expect(turn).toMatchObject({ _tag: "Waited", lease: undefined, inLine: true })
    }))

  it.scoped("a waiter whose wait timed out (GATE_WAIT_MS) is not in line", () =>
    Effect.gen(function*() {
      const turn = yield* holderThenWaiter(() => TestClock.adjust(GATE_WAIT_MS))
      expect(turn).toMatchObject({ _tag: "Waited", lease: undefined, inLine: false })
    }))
})
