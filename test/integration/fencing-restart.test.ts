/**
 * Fencing tokens are never reused across a restart (docs/behaviour.md §2, "Fencing tokens"), on
 * PostgreSQL and MariaDB. The servers are shared and are not restarted: what a restart leaves
 * behind — a new process with a new pool, and lease rows gone (released, or cleared by
 * `leasehold leases clear`) — is what each step recreates: every step opens a pool of its own
 * and closes it, and the lease rows are deleted directly between steps.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { MysqlClient } from "@effect/sql-mysql2"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted } from "effect"
import * as Fences from "../../src/Fences.ts"
import * as LeaseLock from "../../src/LeaseLock.ts"
import { MYSQL_URL, PG_URL, uniquePrefix } from "../support/urls.ts"

const T0 = 1_791_039_632_175

const databases = [
  {
    name: "PostgreSQL",
    client: () => PgClient.layer({ url: Redacted.make(PG_URL), onnotice: () => {} } as any),
    quote: (t: string) => `"${t}"`
  },
  {
    name: "MariaDB",
    client: () => MysqlClient.layer({ url: Redacted.make(MYSQL_URL) }),
    quote: (t: string) => `\`${t}\``
  }
] as const

describe.each(databases)("fencing tokens across restarts on $name", ({ client, quote }) => {
  it.live("a new pool after the lease rows were deleted continues the count; a fence keeps refusing old tokens", () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("fr")
      const table = `${prefix}locks`
      const fencesTable = `${prefix}fences`
      // Each "process" is a pool of its own, opened and closed here.
      const process = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
        Effect.provide(effect, Layer.orDie(client() as Layer.Layer<SqlClient.SqlClient, unknown>))
      const acquire = (owner: string, now: number) =>
        process(Effect.gen(function*() {
          const lock = yield* LeaseLock.make({ table })
          yield* lock.ensureTable
          return Option.getOrThrow(yield* lock.tryAcquireToken({ name: "nightly", owner, now, ttlMs: 1000 }))
        }))
      const deleteLeases = process(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`DELETE FROM ${quote(table)}`))
      )

      const result = yield* Effect.gen(function*() {
        const first = yield* acquire("before-restart", T0)
        yield* deleteLeases
        const second = yield* acquire("after-restart", T0 + 10)
        yield* deleteLeases
        const third = yield* acquire("after-second-restart", T0 + 20)
        // a fence written before a "restart" still refuses a lower token after it
        yield* process(Effect.gen(function*() {
          const fences = yield* Fences.make({ table: fencesTable })
          yield* fences.ensureTable
          yield* fences.guard({ resource: "report", token: third }, Effect.void)
        }))
        const stale = yield* process(Effect.gen(function*() {
          const fences = yield* Fences.make({ table: fencesTable })
          return yield* Effect.flip(fences.guard({ resource: "report", token: second }, Effect.void))
        }))
        return { first, second, third, stale }
      }).pipe(
        Effect.ensuring(
          process(Effect.flatMap(SqlClient.SqlClient, (sql) =>
            Effect.forEach(
              [table, `${table}_tokens`, fencesTable],
              (t) => sql.unsafe(`DROP TABLE IF EXISTS ${quote(t)}`),
              { discard: true }
            ))).pipe(Effect.orDie)
        )
      )
      expect(result.second > result.first).toBe(true)
      expect(result.third > result.second).toBe(true)
      expect(result.stale).toMatchObject({ _tag: "StaleTokenError", token: result.second, highest: result.third })
    }))
})
