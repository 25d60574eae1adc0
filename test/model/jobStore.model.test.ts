/**
 * Model-based property test of the JobStore (src/ports/JobStore.ts; docs/behaviour.md §4–§8).
 *
 * fast-check generates random sequences of JobStore operations: insert (with duplicate unique
 * keys), claim (several hosts, queue filters, a timeout cap and a host cap), finish with each
 * outcome (Complete, Retry, Kill) with and without a lease (the lease taken first through the
 * JobLeases LeaseLock with the claim token as owner, so release and hand-off run; or passed to
 * another attempt's token instead of released, `transferTo`), lease
 * take-overs by other owners (so a finish can find its lease lost), defer (a busy lease),
 * heartbeat, stale + reap (with a second, guarded reap of the same row), handOff, retryDead,
 * and clock moves. Every time is an explicit `now` the test passes in.
 *
 * Each sequence runs in lockstep on the in-memory store (`makeMemoryJobStore`,
 * src/adapters/memory/JobStore.ts, the model) and on one SQL store (`make` of
 * src/adapters/sql/JobStore.ts, on SQLite, PostgreSQL or MariaDB). Generated steps are resolved
 * to explicit calls from the model's state (which job, which claim token); then, after every
 * step, the step's result and the whole jobs and job-lock tables must be identical, field by
 * field. The first difference fails the run with the whole sequence, and fast-check shrinks it.
 *
 * Determinism: ids (`job-<step>`) and claim tokens (`tok-<step>`) come from the step index;
 * every step is 1 s after the last, so no two rows share created_at or updated_at. The SQL
 * claim orders by priority DESC, run_at ASC only (src/adapters/postgres/dialect.ts and its
 * siblings), while `claimOrder` in src/core/transitions.ts also breaks ties on created_at; so
 * every run_at the test writes is made unique: steps are whole seconds apart and each job's
 * run_at values carry its own job number in their milliseconds (hand-off and retryDead write
 * `now`, whose milliseconds are 0, once per step). The hosts table is not compared: a capped
 * claim on PostgreSQL/MariaDB creates the host row it locks, the model does not.
 */
import { SqlClient } from "@effect/sql"
import { MysqlClient } from "@effect/sql-mysql2"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-node"
import * as Reactivity from "@effect/experimental/Reactivity"
import { Cause, Effect, Exit, Logger, LogLevel, Option, Redacted, Scope } from "effect"
import fc from "fast-check"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { isDeepStrictEqual } from "node:util"
import { afterAll, beforeAll, describe, it } from "vitest"
import { makeMemoryDatabase } from "../../src/adapters/memory/database.ts"
import { makeMemoryJobStore } from "../../src/adapters/memory/JobStore.ts"
import { makeMemoryLeaseLock } from "../../src/adapters/memory/LeaseLock.ts"
import * as SqlJobStore from "../../src/adapters/sql/JobStore.ts"
import * as SqlLeaseLock from "../../src/adapters/sql/LeaseLock.ts"
import { decideReap, DEFAULT_BACKOFF } from "../../src/core/jobs.ts"
import { leaseExpiresAt } from "../../src/core/lease.ts"
import type { ClaimInput, FinishInput, JobRow, NewJob } from "../../src/core/model.ts"
import { tableNames } from "../../src/core/tables.ts"
import type { JobStoreApi } from "../../src/ports/JobStore.ts"
import type { AcquireInput, LeaseLockApi } from "../../src/ports/LeaseLock.ts"
import * as Migrator from "../../src/runtime/migrate.ts"
import { MYSQL_URL, PG_URL, uniquePrefix } from "../support/databases.ts"
import { dropPrefixed } from "../support/outage.ts"

// ---------------------------------------------------------------------------------------------
// Alphabet

/** A whole second, so every `now` has 0 in its milliseconds. */
const T0 = 1_791_039_632_000
const SECOND = 1000

const QUEUES = ["a", "b"] as const
const HOSTS = ["h1", "h2", "h3"] as const
const LEASES = ["key:x", "key:y"] as const
/** `own`: the job's own id as its unique key (no key given); the others collide on purpose. */
const UNIQUE_KEYS = ["own", "k1", "k2"] as const

/**
 * Which job a step acts on: the n-th of all ids inserted so far, or of the model's rows that
 * are running now (or dead or interrupted), so that most steps hit a row they can change.
 */
interface JobPick {
  readonly n: number
  readonly among: "all" | "running" | "dead"
}

/** Which claim token a step uses: the job's current one, any token handed out so far, or a stranger's. */
type TokenPick = { readonly current: true } | { readonly old: number } | { readonly stranger: true }

/** A generated step, before the model's state resolves it. */
type Gen =
  | {
    readonly kind: "insert"
    readonly name: "send" | "report"
    readonly queue: string
    readonly priority: number
    readonly runInS: number
    readonly key: (typeof UNIQUE_KEYS)[number]
    readonly maxRetries: number
    readonly claimTimeout: number
  }
  | {
    readonly kind: "claim"
    readonly host: string
    readonly queues: ReadonlyArray<string> | undefined
    readonly timeoutCap: number | undefined
    readonly hostCap: number | undefined
  }
  | {
    readonly kind: "finish"
    readonly job: JobPick
    readonly token: TokenPick
    readonly outcome: "Complete" | "Retry" | "Kill"
    readonly delayS: number
    readonly lease: { readonly name: string; readonly take: boolean } | undefined
    /**
     * The lease is passed to this attempt instead of released (FinishInput `transferTo`), with
     * `unlessWaiting` or not.
     */
    readonly transfer?: { readonly token: TokenPick; readonly unlessWaiting: boolean } | undefined
  }
  | { readonly kind: "acquire"; readonly lease: string; readonly token: TokenPick; readonly ttlMs: number }
  | {
    readonly kind: "defer"
    readonly job: JobPick
    readonly token: TokenPick
    readonly delayS: number
    readonly lease: string
  }
  | { readonly kind: "heartbeat"; readonly job: JobPick; readonly token: TokenPick }
  | {
    readonly kind: "reap"
    readonly limit: number
    readonly idempotent: boolean
    readonly again: boolean
  }
  | { readonly kind: "handOff"; readonly lease: string }
  | { readonly kind: "retryDead"; readonly job: JobPick }
  | { readonly kind: "advance"; readonly ms: number }

/** A step with every argument explicit: exactly what each store is asked. */
type Step =
  | { readonly op: "insert"; readonly job: NewJob }
  | { readonly op: "claim"; readonly input: ClaimInput }
  | { readonly op: "finish"; readonly acquire: AcquireInput | undefined; readonly input: FinishInput }
  | { readonly op: "acquire"; readonly input: AcquireInput }
  | {
    readonly op: "defer"
    readonly id: string
    readonly token: string
    readonly now: number
    readonly runAt: number
    readonly lease: string
  }
  | {
    readonly op: "heartbeat"
    readonly id: string
    readonly token: string
    readonly now: number
    readonly staleAt: number
  }
  | {
    readonly op: "reap"
    readonly now: number
    readonly limit: number
    readonly idempotent: boolean
    readonly again: boolean
  }
  | { readonly op: "handOff"; readonly lease: string; readonly now: number }
  | { readonly op: "retryDead"; readonly id: string; readonly now: number }
  | { readonly op: "clock"; readonly now: number }

const tokenPick: fc.Arbitrary<TokenPick> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ current: true as const }) },
  { weight: 2, arbitrary: fc.record({ old: fc.nat(30) }) },
  { weight: 1, arbitrary: fc.constant({ stranger: true as const }) }
)
const pick = (among: "running" | "dead"): fc.Arbitrary<JobPick> =>
  fc.record({
    n: fc.nat(30),
    among: fc.oneof({ weight: 4, arbitrary: fc.constant(among) }, { weight: 1, arbitrary: fc.constant("all" as const) })
  })
const running = pick("running")
const lease = fc.constantFrom(...LEASES)

const genInsert: fc.Arbitrary<Gen> = fc.record({
  kind: fc.constant("insert" as const),
  name: fc.constantFrom("send" as const, "report" as const),
  queue: fc.constantFrom(...QUEUES),
  priority: fc.integer({ min: 0, max: 2 }),
  runInS: fc.constantFrom(-10, 0, 0, 0, 30, 120),
  key: fc.constantFrom("own", ...UNIQUE_KEYS),
  maxRetries: fc.integer({ min: 0, max: 2 }),
  claimTimeout: fc.constantFrom(30, 60, 300)
})

const genStep: fc.Arbitrary<Gen> = fc.oneof(
  { weight: 6, arbitrary: genInsert },
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant("claim" as const),
      host: fc.constantFrom(...HOSTS),
      queues: fc.constantFrom(undefined, ["a"], ["b"], ["a", "b"]),
      timeoutCap: fc.constantFrom(undefined, 45, 600),
      hostCap: fc.constantFrom(undefined, undefined, 0, 1, 2)
    })
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("finish" as const),
      job: running,
      token: tokenPick,
      outcome: fc.constantFrom("Complete" as const, "Retry" as const, "Kill" as const),
      delayS: fc.constantFrom(0, 4, 60),
      lease: fc.option(fc.record({ name: lease, take: fc.constantFrom(true, true, true, false) }), { nil: undefined }),
      transfer: fc.option(fc.record({ token: tokenPick, unlessWaiting: fc.boolean() }), { nil: undefined, freq: 3 })
    })
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("acquire" as const),
      lease,
      token: tokenPick,
      ttlMs: fc.constantFrom(SECOND, 120 * SECOND)
    })
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("defer" as const),
      job: running,
      token: tokenPick,
      delayS: fc.constantFrom(1, 30),
      lease
    })
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("heartbeat" as const), job: running, token: tokenPick }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("reap" as const),
      limit: fc.constantFrom(1, 5),
      idempotent: fc.boolean(),
      again: fc.boolean()
    })
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("handOff" as const), lease }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("retryDead" as const), job: pick("dead") }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("advance" as const),
      ms: fc.constantFrom(60 * SECOND, 125 * SECOND, 700 * SECOND)
    })
  }
)

const MAX_STEPS = 25
/** Property runs per database; override with LEASEHOLD_MODEL_RUNS. */
const NUM_RUNS = Number(process.env.LEASEHOLD_MODEL_RUNS ?? 50)
/** A few jobs first, then any steps: up to MAX_STEPS in all. */
const genSteps = fc.tuple(
  fc.array(genInsert, { minLength: 2, maxLength: 6 }),
  fc.array(genStep, { minLength: 1, maxLength: MAX_STEPS - 6, size: "max" })
).map(([jobs, steps]) => [...jobs, ...steps])

/**
 * Found by this test: a job that had waited on a lease, was claimed again and then failed with a
 * retry while releasing that lease was handed off to itself, losing its backoff (memory, SQLite,
 * MariaDB). The releasing attempt is never its own hand-off waiter (src/core/transitions.ts,
 * `isWaiting`); this sequence runs first on every database.
 */
const RETRY_KEEPS_BACKOFF: ReadonlyArray<Gen> = [
  { kind: "insert", name: "send", queue: "a", priority: 0, runInS: -10, key: "own", maxRetries: 2, claimTimeout: 30 },
  { kind: "claim", host: "h1", queues: undefined, timeoutCap: undefined, hostCap: undefined },
  { kind: "defer", job: { n: 0, among: "running" }, token: { current: true }, delayS: 1, lease: "key:x" },
  { kind: "advance", ms: 60 * SECOND },
  { kind: "claim", host: "h1", queues: undefined, timeoutCap: undefined, hostCap: undefined },
  {
    kind: "finish",
    job: { n: 0, among: "running" },
    token: { current: true },
    outcome: "Retry",
    delayS: 60,
    lease: { name: "key:x", take: true }
  }
]

// ---------------------------------------------------------------------------------------------
// Running a sequence

/** One store under test: the JobStore and the LeaseLock on its job-lock table. */
interface Stores {
  readonly jobs: JobStoreApi
  readonly leases: LeaseLockApi
}

/** A job's number, carried in the milliseconds of every run_at the test writes for it. */
const jobNo = (id: string): number => Number(id.slice("job-".length)) || 999

/** Runs a store call and turns its success, failure or defect into plain data. */
const settle = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<unknown> =>
  Effect.map(Effect.exit(effect), (exit) => {
    if (Exit.isSuccess(exit)) return exit.value
    const failure = Cause.failureOption(exit.cause)
    return Option.isSome(failure)
      ? { error: String((failure.value as { _tag?: string })._tag) }
      : { defect: Cause.pretty(exit.cause) }
  })

/** What the reaper does (src/runtime/worker/turns.ts reaps the same way): stale rows, then one reap each. */
const reapStep = (store: Stores, step: Extract<Step, { op: "reap" }>) =>
  Effect.gen(function*() {
    const stale = yield* store.jobs.stale(step.now, step.limit)
    const reaped: Array<unknown> = []
    for (const row of stale) {
      const decided = decideReap(row, { idempotent: step.idempotent, backoff: DEFAULT_BACKOFF }, step.now)
      // Keep run_at unique per job (see the header): the backoff is whole seconds.
      const decision = decided._tag === "Retry" ? { ...decided, runAt: decided.runAt + jobNo(row.id) } : decided
      const first = yield* store.jobs.reap(row, decision, step.now)
      // A second reaper with the same read must lose (guarded by attempts and staleness).
      reaped.push(step.again ? [first, yield* store.jobs.reap(row, decision, step.now)] : first)
    }
    return { stale, reaped }
  })

/** Runs one explicit step on a store. */
const runStep = (store: Stores, step: Step): Effect.Effect<unknown> => {
  switch (step.op) {
    case "insert":
      return settle(store.jobs.insert(step.job))
    case "claim":
      return settle(store.jobs.claim(step.input))
    case "finish":
      return settle(Effect.gen(function*() {
        const acquired = step.acquire === undefined ? null : yield* store.leases.tryAcquire(step.acquire)
        const { transferred, ...finished } = yield* store.jobs.finish(step.input)
        // Token counters are not reset between runs: whether a new token came, not its value.
        return { acquired, finished, passedOn: transferred !== undefined }
      }))
    case "acquire":
      return settle(store.leases.tryAcquire(step.input))
    case "defer":
      return settle(store.jobs.defer(step.id, step.token, step.now, step.runAt, step.lease))
    case "heartbeat":
      return settle(store.jobs.heartbeat(step.id, step.token, step.now, step.staleAt))
    case "reap":
      return settle(reapStep(store, step))
    case "handOff":
      return settle(store.jobs.handOff(step.lease, step.now))
    case "retryDead":
      return settle(store.jobs.retryDead(step.id, step.now))
    case "clock":
      return Effect.succeed({ now: step.now })
  }
}

const byKey = <A>(key: (a: A) => string) => (a: A, b: A) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0)

/** Every job row (by id) and every job-lock row (by name): what the step left behind. */
const snapshot = (store: Stores) =>
  settle(Effect.all({
    jobs: Effect.map(store.jobs.list({ limit: 1000 }), (rows) => [...rows].sort(byKey((r: JobRow) => r.id))),
    leases: Effect.map(store.leases.list, (rows) => [...rows].sort(byKey((r) => r.name)))
  }))

/** Turns a generated step into explicit calls, from the model's state at `now`. */
const resolve = (model: Stores, g: Gen, i: number, now: number, ids: Array<string>, tokens: Array<string>) =>
  Effect.gen(function*() {
    const pickJob = (p: JobPick) =>
      Effect.gen(function*() {
        const rows = yield* Effect.orDie(model.jobs.list({ limit: 1000 }))
        const wanted = (r: JobRow) =>
          p.among === "running" ? r.status === "processing" : r.status === "failed" || r.status === "interrupted"
        const among = p.among === "all" ? [] : rows.filter(wanted).map((r) => r.id).sort()
        const from = among.length > 0 ? among : ids
        return from.length === 0 ? "job-none" : from[p.n % from.length]!
      })
    const row = (id: string) => Effect.map(Effect.orDie(model.jobs.get(id)), Option.getOrUndefined)
    const token = (id: string | undefined, pick: TokenPick) =>
      Effect.gen(function*() {
        if ("stranger" in pick) return "tok-stranger"
        if ("old" in pick) return tokens.length === 0 ? "tok-none" : tokens[pick.old % tokens.length]!
        return (id === undefined ? undefined : (yield* row(id))?.claimToken) ?? "tok-none"
      })
    switch (g.kind) {
      case "insert": {
        const id = `job-${i + 1}`
        ids.push(id)
        return {
          op: "insert",
          job: {
            id,
            name: g.name,
            queue: g.queue,
            payload: JSON.stringify({ step: i }),
            priority: g.priority,
            maxRetries: g.maxRetries,
            claimTimeout: g.claimTimeout,
            uniqueKey: g.key === "own" ? id : g.key,
            runAt: now + g.runInS * SECOND + jobNo(id),
            now
          }
        } satisfies Step
      }
      case "claim": {
        const claimToken = `tok-${i + 1}`
        tokens.push(claimToken)
        return {
          op: "claim",
          input: { host: g.host, queues: g.queues, timeoutCap: g.timeoutCap, hostCap: g.hostCap, now, claimToken }
        } satisfies Step
      }
      case "finish": {
        const id = yield* pickJob(g.job)
        const tok = yield* token(id, g.token)
        const outcome = g.outcome === "Complete"
          ? { _tag: "Complete" as const }
          : g.outcome === "Retry"
          ? { _tag: "Retry" as const, runAt: now + g.delayS * SECOND + jobNo(id), error: `retry at step ${i}` }
          : { _tag: "Kill" as const, error: `killed at step ${i}` }
        const claimTimeout = (yield* row(id))?.claimTimeout
        const acquire: AcquireInput | undefined = g.lease?.take === true
          ? { name: g.lease.name, owner: tok, host: "h1", now, expiresAt: leaseExpiresAt(now, claimTimeout) }
          : undefined
        const transferTo = g.transfer === undefined
          ? undefined
          : {
            owner: yield* token(undefined, g.transfer.token),
            host: "h2",
            expiresAt: leaseExpiresAt(now, claimTimeout),
            unlessWaiting: g.transfer.unlessWaiting
          }
        return {
          op: "finish",
          acquire,
          input: { id, token: tok, now, outcome, lease: g.lease?.name, transferTo }
        } satisfies Step
      }
      case "acquire":
        return {
          op: "acquire",
          input: { name: g.lease, owner: yield* token(undefined, g.token), host: "h2", now, ttlMs: g.ttlMs }
        } satisfies Step
      case "defer": {
        const id = yield* pickJob(g.job)
        return {
          op: "defer",
          id,
          token: yield* token(id, g.token),
          now,
          runAt: now + g.delayS * SECOND + jobNo(id),
          lease: g.lease
        } satisfies Step
      }
      case "heartbeat": {
        const id = yield* pickJob(g.job)
        // What the worker writes (src/runtime/worker/perform.ts): the lease's new expiry.
        const staleAt = leaseExpiresAt(now, (yield* row(id))?.claimTimeout)
        return { op: "heartbeat", id, token: yield* token(id, g.token), now, staleAt } satisfies Step
      }
      case "reap":
        return {
          op: "reap",
          now,
          limit: g.limit,
          idempotent: g.idempotent,
          again: g.again
        } satisfies Step
      case "handOff":
        return { op: "handOff", lease: g.lease, now } satisfies Step
      case "retryDead":
        return { op: "retryDead", id: yield* pickJob(g.job), now } satisfies Step
      case "advance":
        return { op: "clock", now } satisfies Step
    }
  })

const show = (x: unknown) => JSON.stringify(x)

/**
 * Runs `gens` in lockstep on the model and on `sql`, comparing each step's result and both
 * tables after it. Returns a description of the first difference, or undefined.
 */
const lockstep = (model: Stores, sql: Stores, label: string, gens: ReadonlyArray<Gen>) =>
  Effect.gen(function*() {
    let now = T0
    const ids: Array<string> = []
    const tokens: Array<string> = []
    const lines: Array<string> = []
    for (const [i, g] of gens.entries()) {
      now += SECOND + (g.kind === "advance" ? g.ms : 0)
      const step: Step = yield* resolve(model, g, i, now, ids, tokens)
      const expected = yield* runStep(model, step)
      const actual = yield* runStep(sql, step)
      const same = isDeepStrictEqual(expected, actual)
      lines.push(
        `${same ? "  " : ">>"} ${String(i).padStart(2)} ${show(step)}\n      model: ${show(expected)}` +
          (same ? "" : `\n      ${label}: ${show(actual)}`)
      )
      const tablesModel = yield* snapshot(model)
      const tablesSql = yield* snapshot(sql)
      if (!same || !isDeepStrictEqual(tablesModel, tablesSql)) {
        return `${label} differs from the model at step ${i} (${same ? "tables" : "result"})\n${lines.join("\n")}\n` +
          `   tables model: ${show(tablesModel)}\n   tables ${label}: ${show(tablesSql)}`
      }
    }
    return undefined
  })

// ---------------------------------------------------------------------------------------------
// Stores

interface SqlDatabase {
  readonly label: string
  readonly sql: SqlClient.SqlClient
  readonly prefix: string
  readonly stores: Stores
}

/** Empties this run's job, host and job-lock tables (names are lowercase [a-z0-9_]). */
const clearTables = (db: SqlDatabase) => {
  const t = tableNames(db.prefix)
  return Effect.orDie(
    Effect.forEach([t.jobLocks, t.hosts, t.jobs], (table) => db.sql.unsafe(`DELETE FROM ${table}`), { discard: true })
  )
}

/** Without the migrator's info logs. */
const quiet = Logger.withMinimumLogLevel(LogLevel.Warning)

/** A fresh in-memory model under `prefix`, its tables made by the memory migrator. */
const freshModel = (prefix: string) =>
  Effect.gen(function*() {
    const db = yield* makeMemoryDatabase
    yield* Effect.orDie(Migrator.makeMemory(db, { prefix }).run).pipe(quiet)
    return {
      jobs: makeMemoryJobStore(db, { prefix }),
      leases: makeMemoryLeaseLock(db, { table: tableNames(prefix).jobLocks })
    }
  })

/** Migrates `prefix` on `sql` once and builds its JobStore and JobLeases. */
const sqlDatabase = (label: string, sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const prefix = uniquePrefix(`jsm${label.slice(0, 2)}`)
    yield* Effect.orDie(Effect.flatMap(Migrator.make({ prefix }), (m) => m.run)).pipe(quiet)
    const jobs = yield* SqlJobStore.make({ prefix })
    const leases = yield* SqlLeaseLock.make({ table: tableNames(prefix).jobLocks })
    return { label, sql, prefix, stores: { jobs, leases } } satisfies SqlDatabase
  }).pipe(Effect.provideService(SqlClient.SqlClient, sql))

// ---------------------------------------------------------------------------------------------
// Tests

const scope = Effect.runSync(Scope.make())
const databases: Record<"sqlite" | "postgres" | "mariadb", SqlDatabase | undefined> = {
  sqlite: undefined,
  postgres: undefined,
  mariadb: undefined
}
let sqliteDir: string | undefined

beforeAll(async () => {
  sqliteDir = mkdtempSync(join(tmpdir(), "leasehold-jobmodel-"))
  const clients = await Effect.runPromise(
    Effect.all({
      sqlite: SqliteClient.make({ filename: join(sqliteDir, "model.db") }),
      postgres: PgClient.make({ url: Redacted.make(PG_URL), maxConnections: 2 }),
      mariadb: MysqlClient.make({ url: Redacted.make(MYSQL_URL), maxConnections: 2 })
    }).pipe(Effect.provide(Reactivity.layer), Scope.extend(scope))
  )
  for (const label of ["sqlite", "postgres", "mariadb"] as const) {
    databases[label] = await Effect.runPromise(sqlDatabase(label, clients[label]))
  }
}, 60_000)

afterAll(async () => {
  for (const db of Object.values(databases)) {
    if (db !== undefined) await Effect.runPromise(dropPrefixed(db.sql, db.prefix))
  }
  await Effect.runPromise(Scope.close(scope, Exit.void))
  if (sqliteDir !== undefined) rmSync(sqliteDir, { recursive: true, force: true })
}, 60_000)

/** One generated sequence on a fresh model and on emptied tables of `label`; throws on a difference. */
const agreesWithModel = (label: keyof typeof databases) => async (gens: ReadonlyArray<Gen>) => {
  const db = databases[label]!
  const problem = await Effect.runPromise(
    Effect.gen(function*() {
      yield* clearTables(db)
      return yield* lockstep(yield* freshModel(db.prefix), db.stores, label, gens)
    })
  )
  if (problem !== undefined) throw new Error(problem)
}

describe.concurrent("JobStore: the SQL stores agree with the in-memory model, step by step", () => {
  for (const label of ["sqlite", "postgres", "mariadb"] as const) {
    it(`${label} (${NUM_RUNS} runs of up to ${MAX_STEPS} steps)`, async () => {
      await fc.assert(fc.asyncProperty(genSteps, agreesWithModel(label)), {
        numRuns: NUM_RUNS,
        examples: [[RETRY_KEEPS_BACKOFF]]
      })
    }, 120_000)
  }
})
