/**
 * Alarms for jobs this worker deferred (a busy lease, a rate limit: ./takeLease.ts,
 * ./rateLimit.ts): each deferral knows when its job is due again, so the worker rings its own
 * doorbell then instead of finding the job at its next poll. On PostgreSQL, where idle workers
 * wait for notifications and polls, a rate-limited key would otherwise waste up to a poll
 * interval of its limit at every slot.
 */
import { Duration, Effect, type Scope } from "effect"

/** The most future instants kept; past it the latest are dropped (their jobs come at a poll). */
const MAX_ALARMS = 10_000

/** A worker's alarms. */
export interface Alarms {
  /** Rings the doorbell at epoch ms `at` (at once when past). */
  readonly at: (at: number) => void
}

/** Alarms that call `ring` at each instant asked for, timed on the Clock by one fiber in `scope`. */
export const makeAlarms = (ring: () => void): Effect.Effect<Alarms, never, Scope.Scope> =>
  Effect.gen(function*() {
    const clock = yield* Effect.clock
    // Instants asked for, ascending, each once.
    const times: Array<number> = []
    // The fiber's resume while it waits: for an instant (`until`), or for any (undefined).
    let waiting: { readonly until: number | undefined; readonly resume: () => void } | undefined
    const at = (time: number) => {
      let i = times.length
      while (i > 0 && times[i - 1]! > time) i--
      if (times[i - 1] === time) return
      times.splice(i, 0, time)
      if (times.length > MAX_ALARMS) times.pop()
      // Waiting for nothing or for a later instant: wake to time this one.
      if (waiting !== undefined && (waiting.until === undefined || time < waiting.until)) {
        const { resume } = waiting
        waiting = undefined
        resume()
      }
    }
    const wait = (until: number | undefined, sleep: Effect.Effect<void>) =>
      Effect.raceFirst(
        sleep,
        Effect.async<void>((resume) => {
          waiting = { until, resume: () => resume(Effect.void) }
          return Effect.sync(() => {
            waiting = undefined
          })
        })
      )
    yield* Effect.forkScoped(Effect.gen(function*() {
      while (true) {
        const now = clock.unsafeCurrentTimeMillis()
        let due = false
        while (times.length > 0 && times[0]! <= now) {
          times.shift()
          due = true
        }
        if (due) ring()
        const next = times[0]
        yield* next === undefined
          ? wait(undefined, Effect.never)
          : wait(next, Effect.sleep(Duration.millis(next - now)))
      }
    }))
    return { at }
  })
