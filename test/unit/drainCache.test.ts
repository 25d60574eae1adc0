/**
 * A long-running worker's view of its host's drain (src/runtime/worker/hosts.ts `cachedDraining`):
 * the answer its claimer uses is never older than the poll interval. It is read as the worker
 * starts and then on the worker's own timer, every nine tenths of the interval
 * (`REFRESH_EVERY`), so a woken claimer uses it as it is; only a claim that finds it a whole
 * interval old (the timer's read late) reads it first.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Option, TestClock } from "effect"
import type { HostRow } from "../../src/core/model.ts"
import type { JobStoreApi } from "../../src/ports/JobStore.ts"
import { cachedDraining } from "../../src/runtime/worker/hosts.ts"

/**
 * A store whose only member is `getHost`: the host row says `state.draining`; reads are counted
 * as they start, and wait for `state.hold` when it is set.
 */
const hostStore = () => {
  const state: { draining: boolean; started: number; hold: Deferred.Deferred<void> | undefined } = {
    draining: false,
    started: 0,
    hold: undefined
  }
  const row = (): HostRow => ({
    host: "h",
    lastSeenAt: 0,
    startedAt: 0,
    running: 0,
    maxConcurrent: 0,
    draining: state.draining,
    drainExpiresAt: null,
    codeVersion: null
  })
  const getHost = () =>
    Effect.suspend(() => {
      state.started++
      const hold = state.hold
      return Effect.zipRight(
        hold === undefined ? Effect.void : Deferred.await(hold),
        Effect.sync(() => Option.some(row()))
      )
    })
  return { state, store: { getHost } as unknown as JobStoreApi }
}

const POLL = Duration.seconds(1)

describe("a worker's drain state", () => {
  it.scoped("is read as the worker starts, then on its timer; a claim uses the last answer without a read", () =>
    Effect.gen(function*() {
      const { state, store } = hostStore()
      const view = yield* cachedDraining(store, "h", POLL)
      expect(state.started).toBe(1)
      expect(view.fresh()).toBe(false)

      state.draining = true
      yield* TestClock.adjust("899 millis")
      expect(view.fresh()).toBe(false)
      expect(state.started).toBe(1)

      // Nine tenths of a poll interval: the timer reads it, and claims see the new answer.
      yield* TestClock.adjust("1 millis")
      expect(state.started).toBe(2)
      expect(view.fresh()).toBe(true)
      yield* TestClock.adjust("899 millis")
      expect(view.fresh()).toBe(true)
      expect(state.started).toBe(2)

      // And so on, each nine tenths.
      state.draining = false
      yield* TestClock.adjust("1 millis")
      expect(state.started).toBe(3)
      expect(view.fresh()).toBe(false)
    }))

  it.scoped("is read before it is used once a whole poll interval old (the timer's read late)", () =>
    Effect.gen(function*() {
      const { state, store } = hostStore()
      const view = yield* cachedDraining(store, "h", POLL)
      state.draining = true
      // The timer's read, at nine tenths, does not come back.
      state.hold = yield* Deferred.make<void>()
      yield* TestClock.adjust("900 millis")
      expect(state.started).toBe(2)
      expect(view.fresh()).toBe(false)
      state.hold = undefined
      // A whole interval old: not fresh; a claim reads it.
      yield* TestClock.adjust("100 millis")
      expect(view.fresh()).toBeUndefined()
      expect(yield* view.read).toBe(true)
      expect(state.started).toBe(3)
      // Read by that claim, it is fresh again.
      expect(view.fresh()).toBe(true)
      expect(state.started).toBe(3)
    }))

  it.scoped("is no longer read once the worker's scope closes", () =>
    Effect.gen(function*() {
      const { state, store } = hostStore()
      yield* Effect.scoped(cachedDraining(store, "h", POLL))
      expect(state.started).toBe(1)
      yield* TestClock.adjust("10 seconds")
      expect(state.started).toBe(1)
    }))
})
