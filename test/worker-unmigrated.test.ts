/**
 * A worker started on a database nobody migrated says why it starts nothing: the driver's own
 * words (SQLite's "no such table") and a hint to run the migrations, not a bare "unreadable"
 * with the cause buried in a stack trace.
 */
import { Effect, Logger, Ref } from "effect"
import { expect, it } from "vitest"
import * as Worker from "../src/runtime/Worker.ts"
import * as Sqlite from "../src/sqlite.ts"

it("names the missing table and the migrations", async () => {
  const lines = await Effect.runPromise(Effect.gen(function*() {
    const seen = yield* Ref.make<ReadonlyArray<string>>([])
    const logger = Logger.make(({ message }) => {
      const text = (Array.isArray(message) ? message : [message]).map(String)[0] ?? ""
      Effect.runSync(Ref.update(seen, (s) => [...s, text]))
    })
    yield* Effect.scoped(Effect.gen(function*() {
      yield* Worker.make({ concurrency: 1, pollInterval: "20 millis", reapInterval: "1 hour" })
      yield* Effect.sleep("300 millis")
    })).pipe(
      Effect.provide(Sqlite.layer({ filename: ":memory:", jobs: [] })),
      Effect.provide(Logger.replace(Logger.defaultLogger, logger))
    )
    return yield* Ref.get(seen)
  }))
  const warning = lines.find((l) => l.startsWith("hosts table unreadable"))
  expect(warning).toMatch(/\(no such table: leasehold_hosts\).*migrations/)
})
