/**
 * The long-running worker's doorbell: how its claimer waits when nothing is due, and how it is
 * woken (by a wake-up signal, a reap, `WorkerApi.wake`, or the stop).
 *
 * One fiber waits on it (the claimer, ./longRunning.ts), so rings do not queue up: rings while
 * the claimer is busy leave one ring behind, which costs at most one claim that finds nothing.
 */
import { type Duration, Effect, Queue, Ref } from "effect"

/** One worker's doorbell. */
export interface Doorbell {
  /** Wakes the waiting fiber (or lets its next wait end at once). */
  readonly ring: Effect.Effect<void>
  /** Waits for a ring or the poll interval. After `stop`, it returns at once. */
  readonly idle: Effect.Effect<void>
  /** Whether `stop` has been called. */
  readonly stopping: Effect.Effect<boolean>
  /** Marks the worker stopping and wakes the waiting fiber so it sees it. */
  readonly stop: Effect.Effect<void>
}

/** A doorbell whose waiter looks again every `poll` when nothing rings. */
export const makeDoorbell = (poll: Duration.Duration): Effect.Effect<Doorbell> =>
  Effect.gen(function*() {
    const stopping = yield* Ref.make(false)
    const bell = yield* Queue.sliding<void>(1)
    const ring = Effect.asVoid(Queue.offer(bell, undefined))
    // The stop sets the flag before it rings, so a waiter that read the flag unset still wakes.
    return {
      ring,
      idle: Effect.flatMap(
        Ref.get(stopping),
        (stop) => (stop ? Effect.void : Effect.race(Queue.take(bell), Effect.sleep(poll)))
      ),
      stopping: Ref.get(stopping),
      stop: Effect.zipRight(Ref.set(stopping, true), ring)
    }
  })
