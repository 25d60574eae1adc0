/**
 * The long-running worker's doorbell: how its claimer waits when nothing is due, and how it is
 * woken (by a wake-up signal, a reap, `WorkerApi.wake`, or the stop).
 *
 * One fiber waits on it (the claimer, ./longRunning.ts), so rings do not queue up: rings while
 * the claimer is busy leave one ring behind, which costs at most one claim that finds nothing.
 * A nudge wakes it too, but asks for no new look at the whole queue: the claimer has a narrower
 * claim to make (a busy key's next job, ./keyClaims.ts).
 */
import { type Duration, Effect, Queue, Ref } from "effect"

/** One worker's doorbell. */
export interface Doorbell {
  /** Wakes the waiting fiber (or lets its next wait end at once). */
  readonly ring: Effect.Effect<void>
  /** `ring` as a plain call, for a callback outside any fiber. */
  readonly ringNow: () => void
  /** Wakes the waiting fiber without a ring: `idle` then returns false, unless it was also rung. */
  readonly nudge: () => void
  /**
   * Waits for a ring, a nudge or the poll interval. True: rung, polled or stopping (look at the
   * queue again); false: only nudged. After `stop`, it returns at once.
   */
  readonly idle: Effect.Effect<boolean>
  /** Whether `stop` has been called. */
  readonly stopping: Effect.Effect<boolean>
  /** Marks the worker stopping and wakes the waiting fiber so it sees it. */
  readonly stop: Effect.Effect<void>
}

/**
 * A look for work that costs less than a claim, sent while idle (the store's `IdleProbe`,
 * src/ports/JobStore.ts): `look` reads a signal; a value that differs from the last one read
 * rings the bell.
 */
export interface Probe {
  readonly everyMs: number
  readonly look: Effect.Effect<string | null, unknown>
}

// The probe's pace is real time, not the Clock: it is only a hint (the poll, on the Clock, stays
// the rule), and on a TestClock a probe on the Clock would run thousands of times per adjust.
const realSleep = (ms: number): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const t = setTimeout(() => resume(Effect.void), ms)
    return Effect.sync(() => clearTimeout(t))
  })

/**
 * A doorbell whose waiter looks again every `poll` when nothing rings, and with a `probe`
 * also rings itself when the probe's signal changes.
 */
export const makeDoorbell = (poll: Duration.Duration, probe?: Probe): Effect.Effect<Doorbell> =>
  Effect.gen(function*() {
    const stopping = yield* Ref.make(false)
    const bell = yield* Queue.sliding<void>(1)
    // Whether a ring (not only a nudge) came since the bell was last taken.
    let rung = false
    const ringNow = () => {
      rung = true
      Queue.unsafeOffer(bell, undefined)
    }
    const ring = Effect.sync(ringNow)
    // The last signal read, kept across idle spells: only a change means something new (the first
    // read counts as one: a claim that finds nothing costs less than a missed job's poll).
    let last: string | null | undefined
    const probing = probe === undefined ? Effect.never : Effect.gen(function*() {
      while (true) {
        yield* realSleep(probe.everyMs)
        // A failed look is a missed hint, never an error: the poll still comes. Disconnected, so a
        // ring or a stop that ends the wait does not wait for a statement in flight to come back.
        const seen = yield* Effect.orElseSucceed(Effect.disconnect(probe.look), () => last)
        const changed = seen !== null && seen !== last
        last = seen
        if (changed) return
      }
    })
    // Each racer is a fiber forked per idle spell: without a probe, two. The bell's says whether
    // it was rung; the poll and a changed probe always ask for a look.
    const racers = [
      Effect.map(Queue.take(bell), () => {
        const look = rung
        rung = false
        return look
      }),
      Effect.as(Effect.sleep(poll), true),
      ...(probe === undefined ? [] : [Effect.as(probing, true)])
    ]
    // The stop sets the flag before it rings, so a waiter that read the flag unset still wakes.
    return {
      ring,
      ringNow,
      nudge: () => void Queue.unsafeOffer(bell, undefined),
      idle: Effect.flatMap(Ref.get(stopping), (stop) => stop ? Effect.succeed(true) : Effect.raceAll(racers)),
      stopping: Ref.get(stopping),
      stop: Effect.zipRight(Ref.set(stopping, true), ring)
    }
  })
