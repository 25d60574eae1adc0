/**
 * A worker started on a database whose leasehold schema is missing or older than the code says
 * why it starts nothing: the driver's own words (SQLite's "no such table" / "no such column")
 * and a hint to run the migrations, not a bare "unreadable" with the cause buried in a trace;
 * and each of its loops that fails says so in one line, not a dump of the cause.
 */
import { Effect, Logger, Ref } from "effect"
import { expect, it } from "vitest"
import { MIGRATE_HINT } from "../../src/adapters/schemaErrors.ts"
import { createJobTables } from "../../src/adapters/sql/schema.ts"
import * as Migrator from "../../src/runtime/migrate.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import * as Sqlite from "../../src/sqlite.ts"

/** Every WARN message (its parts) a worker writes in 300 ms, after `before` ran. */
let warnings: Array<ReadonlyArray<unknown>> = []

/** The first line of every log message a worker writes in 300 ms, after `before` ran. */
const workerLog = <E>(before: Effect.Effect<unknown, E, Migrator.Migrator>) =>
  Effect.runPromise(Effect.gen(function*() {
    const seen = yield* Ref.make<ReadonlyArray<string>>([])
    warnings = []
    const logger = Logger.make(({ logLevel, message }) => {
      const parts = Array.isArray(message) ? message : [message]
      if (logLevel._tag === "Warning") warnings.push(parts)
      const text = parts.map(String)[0] ?? ""
      Effect.runSync(Ref.update(seen, (s) => [...s, text]))
    })
    yield* Effect.scoped(Effect.gen(function*() {
      yield* before
      yield* Worker.make({ concurrency: 1, pollInterval: "20 millis", reapInterval: "1 hour" })
      yield* Effect.sleep("300 millis")
    })).pipe(
      Effect.provide(Migrator.layer({ migrations: [createJobTables] })),
      Effect.provide(Sqlite.layer({ filename: ":memory:", jobs: [] })),
      Effect.provide(Logger.replace(Logger.defaultLogger, logger))
    )
    return yield* Ref.get(seen)
  }))

const HINT = MIGRATE_HINT

/** Each warning is one line of text, the cause left to DEBUG. */
const expectOneLineWarnings = () => {
  expect(warnings.length).toBeGreaterThan(0)
  for (const parts of warnings) {
    expect(parts).toHaveLength(1)
    expect(String(parts[0])).not.toContain("\n")
  }
}

it("no tables at all: names the missing table and the migrations", async () => {
  const lines = await workerLog(Effect.void)
  const warning = lines.find((l) => l.startsWith("hosts table unreadable"))
  expect(warning).toContain(`(no such table: leasehold_hosts: ${HINT}`)
  expectOneLineWarnings()
})

it("tables from an older migration: names the missing column and the migrations", async () => {
  const lines = await workerLog(Effect.flatMap(Migrator.Migrator, (m) => m.run))
  const warning = lines.find((l) => l.startsWith("claim failed"))
  expect(warning).toMatch(/no such column: (grace_ms|stale_at)/)
  expect(warning).toContain(HINT)
  expectOneLineWarnings()
})
