/**
 * The long-running worker's doorbell: how idle fibers wait, and how they are woken (by a
 * wake-up signal, a reap, `WorkerApi.wake`, or the stop).
 *
 * A ring wakes one idle fiber (a notification means about one job came due), and a fiber woken
 * by it that claims a job rings again, so a burst wakes fibers one by one while a single
 * hand-off wakes one fiber, not all. At most `fibers` rings wait, so rings while every fiber is
 * busy cost at most that many empty claims later.
 */
import { type Duration, Effect, Queue, Ref } from "effect"

/** One worker's doorbell. */
export interface Doorbell {
  /** Wakes one idle fiber (or the next to go idle). */
  readonly ring: Effect.Effect<void>
  /**
   * Waits for a ring or the poll interval; true when a ring ended the wait. After `stop`, it
   * returns false at once.
   */
  readonly idle: Effect.Effect<boolean>
  /** Whether `stop` has been called. */
  readonly stopping: Effect.Effect<boolean>
  /** Marks the worker stopping and wakes every fiber so each sees it. */
  readonly stop: Effect.Effect<void>
}

/** A doorbell for `fibers` fibers that poll every `poll` when nothing rings. */
export const makeDoorbell = (fibers: number, poll: Duration.Duration): Effect.Effect<Doorbell> =>
  Effect.gen(function*() {
    const stopping = yield* Ref.make(false)
    const bell = yield* Queue.dropping<void>(fibers)
    // The stop sets the flag before it rings every fiber, so a fiber that read the flag unset
    // still gets a ring.
    return {
      ring: Effect.asVoid(Queue.offer(bell, undefined)),
      idle: Effect.flatMap(
        Ref.get(stopping),
        (stop) =>
          stop
            ? Effect.succeed(false)
            : Effect.race(Effect.as(Queue.take(bell), true), Effect.as(Effect.sleep(poll), false))
      ),
      stopping: Ref.get(stopping),
      stop: Effect.zipRight(
        Ref.set(stopping, true),
        Effect.asVoid(Queue.offerAll(bell, Array.from({ length: fibers }, () => undefined)))
      )
    }
  })
