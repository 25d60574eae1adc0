/**
 * The long-running worker's doorbell: how its claimer waits when nothing is due, and how it is
 * woken (by a wake-up signal, a reap, `WorkerApi.wake`, or the stop).
 *
 * One fiber waits on it (the claimer, ./longRunning.ts), so rings do not queue up: rings while
 * the claimer is busy leave one ring behind, which costs at most one claim that finds nothing.
 * A nudge wakes it too, but asks for no new look at the whole queue: the claimer has a narrower
 * claim to make (a busy key's next job, ./keyClaims.ts).
 */
import { Duration, Effect, type Scope } from "effect"

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
  /** Whether `stop` has been called (a plain read: the claimer asks before every claim). */
  readonly stopping: () => boolean
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
 * also rings itself when the probe's signal changes. Its poll (and probe) run in one fiber, alive
 * while `scope` is open.
 */
export const makeDoorbell = (poll: Duration.Duration, probe?: Probe): Effect.Effect<Doorbell, never, Scope.Scope> =>
  Effect.gen(function*() {
    const clock = yield* Effect.clock
    const pollMs = Duration.toMillis(poll)
    let stopping = false
    // Whether a wake-up came while nobody waited (the next wait then ends at once), and whether
    // it asked for a look (a ring, not only a nudge).
    let pending = false
    let rung = false
    // The waiting fiber's resume, while it waits; which wait it is, and when its poll comes (on
    // the Clock).
    let waiter: ((wake: Effect.Effect<boolean>) => void) | undefined
    let waits = 0
    let pollAt = 0
    // The timer fiber's resume while it has no wait to time.
    let parked: ((wake: Effect.Effect<void>) => void) | undefined
    // Wakes the waiter in place (a ring's path is one callback, no fiber of its own), or leaves
    // the wake-up for the next wait.
    const wake = (look: boolean) => {
      const resume = waiter
      if (resume === undefined) {
        pending = true
        rung ||= look
        return
      }
      waiter = undefined
      resume(Effect.succeed(look))
    }
    const ringNow = () => wake(true)
    const ring = Effect.sync(ringNow)
    // The last signal read, kept across idle spells: only a change means something new (the first
    // read counts as one: a claim that finds nothing costs less than a missed job's poll).
    let last: string | null | undefined
    // Probes with `p` while wait `wait` lasts; returns when the signal changed (or the wait ended).
    const probing = (p: Probe, wait: number) =>
      Effect.gen(function*() {
        while (true) {
          yield* realSleep(p.everyMs)
          if (waits !== wait || waiter === undefined) return
          // A failed look is a missed hint, never an error: the poll still comes. Disconnected, so a
          // ring or a stop that ends the wait does not wait for a statement in flight to come back.
          const seen = yield* Effect.orElseSucceed(Effect.disconnect(p.look), () => last)
          const changed = seen !== null && seen !== last
          last = seen
          if (changed) return
        }
      })
    // How long until the current wait's poll: 0 once due, or when the Clock went back (the poll
    // more than an interval away), so as to poll now rather than that much later.
    const untilPoll = () => {
      const ahead = pollAt - clock.unsafeCurrentTimeMillis()
      return ahead > pollMs ? 0 : Math.max(0, ahead)
    }
    // The poll (and the probe) of every wait, in one fiber. A ring or a nudge wakes the waiter
    // directly and leaves this fiber alone: when it wakes for a wait that has ended, it times the
    // next one from there, or parks until there is one. (A fiber forked per wait, interrupted on
    // the ring, would put that interruption on every wake-up's path, between a notification and
    // the claim it asks for.)
    const timer = Effect.gen(function*() {
      while (true) {
        if (waiter === undefined) {
          yield* Effect.async<void>((resume) => {
            parked = resume
          })
          continue
        }
        const wait = waits
        const left = untilPoll()
        if (left > 0) {
          const polled = Effect.as(Effect.sleep(Duration.millis(left)), true)
          if (probe === undefined) yield* polled
          else if ((yield* Effect.race(polled, Effect.as(probing(probe, wait), false))) === false) {
            if (waits === wait && waiter !== undefined) wake(true)
            continue
          }
        }
        // Its own wait's poll only: a wait that ended meanwhile is not woken by it.
        if (waits === wait && waiter !== undefined && untilPoll() === 0) wake(true)
      }
    })
    yield* Effect.forkScoped(timer)

    // A wake-up that came meanwhile ends the wait at once.
    const taken = () => {
      const look = rung
      pending = false
      rung = false
      return look
    }
    const wait = Effect.async<boolean>((resume) => {
      if (pending) return resume(Effect.succeed(taken()))
      waiter = resume
      waits++
      pollAt = clock.unsafeCurrentTimeMillis() + pollMs
      const timing = parked
      parked = undefined
      timing?.(Effect.void)
      // No canceller: only the stop interrupts the waiting claimer, after which a ring resumes
      // nothing (a fiber ignores a resume once interrupted), and a canceller is an interruption
      // handler, three more steps, per wait.
    })
    // The stop sets the flag before it rings, so a waiter that read the flag unset still wakes.
    return {
      ring,
      ringNow,
      nudge: () => wake(false),
      idle: Effect.suspend(() => {
        if (stopping) return Effect.succeed(true)
        return pending ? Effect.succeed(taken()) : wait
      }),
      stopping: () => stopping,
      stop: Effect.suspend(() => {
        stopping = true
        return ring
      })
    }
  })
