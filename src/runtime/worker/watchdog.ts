/**
 * Attempt timeouts (docs/behaviour.md §6): one timer fiber per attempt, which sleeps the
 * attempt's timeout and then runs its `onLate`, unless cancelled first. Cheaper than the
 * `Effect.disconnect` + `timeoutFail` pair it replaced (a fork, a race of two more fibers and a
 * timer per attempt; issue 13's profile).
 *
 * A timeout is a duration slept, not a deadline read off the Clock: a Clock that jumps (or, in
 * the chaos run, reads faster than time passes: scripts/chaos/clock.ts) must not end running
 * attempts early. A shared watcher that compared deadlines on the Clock did, and the chaos run
 * caught it. Under `TestClock` the sleep follows the test's clock, like every timing rule.
 */
import { Duration, Effect, Fiber } from "effect"

/** Runs `onLate` once `timeout` has passed; the returned effect cancels it (a no-op once it ran). */
export const watch = (timeout: Duration.Duration, onLate: Effect.Effect<void>): Effect.Effect<Effect.Effect<void>> =>
  Effect.map(
    Effect.forkDaemon(Effect.zipRight(Effect.sleep(timeout), onLate)),
    (timer) => Fiber.interruptFork(timer)
  )
