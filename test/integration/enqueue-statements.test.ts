/**
 * `enqueueMany` sends one INSERT per chunk of 1,000 jobs on every SQL database, inside one
 * transaction of its own (src/adapters/sql/JobStore.ts insertMany): 2,500 jobs without unique
 * keys are BEGIN, three INSERTs and COMMIT. Counted at the connection by the benchmark's
 * counting client (bench/lib/sql.ts).
 */
import { SqlClient } from "@effect/sql"
import { expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { StatementCount } from "../../bench/lib/sql.ts"
import * as JobStoreModule from "../../src/adapters/sql/JobStore.ts"
import { tableNames } from "../../src/core/tables.ts"
import { define, enqueueMany } from "../../src/runtime/Job.ts"
import * as Migrator from "../../src/runtime/migrate.ts"
import { overCountingClient } from "../support/counting.ts"
import { MYSQL_URL, PG_URL, uniquePrefix } from "../support/urls.ts"

const Noop = define({ name: "noop", schema: Schema.Struct({ i: Schema.Number }), perform: () => Effect.void })
const dir = mkdtempSync(join(tmpdir(), "leasehold-enqueue-"))
const targets = { postgres: PG_URL, mysql: MYSQL_URL, sqlite: join(dir, "enqueue.db") }

for (const [name, url] of Object.entries(targets)) {
  it.live(`enqueueMany on ${name}: 2,500 jobs are BEGIN, 3 INSERTs and COMMIT`, () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("em")
      const t = tableNames(prefix)
      const sql = yield* SqlClient.SqlClient
      yield* (yield* Migrator.make({ prefix })).run
      const counter = yield* StatementCount
      const payloads = Array.from({ length: 2_500 }, (_, i) => ({ i }))
      counter.reset()
      const result = yield* Effect.provide(enqueueMany(Noop, payloads), JobStoreModule.layer({ prefix }))
      // Its wake-up notification follows the commit from a fiber of its own: not counted.
      const statements = counter.get() - counter.notifications()
      const [count] = yield* sql.unsafe<{ n: unknown }>(`SELECT COUNT(*) AS n FROM ${t.jobs}`)
      for (const table of [t.jobs, t.hosts, t.jobLocks, t.migrations, t.migrationLocks]) {
        yield* sql.unsafe(`DROP TABLE IF EXISTS ${table}`)
      }
      expect(result.inserted).toBe(2_500)
      expect(Number(count?.n)).toBe(2_500)
      expect(statements).toBe(5)
    }).pipe(overCountingClient(url)), {
    timeout: 60_000
  })
}

it("cleans up", () => rmSync(dir, { recursive: true, force: true }))
