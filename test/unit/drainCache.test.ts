/**
 * A long-running worker's view of its host's drain (src/runtime/worker/hosts.ts `cachedDraining`):
 * the answer its claimer uses is never older than the poll interval; once four fifths of that old
 * (`REFRESH_AHEAD`), it is
 * used as it is while a read in the background brings it up to date, so a woken claimer does not
 * wait a round trip for it.
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
  it.scoped("is read at first use, kept for four fifths of a poll interval, then refreshed in the background", () =>
    Effect.gen(function*() {
      const { state, store } = hostStore()
      const isDraining = yield* cachedDraining(store, "h", POLL)
      expect(yield* isDraining).toBe(false)
      expect(state.started).toBe(1)

      state.draining = true
      yield* TestClock.adjust("700 millis")
      expect(yield* isDraining).toBe(false)
      expect(state.started).toBe(1)

      // Four fifths of a poll old: this use gets the cached answer, and a read starts in the background.
      yield* TestClock.adjust("100 millis")
      expect(yield* isDraining).toBe(false)
      yield* Effect.yieldNow()
      expect(state.started).toBe(2)
      expect(yield* isDraining).toBe(true)
      expect(state.started).toBe(2)
    }))

  it.scoped("is read before it is used once a whole poll interval old", () =>
    Effect.gen(function*() {
      const { state, store } = hostStore()
      const isDraining = yield* cachedDraining(store, "h", POLL)
      expect(yield* isDraining).toBe(false)
      state.draining = true
      yield* TestClock.adjust("1 second")
      expect(yield* isDraining).toBe(true)
      expect(state.started).toBe(2)
    }))

  it.scoped("runs one background read at a time", () =>
    Effect.gen(function*() {
      const { state, store } = hostStore()
      const isDraining = yield* cachedDraining(store, "h", POLL)
      expect(yield* isDraining).toBe(false)
      state.draining = true
      state.hold = yield* Deferred.make<void>()
      yield* TestClock.adjust("800 millis")
      expect(yield* isDraining).toBe(false)
      yield* Effect.yieldNow()
      yield* TestClock.adjust("100 millis")
      expect(yield* isDraining).toBe(false)
      yield* Effect.yieldNow()
      expect(state.started).toBe(2)
      yield* Deferred.succeed(state.hold, undefined)
      yield* Effect.yieldNow()
      expect(yield* isDraining).toBe(true)
      expect(state.started).toBe(2)
    }))
})
