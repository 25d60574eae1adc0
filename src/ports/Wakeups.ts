/**
 * The wake-ups port: signals that a job may have come due, so an idle worker claims at once
 * instead of waiting out its poll interval. Polling stays the fallback, so a database that sends
 * no signals (or a lost signal) only costs latency, never a job. The PostgreSQL implementation
 * (LISTEN/NOTIFY) is src/adapters/postgres/wakeups.ts; src/adapters/wakeups.ts picks one for the
 * current SqlClient.
 */
import { Context, type Effect, Option, type Stream } from "effect"

/** Where wake-up signals come from. */
export interface WakeupsApi {
  /**
   * A stream of wake-up signals for `channel`, or none when this database sends none. The
   * stream signals once more each time it starts (or starts again) listening, so the consumer
   * can look for work it missed meanwhile; it never fails (a dropped listener reconnects by
   * itself) and stops listening when the consumer stops.
   */
  readonly listen: (channel: string) => Option.Option<Stream.Stream<void>>
  /**
   * Optional: the same signals for a consumer that only needs to be told, as `signal()` called
   * straight from the driver's callback (no stream and no fiber between the database and the
   * call, which a stream would add to every wake-up's path). The effect listens
   * until it is interrupted, under the same rules as `listen`. A worker uses it when present.
   */
  readonly onSignal?: (channel: string, signal: () => void) => Option.Option<Effect.Effect<void>>
}

/** The wake-ups service. A worker with none in its context picks them by its SqlClient. */
export class Wakeups extends Context.Tag("leasehold/Wakeups")<Wakeups, WakeupsApi>() {}

/** No wake-ups: workers poll (SQLite, MySQL/MariaDB, the in-memory store). */
export const none: WakeupsApi = { listen: () => Option.none() }
