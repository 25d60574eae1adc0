/**
 * Wake-ups over PostgreSQL LISTEN/NOTIFY (the src/ports/Wakeups.ts port). An enqueue (and a
 * release with a waiting hand-off) sends `SELECT pg_notify(channel, queue)` inside its own
 * transaction; an idle worker listening on the channel claims at once instead of waiting for its
 * next poll. Polling stays the fallback, and a dropped LISTEN connection is opened again with
 * backoff.
 */
import type { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Option, Redacted, Schedule, Stream } from "effect"
import type { WakeupsApi } from "../../ports/Wakeups.ts"
import { isOwnRing } from "../localWakeups.ts"

/** How to reach PostgreSQL for the listening connection. */
export interface ListenConfig {
  readonly connectionString?: string | undefined
  readonly host?: string | undefined
  readonly port?: number | undefined
  readonly user?: string | undefined
  readonly password?: string | undefined
  readonly database?: string | undefined
  /** TLS settings, as node-postgres takes them (the app's PgClient `ssl`). */
  readonly ssl?: PgClient.PgClientConfig["ssl"]
}

/** The listening connection's application_name (shown in pg_stat_activity). */
export const listenerName = (channel: string): string => `leasehold-listener:${channel}`.slice(0, 63)

/**
 * A stream of notification payloads on `channel`, on a dedicated connection. It fails when the
 * connection drops; `listenForever` reconnects. With `signal`, each notification (and each
 * start of listening) calls it instead, from node-postgres's own callback, and the stream
 * carries nothing but the connection's failure.
 */
export const listen = (config: ListenConfig, channel: string, signal?: () => void): Stream.Stream<string, Error> =>
  Stream.asyncScoped<string, Error>((emit) =>
    Effect.gen(function*() {
      // Loaded here, not at import: an app on another database need not have node-postgres.
      const { default: pg } = yield* Effect.promise(() => import("pg"))
      const client = new pg.Client({ ...config, application_name: listenerName(channel) })
      yield* Effect.addFinalizer(() => Effect.promise(() => client.end().catch(() => undefined)))
      client.on("error", (e) => void emit.fail(e))
      client.on("end", () => void emit.fail(new Error("LISTEN connection ended")))
      client.on("notification", (msg) => {
        // This process's own enqueue, already rung here (src/adapters/localWakeups.ts).
        if (msg.channel !== channel || isOwnRing(msg.payload)) return
        if (signal === undefined) void emit.single(msg.payload ?? "")
        else signal()
      })
      yield* Effect.tryPromise({ try: () => client.connect(), catch: (e) => e as Error })
      yield* Effect.tryPromise({
        try: () => client.query(`LISTEN ${client.escapeIdentifier(channel)}`),
        catch: (e) => e as Error
      })
      // Tells the consumer the listener is (again) in place, so it can check for missed work.
      if (signal === undefined) yield* Effect.promise(() => emit.single(""))
      else signal()
    })
  )

/** `listen`, re-established with exponential backoff (capped at 30 s) whenever it drops. */
export const listenForever = (config: ListenConfig, channel: string, signal?: () => void): Stream.Stream<string> =>
  listen(config, channel, signal).pipe(
    Stream.tapError((e) => Effect.logWarning(`LISTEN ${channel} dropped; reconnecting`, e)),
    Stream.retry(
      Schedule.exponential(Duration.millis(200)).pipe(Schedule.union(Schedule.spaced(Duration.seconds(30))))
    ),
    Stream.orDie
  )

/** The listening connection's settings, taken from the app's `PgClient` configuration. */
export const listenConfig = (c: PgClient.PgClientConfig): ListenConfig => ({
  connectionString: c.url === undefined ? undefined : Redacted.value(c.url),
  host: c.host,
  port: c.port,
  user: c.username,
  password: c.password === undefined ? undefined : Redacted.value(c.password),
  database: c.database,
  ssl: c.ssl
})

/** LISTEN/NOTIFY wake-ups on the database a `PgClient` with this configuration reaches. */
export const make = (config: PgClient.PgClientConfig): WakeupsApi => ({
  listen: (channel) => Option.some(Stream.map(listenForever(listenConfig(config), channel), () => undefined)),
  onSignal: (channel, signal) => Option.some(Stream.runDrain(listenForever(listenConfig(config), channel, signal)))
})
