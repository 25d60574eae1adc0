/**
 * SQLite passes a lease on without a transaction, as it acquires one (src/adapters/sql/JobStore.ts
 * `transferLease`, the `bumpThenUpsert` lease dialect): it bumps the name's token counter, then
 * moves the lease only while the counter still holds the token it bumped. An acquisition that
 * bumped in between (it found the lease expired) wins; the move does not happen, and its bump is a
 * token nobody holds. No run of the store reaches that interleaving, so the move's guard is
 * checked here on its own statement.
 */
import { SqlClient } from "@effect/sql"
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { sqlite } from "../../src/adapters/sqlite/dialect.ts"
import { jobStatements } from "../../src/adapters/sql/jobStatements.ts"
import { tokensTable } from "../../src/core/tables.ts"
import { JobStore } from "../../src/JobStore.ts"
import { TestLeasehold } from "../../src/testing.ts"

it.effect("SQLite: a lease is passed on only while its token counter holds the token bumped for it", () =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const tables = (yield* JobStore).tables
    const s = jobStatements(sqlite, tables)
    yield* sql.unsafe(
      `INSERT INTO "${tables.jobLocks}" (lockname, lockowner, lockhost, acquiredat, expiresat) VALUES ('k', 'a', 'h', 1, 9000)`
    )
    yield* sql.unsafe(`INSERT INTO "${tokensTable(tables.jobLocks)}" (lockname, token) VALUES ('k', 7)`)
    const owner = Effect.map(
      sql.unsafe<{ lockowner: string }>(`SELECT lockowner FROM "${tables.jobLocks}" WHERE lockname = 'k'`),
      (rows) => rows[0]?.lockowner
    )
    const move = (holds: bigint, to = "b") => {
      const st = s.transferLease("k", "a", 2, { owner: to, host: "h", expiresAt: 9000 }, "x", holds)
      return sql.unsafe(st.sql, st.params as Array<unknown>)
    }
    // The counter moved on past the bumped token (another acquisition bumped it): no move.
    yield* move(6n)
    expect(yield* owner).toBe("a")
    // It holds the bumped token: the lease moves to the new owner.
    yield* move(7n)
    expect(yield* owner).toBe("b")
    // And only from its owner ("a" no longer is).
    yield* move(7n, "c")
    expect(yield* owner).toBe("b")
  }).pipe(Effect.provide(TestLeasehold.sqliteLayer({ jobs: [] }))))
