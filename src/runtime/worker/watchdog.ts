/**
 * Attempt timeouts (docs/behaviour.md §6, §9). A timeout is a duration slept, not a deadline read
 * off the Clock: a Clock that jumps (or, in the chaos run, reads faster than time passes:
 * scripts/chaos/clock.ts) must not end running attempts early. A shared watcher that compared
 * deadlines on the Clock did, and the chaos run caught it. Under `TestClock` the sleeps follow the
 * test's clock, like every timing rule.
 *
 * Two ways to watch, with the same signature (`Watch`):
 * - `watch`: one timer fiber for one attempt (processNext, processQueue, tick).
 * - `makeWatchdog`: one fiber for all of a long-running worker's attempts. It sleeps in steps and
 *   counts, per attempt, the time it has slept since the attempt began, so no attempt costs a
 *   fiber, a timer and an interruption of its own (which, with no database work, were a large
 *   share of the worker's CPU per job).
 */
import { Duration, Effect, Fiber, type Scope } from "effect"

/** Runs `onLate` once `timeout` has passed; the returned effect cancels it (a no-op once it ran). */
export type Watch = (timeout: Duration.Duration, onLate: Effect.Effect<void>) => Effect.Effect<Effect.Effect<void>>

/** One attempt's timer: a fiber that sleeps `timeout`, then runs `onLate`, unless cancelled first. */
export const watch: Watch = (timeout, onLate) =>
  Effect.map(
    Effect.forkDaemon(Effect.zipRight(Effect.sleep(timeout), onLate)),
    (timer) => Fiber.interruptFork(timer)
  )

/**
 * A shared watch for the attempts of one worker, alive while `scope` is open. Its fiber sleeps
 * until the earliest attempt's time is up, at most `maxStep` at a time, and only while attempts
 * are watched. An attempt that begins while a step is being slept counts from the end of that
 * step, so it may end up to `maxStep` late, never early.
 */
export const makeWatchdog = (
  maxStep: Duration.Duration = Duration.millis(250)
): Effect.Effect<Watch, never, Scope.Scope> =>
  Effect.gen(function*() {
    interface Entry {
      readonly ms: number
      /** The watcher's slept total when this attempt's time began. */
      readonly from: number
      readonly onLate: Effect.Effect<void>
    }
    const stepMs = Duration.toMillis(maxStep)
    const entries = new Set<Entry>()
    let slept = 0
    // The step being slept now (0: none): an attempt that begins during it starts counting after it.
    let sleeping = 0
    // The loop's resume while it waits for work (nothing watched); a plain callback, so that
    // watching an attempt is one step (a Queue's offer is several).
    let parked: ((wake: Effect.Effect<void>) => void) | undefined
    const park = Effect.async<void>((resume) => {
      if (entries.size > 0) resume(Effect.void)
      else parked = resume
    })

    const loop = Effect.gen(function*() {
      while (true) {
        if (entries.size === 0) {
          yield* park
          continue
        }
        let step = stepMs
        for (const e of entries) step = Math.min(step, e.ms - (slept - e.from))
        sleeping = Math.max(1, step)
        yield* Effect.sleep(Duration.millis(sleeping))
        slept += sleeping
        sleeping = 0
        for (const e of entries) {
          if (slept - e.from >= e.ms) {
            entries.delete(e)
            yield* e.onLate
          }
        }
      }
    })
    yield* Effect.forkScoped(loop)

    return (timeout, onLate) =>
      Effect.sync(() => {
        const entry: Entry = { ms: Duration.toMillis(timeout), from: slept + sleeping, onLate }
        entries.add(entry)
        // The watcher waits for work only when nothing is watched.
        const resume = parked
        parked = undefined
        resume?.(Effect.void)
        return Effect.sync(() => {
          entries.delete(entry)
        })
      })
  })
