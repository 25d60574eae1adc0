/**
 * Attempt deadlines (docs/behaviour.md §6). A long-running worker watches every running
 * attempt's deadline with one fiber, instead of a timer and a race per attempt: those cost a
 * quarter to a third of the worker's CPU per job in a drain of short jobs (issue 13's profile).
 * The fiber sleeps until the earliest deadline and is woken only when an attempt arrives with an
 * earlier one, so a steady stream of attempts with one timeout costs no wake-ups at all.
 *
 * Time is the Effect `Clock`, so deadlines run under `TestClock` like every other timing rule.
 */
import { Clock, Context, Effect, Fiber, Queue, type Scope } from "effect"

/** Watches deadlines: runs an attempt's `onLate` once its deadline has passed, unless cancelled first. */
export interface Watchdog {
  /**
   * Runs `onLate` once the clock reaches `deadline` (epoch ms); the returned effect cancels it
   * (a no-op once it ran).
   */
  readonly watch: (deadline: number, onLate: Effect.Effect<void>) => Effect.Effect<Effect.Effect<void>>
}

interface Entry {
  readonly deadline: number
  readonly onLate: Effect.Effect<void>
}

/** A watchdog served by one fiber, which lives as long as `scope`. */
export const make: Effect.Effect<Watchdog, never, Scope.Scope> = Effect.gen(function*() {
  const entries = new Map<number, Entry>()
  let nextId = 0
  // The deadline the fiber sleeps toward; an earlier one must wake it.
  let target = Number.POSITIVE_INFINITY
  const wake = yield* Queue.sliding<void>(1)

  const late = (now: number): ReadonlyArray<Entry> => {
    const due: Array<Entry> = []
    for (const [id, e] of entries) {
      if (e.deadline <= now) {
        entries.delete(id)
        due.push(e)
      }
    }
    return due
  }
  // Computed after the late ones ran and in the same step as the wait begins, so an attempt
  // registered meanwhile is either counted here or sees the new target and rings.
  const earliest = (): number => {
    let next = Number.POSITIVE_INFINITY
    for (const e of entries.values()) next = Math.min(next, e.deadline)
    target = next
    return next
  }

  const watcher = Effect.gen(function*() {
    for (;;) {
      const due = late(yield* Clock.currentTimeMillis)
      for (const e of due) yield* e.onLate
      const next = earliest()
      const now = yield* Clock.currentTimeMillis
      if (next === Number.POSITIVE_INFINITY) yield* Queue.take(wake)
      else if (next > now) yield* Effect.raceFirst(Queue.take(wake), Effect.sleep(next - now))
    }
  })
  const fiber = yield* Effect.forkDaemon(watcher)
  yield* Effect.addFinalizer(() => Fiber.interrupt(fiber))

  return {
    watch: (deadline, onLate) =>
      Effect.flatMap(
        Effect.sync(() => {
          const id = nextId++
          entries.set(id, { deadline, onLate })
          return { id, earlier: deadline < target }
        }),
        ({ earlier, id }) =>
          Effect.as(
            earlier ? Queue.offer(wake, undefined) : Effect.void,
            Effect.sync(() => void entries.delete(id))
          )
      )
  }
})

/**
 * A watchdog for one attempt outside a long-running worker (processNext, tick): a timer fiber
 * of its own, interrupted by the cancel.
 */
export const single: Watchdog = {
  watch: (deadline, onLate) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const timer = yield* Effect.forkDaemon(Effect.zipRight(Effect.sleep(Math.max(0, deadline - now)), onLate))
      return Fiber.interruptFork(timer)
    })
}

/**
 * The watchdog attempts use: a long-running worker provides its own (`make`) to its fibers;
 * anywhere else each attempt gets a timer of its own (`single`).
 */
export class AttemptWatchdog extends Context.Reference<AttemptWatchdog>()("leasehold/AttemptWatchdog", {
  defaultValue: (): Watchdog => single
}) {}
