/**
 * Wake-ups within one process: an enqueue rings the workers of the same process that claim from
 * the same tables, at once, on every database (PostgreSQL's LISTEN/NOTIFY also reaches other
 * processes; MySQL/MariaDB and SQLite have no such signal, and their workers otherwise wait out
 * their poll interval).
 *
 * A ring is only a hint: a worker woken for a job another process took, or for the same job
 * twice, finds nothing and goes back to sleep.
 */
import { Effect, type Scope } from "effect"
import type { LocalWakeupsApi } from "../ports/JobStore.ts"
import { randomUUID } from "node:crypto"

/**
 * This process's mark on the notifications of its own writes that it also rang locally (the
 * payload of src/adapters/sql/wakeupSignal.ts's notifications). Its own listener skips them: the
 * ring already woke this process's workers, and the notification would only make each claim once
 * more and find nothing. Other processes, which see another mark, are woken as before.
 */
export const ORIGIN = `lh:${randomUUID().slice(0, 8)}:`

/** Whether a notification payload is one of this process's own enqueues, already rung here. */
export const isOwnRing = (payload: string | undefined): boolean => payload !== undefined && payload.startsWith(ORIGIN)

const listeners = new Map<string, Set<() => void>>()

/** The wake-ups of the stores on `channel`, as the JobStore port offers them. */
export const localWakeupsFor = (channel: string): LocalWakeupsApi => ({
  ring: () => ringNow(channel),
  subscribe: (wake) => subscribe(channel, wake)
})

/** Rings every listener on `channel` in this process. */
export const ring = (channel: string): Effect.Effect<void> => Effect.sync(() => ringNow(channel))

/** `ring` as a plain call (an enqueue's, made in a step it takes anyway). */
export const ringNow = (channel: string): void => {
  for (const wake of listeners.get(channel) ?? []) wake()
}

/**
 * Calls `wake` each time `channel` rings in this process, from now until the scope closes.
 * Registered before this returns, so a ring right after it is never missed (a stream's
 * subscription would only start once its fiber ran).
 */
export const subscribe = (channel: string, wake: () => void): Effect.Effect<void, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const set = listeners.get(channel) ?? new Set()
      set.add(wake)
      listeners.set(channel, set)
      return set
    }),
    (set) =>
      Effect.sync(() => {
        set.delete(wake)
        if (set.size === 0 && listeners.get(channel) === set) listeners.delete(channel)
      })
  )
