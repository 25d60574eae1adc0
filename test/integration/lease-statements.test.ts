/**
 * What a lease acquisition costs in statements on each SQL database (src/adapters/sql/LeaseLock.ts,
 * the dialects' `acquire` strategies), counted at the connection by the benchmark's counting
 * client (bench/lib/sql.ts), BEGIN and COMMIT included: PostgreSQL one statement; MySQL/MariaDB
 * one multi-statement query (its transaction inside it); SQLite a bump and an upsert, no
 * transaction. A busy lease: SQLite reads the holder once more; PostgreSQL's statement and
 * MySQL/MariaDB's query already returned it. The tokens are checked too: fresh, busy, already ours, after release.
 * And MySQL/MariaDB's one-query acquisition, failing midway, leaves nothing behind.
 */
import { SqlClient } from "@effect/sql"
import { expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { sqlLayer, StatementCount } from "../../bench/lib/sql.ts"
import { tokensTable } from "../../src/core/tables.ts"
import * as LeaseLock from "../../src/adapters/sql/LeaseLock.ts"
import { overCountingClient } from "../support/counting.ts"
import { MYSQL_URL, PG_URL, uniquePrefix } from "../support/urls.ts"

const dir = mkdtempSync(join(tmpdir(), "leasehold-lease-statements-"))
const T0 = 1_791_039_632_175
const targets = [
  { name: "postgres", url: PG_URL, fresh: 1, busy: 1 },
  { name: "mysql", url: MYSQL_URL, fresh: 1, busy: 1 },
  { name: "sqlite", url: join(dir, "leases.db"), fresh: 2, busy: 2 }
] as const

/** A LeaseLock over a lock table of its own (created), with the client to drop it afterwards. */
const freshLock = (label: string) =>
  Effect.gen(function*() {
    const table = `${uniquePrefix(label)}_locks`
    const sql = yield* SqlClient.SqlClient
    const lock = yield* LeaseLock.make({ table })
    yield* lock.ensureTable
    return { lock, sql, table }
  })

for (const { name, url, fresh, busy } of targets) {
  it.live(
    `a lease acquisition on ${name}: ${fresh} statement(s) when it takes the lease, ${busy} when it is busy`,
    () =>
      Effect.gen(function*() {
        const { lock, sql, table } = yield* freshLock("ls")
        const counter = yield* StatementCount
        const counted = <A, E>(effect: Effect.Effect<A, E>) =>
          Effect.gen(function*() {
            counter.reset()
            const result = yield* effect
            return { result, statements: counter.get() }
          })
        const acquire = (owner: string, now: number) =>
          counted(lock.tryAcquireToken({ name: "n", owner, now, expiresAt: now + 1000 }))

        const a = yield* acquire("a", T0)
        const b = yield* acquire("b", T0 + 1)
        const again = yield* acquire("a", T0 + 2)
        yield* lock.release({ name: "n", owner: "a" })
        const c = yield* acquire("c", T0 + 3)
        const takeOver = yield* acquire("d", T0 + 5000)
        for (const t of [table, tokensTable(table)]) yield* sql.unsafe(`DROP TABLE IF EXISTS ${t}`)

        expect(a).toEqual({ result: Option.some(1n), statements: fresh })
        expect(b).toEqual({ result: Option.none(), statements: busy })
        expect(again.result).toEqual(Option.some(1n))
        expect(c).toEqual({ result: Option.some(2n), statements: fresh })
        expect(takeOver).toEqual({ result: Option.some(3n), statements: fresh })
      }).pipe(overCountingClient(url)),
    {
      timeout: 60_000
    }
  )
}

it("cleans up", () => rmSync(dir, { recursive: true, force: true }))

// The packed acquisition's failure path (src/adapters/sql/transaction.ts packedTransaction): a
// statement failing midway (here the counter table is gone) rolls back what the ones before it
// wrote, and the connection goes back to the pool outside any transaction (a pool of one, so the
// next statement runs on it).
it.live(
  "mysql: a packed acquisition failing midway leaves no lease row and no open transaction",
  () =>
    Effect.gen(function*() {
      const { lock, sql, table } = yield* freshLock("lf")
      yield* sql.unsafe(`DROP TABLE ${tokensTable(table)}`)
      const failed = yield* Effect.either(
        lock.tryAcquireToken({ name: "n", owner: "a", now: T0, expiresAt: T0 + 1000 })
      )
      const [open] = yield* sql.unsafe<{ open: unknown }>("SELECT @@in_transaction AS open")
      const left = yield* lock.read("n")
      yield* sql.unsafe(`DROP TABLE IF EXISTS ${table}`)
      expect(failed._tag).toBe("Left")
      expect(Number(open?.open)).toBe(0)
      expect(left).toEqual(Option.none())
    }).pipe(
      Effect.scoped,
      Effect.provide(sqlLayer(MYSQL_URL, 1)),
      Effect.orDie
    ),
  { timeout: 60_000 }
)
