/**
 * A worker beside a flood of enqueues from its own process, on every database (docs/behaviour.md
 * §16): the app asks for 5,000 enqueues at once, far more than the pool serves at a time, and the
 * worker sharing that pool keeps claiming and starting jobs while they wait. Its statements wait
 * behind at most the enqueues' share of the pool (src/core/connections.ts), never behind every
 * enqueue asked for.
 *
 * Measured by order, not by time: how many enqueues had returned when the worker started its
 * 100th job. A worker whose claims waited in line behind the flood started nothing until every
 * enqueue had returned (5,000 of 5,000 on each database before the lane).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Logger, LogLevel, Schema, Scope } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Mysql from "../../src/mysql.ts"
import * as Postgres from "../../src/postgres.ts"
import * as Sqlite from "../../src/sqlite.ts"
import { define, enqueue } from "../../src/runtime/Job.ts"
import * as Migrator from "../../src/runtime/migrate.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { ENQUEUES_TOGETHER } from "../../src/adapters/sql/JobStore.ts"
import { dropPrefixed } from "../support/databases.ts"
import { MYSQL_URL, PG_URL, uniquePrefix } from "../support/urls.ts"

const FLOOD = 5_000
const FIRST = 100
const STILL_WAITING = 2 * ENQUEUES_TOGETHER

/** What the flood's jobs record as they start. */
const progress = { enqueued: 0, started: 0, enqueuedAtFirst: -1 }

const Mark = define({
  name: "flood-mark",
  schema: Schema.Struct({ i: Schema.Number }),
  perform: () =>
    Effect.sync(() => {
      progress.started++
      if (progress.started === FIRST) progress.enqueuedAtFirst = progress.enqueued
    })
})

/** The flood and the worker, over leasehold's services for one database (`services`). */
const flood = (services: Layer.Layer<any, unknown>, prefix: string) =>
  Effect.gen(function*() {
    progress.enqueued = 0
    progress.started = 0
    progress.enqueuedAtFirst = -1
    yield* (yield* Migrator.make({ prefix })).run
    const scope = yield* Scope.make()
    yield* Layer.buildWithScope(Worker.layer({ host: "flood", concurrency: 10, pollInterval: "100 millis" }), scope)
    yield* Effect.forEach(
      Array.from({ length: FLOOD }, (_, i) => i),
      (i) => Effect.tap(enqueue(Mark, { i }), () => Effect.sync(() => progress.enqueued++)),
      { concurrency: "unbounded", discard: true }
    )
    // Every job runs in the end.
    while (progress.started < FLOOD) yield* Effect.sleep("20 millis")
    yield* Scope.close(scope, Exit.void)
    return { ...progress }
  }).pipe(
    Effect.ensuring(Effect.orDie(dropPrefixed(prefix))),
    Effect.provide(services),
    Logger.withMinimumLogLevel(LogLevel.Warning)
  ) as Effect.Effect<typeof progress, unknown>

/**
 * The worker started its first jobs while at least two of the lane's statements' worth of
 * enqueues (src/adapters/sql/JobStore.ts ENQUEUES_TOGETHER) had not been answered. A worker whose
 * claims wait behind the flood sees every enqueue answered first.
 */
const expectWorkerAhead = (seen: typeof progress) => {
  expect(seen.started).toBe(FLOOD)
  expect(seen.enqueuedAtFirst).toBeGreaterThanOrEqual(FIRST)
  expect(seen.enqueuedAtFirst).toBeLessThanOrEqual(FLOOD - STILL_WAITING)
}

const dir = mkdtempSync(join(tmpdir(), "leasehold-flood-"))

/** Each database's services on a small pool (SQLite: its one connection), tables under `prefix`. */
const databases = {
  postgres: (prefix: string) => Postgres.layer({ url: PG_URL, prefix, jobs: [Mark], maxConnections: 4 }),
  mysql: (prefix: string) => Mysql.layer({ url: MYSQL_URL, prefix, jobs: [Mark], maxConnections: 4 }),
  sqlite: (prefix: string) => Sqlite.layer({ filename: join(dir, "flood.db"), prefix, jobs: [Mark] })
}

describe("a worker beside a flood of enqueues from its own process", () => {
  for (const [name, services] of Object.entries(databases)) {
    it.live(`${name}: the worker starts 100 jobs while 200 of 5,000 enqueues still wait`, () => {
      const prefix = uniquePrefix("flood")
      return Effect.map(flood(services(prefix), prefix), expectWorkerAhead)
    }, 120_000)
  }

  it("cleans up", () => rmSync(dir, { recursive: true, force: true }))
})
