/**
 * Wake-up notifications (PostgreSQL NOTIFY, src/ports/Wakeups.ts) sent after the write that made a
 * job due, as a statement of their own, at most one at a time per store.
 *
 * Why not in the write itself: PostgreSQL serialises the commits of every transaction that
 * notified, database-wide, under one lock held until the commit is on disk. An enqueue that
 * notified in its own statement therefore waited in line with every other notifying commit (any
 * other application's on the server too), holding its pool connection all the while; under a
 * steady stream beside another busy notifier, that line held every connection of the pool and
 * the worker in the same process could not claim (docs/behaviour.md §16). A notification sent
 * after the commit wakes the same workers, and while one is in flight the writes that follow
 * share the next: at most one notifying commit per store at a time, whatever the rate.
 *
 * A notification is a hint: one that fails (the database went away) or takes longer than
 * `NOTIFY_TIMEOUT` (a connection that hangs) is logged at DEBUG and the workers it would have
 * woken find the job at their next poll. So is one asked for as the process stops, which may
 * never be sent.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Cause, Clock, Duration, Effect } from "effect"
import { ORIGIN } from "../localWakeups.ts"

/** How long a notification may take before the next one is sent instead. */
export const NOTIFY_TIMEOUT = Duration.seconds(10)

// Real time whatever Clock the caller has: a notification's wait is the database's, not the app's.
const liveClock = Clock.make()

/** How a store asks for wake-up notifications. */
export interface WakeupSignal {
  /**
   * After a write outside any transaction committed: asks for a notification and returns at once.
   * The write's process has rung its own workers (src/adapters/localWakeups.ts), so the
   * notification carries this process's mark and its own listener skips it.
   */
  readonly afterCommit: Effect.Effect<void>
  /** Inside the caller's transaction: notifies in it, so the notification goes out when it commits. */
  readonly inTransaction: Effect.Effect<void, SqlError>
}

/** A signal sending `notify(payload)` for each notification. */
export const makeWakeupSignal = (notify: (payload: string) => Effect.Effect<unknown, SqlError>): WakeupSignal => {
  let sending = false
  let again = false
  // Sends until no write asked again while the last notification was in flight; the last look
  // and the end of `sending` are one step, so no request falls between them.
  const sendAll = Effect.gen(function*() {
    while (true) {
      again = false
      const sent = Effect.timeoutFail(notify(ORIGIN), {
        duration: NOTIFY_TIMEOUT,
        onTimeout: () => new Error(`no answer within ${Duration.format(NOTIFY_TIMEOUT)}`)
      }).pipe(Effect.withClock(liveClock))
      yield* Effect.catchAllCause(sent, (cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.failCause(cause)
          : Effect.logDebug("wake-up notification not sent; idle workers elsewhere look at their next poll", cause))
      if (!again) {
        sending = false
        return
      }
    }
  }).pipe(Effect.onInterrupt(() => Effect.sync(() => (sending = false))))
  return {
    afterCommit: Effect.suspend(() => {
      if (sending) {
        again = true
        return Effect.void
      }
      sending = true
      // A fiber of its own: the write that asked does not wait for the notification.
      return Effect.asVoid(Effect.forkDaemon(sendAll))
    }),
    // Unmarked: it also wakes this process's workers when the transaction commits.
    inTransaction: Effect.asVoid(notify(""))
  }
}
