/**
 * Helpers shared by the outage tests (test/outage*.test.ts) and other suites that work on the
 * real servers: URL parts for a client pointed at the loopback proxy, a scope that cannot hang
 * a test, and a clean-up that drops every table under a prefix.
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Exit, Option, Redacted, Scope } from "effect"

/** The parts of a database URL a client needs, with the password redacted. */
export const parseUrl = (url: string) => {
  const u = new URL(url)
  return {
    host: u.hostname,
    port: Number(u.port),
    username: decodeURIComponent(u.username),
    password: u.password === "" ? undefined : Redacted.make(decodeURIComponent(u.password)),
    database: u.pathname.replace(/^\//, "")
  }
}

/** Connection settings for a client that reaches the server of `url` through the proxy on `port`. */
export const throughProxy = (url: string, port: number) => {
  const { database, password, username } = parseUrl(url)
  return { host: "127.0.0.1", port, username, password, database }
}

/**
 * Runs `body` in a scope of its own and closes it, waiting at most 10 s for the closing: a
 * finalizer stuck on a dead connection then fails the test instead of hanging it, and the
 * body's own failure, if any, is the one reported.
 */
export const scopedBounded = <A, E, R>(
  body: Effect.Effect<A, E, R | Scope.Scope>
): Effect.Effect<A, E | string, Exclude<R, Scope.Scope>> =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const exit = yield* Effect.exit(Scope.extend(body, scope))
    const closed = yield* Scope.close(scope, exit).pipe(Effect.disconnect, Effect.timeoutOption("10 seconds"))
    if (Exit.isSuccess(exit) && Option.isNone(closed)) {
      return yield* Effect.fail("closing the clients and the proxy hung")
    }
    return yield* exit
  })

/** Drops every table under `prefix` (names are lowercase [a-z0-9_], so they need no quoting). */
export const dropPrefixed = (sql: SqlClient.SqlClient, prefix: string) =>
  Effect.gen(function*() {
    const like = `${prefix}%`
    const names = yield* sql.onDialectOrElse({
      pg: () =>
        sql<
          { n: string }
        >`SELECT table_name AS n FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE ${like}`,
      mysql: () =>
        sql<
          { n: string }
        >`SELECT table_name AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE ${like}`,
      orElse: () => sql<{ n: string }>`SELECT name AS n FROM sqlite_master WHERE type = 'table' AND name LIKE ${like}`
    })
    for (const { n } of names) if (n.startsWith(prefix)) yield* sql.unsafe(`DROP TABLE IF EXISTS ${n}`)
  }).pipe(Effect.orDie)
