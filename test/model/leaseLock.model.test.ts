/**
 * Model-based property tests of LeaseLock (docs/behaviour.md §2, §3).
 *
 * fast-check generates random sequences of LeaseLock calls and clock moves over a small
 * alphabet of names, owners and hosts. Each sequence runs first on the in-memory model
 * (`makeMemoryLeaseLock`), which also resolves the clock moves to explicit times, and then,
 * step for step, on the SQL stores (`LeaseLock.make` over SQLite, PostgreSQL and MariaDB).
 * Every step's result, and the final `list`, must be identical. Each run uses fresh tables
 * (one per store) and drops them.
 *
 * A second property checks the model alone against a ledger of what each owner was told:
 * no two owners ever hold one live lease, a refusal always names a live holder, and a
 * lease that was taken over can be neither renewed nor released by its old owner.
 */
import { SqlClient } from "@effect/sql"
import { MysqlClient } from "@effect/sql-mysql2"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-node"
import * as Reactivity from "@effect/experimental/Reactivity"
import { Cause, Effect, Exit, Option, Redacted, Scope } from "effect"
import fc from "fast-check"
import { dropPrefixed } from "../support/outage.ts"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { isDeepStrictEqual } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as LeaseLock from "../../src/LeaseLock.ts"
import { makeMemoryDatabase } from "../../src/adapters/memory/database.ts"
import { makeMemoryLeaseLock } from "../../src/adapters/memory/LeaseLock.ts"
import type { LeaseRow } from "../../src/core/lease.ts"
import { MYSQL_URL, PG_URL, uniquePrefix } from "../support/databases.ts"

// ---------------------------------------------------------------------------------------------
// Alphabet

const T0 = 1_791_039_632_175
const MINUTE = 60_000

/**
 * Lease names: two that differ only by case, one that differs only by a trailing tab, and
 * one with quotes and unicode. Each must be a lease of its own.
 */
const NAMES = ["report", "Report", "report\t", `it's "q" — ünï 🚀`] as const
// A trailing space is refused with LeaseInputError on every store (MySQL/MariaDB's PAD SPACE
// collations would make `report ` the same lease as `report`; test/conformance/leaseLock.ts
// covers that); a trailing tab is a name of its own everywhere.
const OWNERS = ["a", "b", `o'"ü`] as const
/** `undefined` stores a null host. */
const HOSTS = [undefined, "h1", `hôst'2`] as const

type Name = (typeof NAMES)[number]
type Owner = (typeof OWNERS)[number]

/** How a generated call sets an expiry, relative to the step's `now` unless absolute. */
type ExpiryGen =
  | { readonly ttlMs: number }
  | { readonly offset: number }
  | { readonly absolute: number }

/** A generated step, before the model resolves its times. */
type Gen =
  | {
    readonly kind: "acquire"
    readonly name: Name
    readonly owner: Owner
    readonly host: string | undefined
    readonly expiry: ExpiryGen
  }
  | { readonly kind: "renew"; readonly name: Name; readonly owner: Owner; readonly expiry: ExpiryGen }
  | { readonly kind: "release"; readonly name: Name; readonly owner: Owner; readonly expiredBefore: "none" | 0 | 1 }
  | { readonly kind: "ownerOf"; readonly name: Name }
  | { readonly kind: "read"; readonly name: Name }
  | { readonly kind: "advance"; readonly ms: number }
  | { readonly kind: "toExpiry"; readonly name: Name; readonly plus: 0 | 1 }

/** A step with every time explicit: exactly what each store is asked. */
type Step =
  | { readonly op: "tryAcquire"; readonly input: LeaseLock.AcquireInput }
  | { readonly op: "renew"; readonly input: LeaseLock.RenewInput }
  | { readonly op: "release"; readonly input: LeaseLock.ReleaseInput }
  | { readonly op: "ownerOf"; readonly name: string }
  | { readonly op: "read"; readonly name: string }
  | { readonly op: "clock"; readonly now: number }

const owner = fc.constantFrom(...OWNERS)
const expiry: fc.Arbitrary<ExpiryGen> = fc.oneof(
  fc.record({ ttlMs: fc.constantFrom(MINUTE, 1000, 1, 0, -1) }),
  fc.record({ offset: fc.constantFrom(MINUTE, 1, 0, -1) }),
  fc.record({ absolute: fc.constantFrom(T0 + 2 * MINUTE, 2 ** 42) })
)

/** One generated step over `names` (calls, and clock moves of 0, 1 ms, to an expiry, and large jumps). */
const genStep = (names: ReadonlyArray<Name>): fc.Arbitrary<Gen> => {
  const name = fc.constantFrom(...names)
  return fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant("acquire" as const),
        name,
        owner,
        host: fc.constantFrom(...HOSTS),
        expiry
      })
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("renew" as const), name, owner, expiry }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant("release" as const),
        name,
        owner,
        expiredBefore: fc.constantFrom("none" as const, 0 as const, 1 as const)
      })
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("ownerOf" as const), name }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("read" as const), name }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant("advance" as const),
        ms: fc.constantFrom(0, 1, 999, MINUTE, 3_600_000, 10 * 86_400_000, 2 ** 32)
      })
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant("toExpiry" as const),
        name,
        plus: fc.constantFrom(0 as const, 1 as const)
      })
    }
  )
}

const MAX_STEPS = 30
/** A sequence of 1 to `maxLength` generated steps over `names`. */
const genSteps = (names: ReadonlyArray<Name>, maxLength = MAX_STEPS) =>
  fc.array(genStep(names), { minLength: 1, maxLength })

/** Property runs of the model-vs-databases property; override with LEASEHOLD_MODEL_RUNS. */
const NUM_RUNS = Number(process.env.LEASEHOLD_MODEL_RUNS ?? 100)

// ---------------------------------------------------------------------------------------------
// Running a sequence

/** A step's result in a form every store can be compared on. */
type Outcome = unknown

/** Rows sorted by name in code-unit order, whatever order the database returned. */
const byName = (rows: ReadonlyArray<{ readonly name: string }>) =>
  [...rows].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))

const rowOrNull = (row: Option.Option<LeaseRow>) => Option.getOrNull(row)

/** Runs a lease call and turns its success, typed failure or defect into plain data. */
const outcome = <A>(effect: Effect.Effect<A, LeaseLock.LeaseError>, f: (a: A) => Outcome): Effect.Effect<Outcome> =>
  Effect.exit(effect).pipe(Effect.map((exit) => {
    if (Exit.isSuccess(exit)) return f(exit.value)
    const failure = Cause.failureOption(exit.cause)
    if (Option.isNone(failure)) return { defect: Cause.pretty(exit.cause) }
    const e = failure.value
    return e._tag === "LeaseInputError"
      ? { error: e._tag, field: e.field }
      : { error: e._tag, message: e.message, cause: String(e.cause) }
  }))

const expiryAt = (e: ExpiryGen, now: number): LeaseLock.LeaseExpiry =>
  "ttlMs" in e ? { ttlMs: e.ttlMs } : "offset" in e ? { expiresAt: now + e.offset } : { expiresAt: e.absolute }

/** Runs one explicit step on a store. */
const runStep = (lock: LeaseLock.LeaseLockApi, step: Step): Effect.Effect<Outcome> => {
  switch (step.op) {
    case "tryAcquire":
      return outcome(lock.tryAcquire(step.input), (b) => b)
    case "renew":
      return outcome(lock.renew(step.input), (b) => b)
    case "release":
      return outcome(lock.release(step.input), (b) => b)
    case "ownerOf":
      return outcome(lock.ownerOf(step.name), Option.getOrNull)
    case "read":
      return outcome(lock.read(step.name), rowOrNull)
    case "clock":
      return Effect.succeed({ now: step.now })
  }
}

/** What one store did with a sequence: each step's result, then its whole table. */
interface Trace {
  readonly results: ReadonlyArray<Outcome>
  readonly list: Outcome
}

/**
 * Runs generated steps on the model, resolving every time to an explicit value: the steps
 * it returns are what the databases are then asked, verbatim. `toExpiry` moves the clock to
 * the named lease's expiry (+0 or +1 ms) when that lies ahead, and otherwise stays put.
 */
const runModel = (lock: LeaseLock.LeaseLockApi, gens: ReadonlyArray<Gen>) =>
  Effect.gen(function*() {
    let now = T0
    const steps: Array<Step> = []
    const results: Array<Outcome> = []
    for (const g of gens) {
      let step: Step
      switch (g.kind) {
        case "acquire":
          step = {
            op: "tryAcquire",
            input: { name: g.name, owner: g.owner, host: g.host, now, ...expiryAt(g.expiry, now) }
          }
          break
        case "renew":
          step = { op: "renew", input: { name: g.name, owner: g.owner, now, ...expiryAt(g.expiry, now) } }
          break
        case "release":
          step = {
            op: "release",
            input: g.expiredBefore === "none"
              ? { name: g.name, owner: g.owner }
              : { name: g.name, owner: g.owner, expiredBefore: now + g.expiredBefore }
          }
          break
        case "ownerOf":
        case "read":
          step = { op: g.kind, name: g.name }
          break
        case "advance":
          now += g.ms
          step = { op: "clock", now }
          break
        case "toExpiry": {
          const row = yield* Effect.orDie(lock.read(g.name))
          if (Option.isSome(row) && row.value.expiresAt + g.plus > now) now = row.value.expiresAt + g.plus
          step = { op: "clock", now }
          break
        }
      }
      steps.push(step)
      results.push(yield* runStep(lock, step))
    }
    // `list` orders by the database's collation (MariaDB sorts `report\t` before `report`):
    // compare the rows, not their order.
    const list = yield* outcome(lock.list, byName)
    return { steps, trace: { results, list } satisfies Trace }
  })

/** Runs explicit steps on a store. */
const runSteps = (lock: LeaseLock.LeaseLockApi, steps: ReadonlyArray<Step>) =>
  Effect.gen(function*() {
    const results: Array<Outcome> = []
    for (const step of steps) results.push(yield* runStep(lock, step))
    // `list` orders by the database's collation (MariaDB sorts `report\t` before `report`):
    // compare the rows, not their order.
    const list = yield* outcome(lock.list, byName)
    return { results, list } satisfies Trace
  })

const show = (x: unknown) => JSON.stringify(x)

/** Describes the first difference between the model's trace and a store's, with the whole sequence. */
const firstDifference = (store: string, steps: ReadonlyArray<Step>, model: Trace, other: Trace): string | undefined => {
  const at = steps.findIndex((_, i) => !isDeepStrictEqual(model.results[i], other.results[i]))
  if (at === -1 && isDeepStrictEqual(model.list, other.list)) return undefined
  const lines = steps.map((s, i) =>
    `${i === at ? ">>" : "  "} ${String(i).padStart(2)} ${show(s)}\n      model: ${show(model.results[i])}` +
    (isDeepStrictEqual(model.results[i], other.results[i]) ? "" : `\n      ${store}: ${show(other.results[i])}`)
  )
  const where = at === -1 ? "final list" : `step ${at}`
  return `${store} differs from the model at ${where}\n${lines.join("\n")}\n   list model: ${
    show(model.list)
  }\n   list ${store}: ${show(other.list)}`
}

// ---------------------------------------------------------------------------------------------
// Stores

interface SqlStore {
  readonly label: string
  readonly sql: SqlClient.SqlClient
}

/** Drops one table of this run (names are lowercase [a-z0-9_], so they need no quoting). */
const dropTable = (sql: SqlClient.SqlClient, table: string) => Effect.orDie(sql.unsafe(`DROP TABLE IF EXISTS ${table}`))

/** Runs `steps` on a fresh table of a SQL store and drops the table afterwards. */
const onFreshTable = (store: SqlStore, table: string, steps: ReadonlyArray<Step>) =>
  Effect.acquireUseRelease(
    Effect.provideService(LeaseLock.make({ table }), SqlClient.SqlClient, store.sql).pipe(
      Effect.tap((lock) => Effect.orDie(lock.ensureTable))
    ),
    (lock) => runSteps(lock, steps),
    () => dropTable(store.sql, table)
  )

const freshModel = (table: string) =>
  Effect.gen(function*() {
    const db = yield* makeMemoryDatabase
    const lock = makeMemoryLeaseLock(db, { table })
    yield* lock.ensureTable
    return lock
  })

// ---------------------------------------------------------------------------------------------
// Tests

const prefix = uniquePrefix("model")
let runs = 0
const scope = Effect.runSync(Scope.make())
let sqlite: SqlStore
let postgres: SqlStore
let mariadb: SqlStore
let sqliteDir: string

beforeAll(async () => {
  sqliteDir = mkdtempSync(join(tmpdir(), "leasehold-model-"))
  const clients = await Effect.runPromise(
    Effect.all({
      sqlite: SqliteClient.make({ filename: join(sqliteDir, "model.db") }),
      pg: PgClient.make({ url: Redacted.make(PG_URL), maxConnections: 4 }),
      mysql: MysqlClient.make({ url: Redacted.make(MYSQL_URL), maxConnections: 4 })
    }).pipe(Effect.provide(Reactivity.layer), Scope.extend(scope))
  )
  sqlite = { label: "sqlite", sql: clients.sqlite }
  postgres = { label: "postgres", sql: clients.pg }
  mariadb = { label: "mariadb", sql: clients.mysql }
}, 30_000)

afterAll(async () => {
  for (const store of [sqlite, postgres, mariadb]) {
    if (store !== undefined) await Effect.runPromise(dropPrefixed(store.sql, prefix))
  }
  await Effect.runPromise(Scope.close(scope, Exit.void))
  if (sqliteDir !== undefined) rmSync(sqliteDir, { recursive: true, force: true })
}, 30_000)

/** Runs one generated sequence on the model and on `stores`; throws on the first difference. */
const agreeWithModel = (stores: () => ReadonlyArray<SqlStore>) => async (gens: ReadonlyArray<Gen>) => {
  const table = `${prefix}${++runs}`
  const problems = await Effect.runPromise(
    Effect.gen(function*() {
      const model = yield* runModel(yield* freshModel(table), gens)
      const traces = yield* Effect.forEach(
        stores(),
        (store) => Effect.map(onFreshTable(store, table, model.steps), (trace) => ({ store, trace })),
        { concurrency: "unbounded" }
      )
      return traces.flatMap(({ store, trace }) => firstDifference(store.label, model.steps, model.trace, trace) ?? [])
    })
  )
  if (problems.length > 0) throw new Error(problems.join("\n\n"))
}

describe.concurrent("LeaseLock: the SQL stores agree with the in-memory model, step by step", () => {
  it(`SQLite and PostgreSQL (${NUM_RUNS} runs of up to ${MAX_STEPS} steps)`, async () => {
    await fc.assert(fc.asyncProperty(genSteps(NAMES), agreeWithModel(() => [sqlite, postgres])), { numRuns: NUM_RUNS })
  }, 120_000)

  it(`MariaDB (${NUM_RUNS} runs of up to ${MAX_STEPS} steps)`, async () => {
    await fc.assert(
      fc.asyncProperty(genSteps(NAMES), agreeWithModel(() => [mariadb])),
      { numRuns: NUM_RUNS }
    )
  }, 120_000)
})

// ---------------------------------------------------------------------------------------------
// The model alone: what owners are told never lets two of them hold one live lease

/** What the owners of one name were told so far. */
interface Ledger {
  /** The owner of the latest grant that was not released since. */
  latest: Owner | undefined
  /** Each owner's lease as it was told: until when it holds it. */
  readonly until: Map<Owner, number>
}

/** What a store answers to an expiry before now: refused, as `outcome` shows a LeaseInputError. */
const refusedExpiry = { error: "LeaseInputError", field: "expiresAt" }

/**
 * Folds the model's results over a ledger of grants and returns the first broken rule, if any:
 * at most one owner holds a live lease (expiry ≥ now) of a name; a refused acquire means
 * another owner holds it live; only the latest grantee can renew or release; ownerOf, read
 * and list show the latest grantee with the expiry it was told.
 */
const ledgerViolation = (
  steps: ReadonlyArray<Step>,
  results: ReadonlyArray<Outcome>,
  list: Outcome
): string | undefined => {
  const ledgers = new Map<string, Ledger>()
  const ledger = (n: string) => {
    const l = ledgers.get(n) ?? { latest: undefined, until: new Map<Owner, number>() }
    ledgers.set(n, l)
    return l
  }
  const live = (l: Ledger, now: number) => [...l.until].filter(([, until]) => until >= now).map(([o]) => o)
  const expectedRow = (n: string) => {
    const l = ledger(n)
    return l.latest === undefined ? null : { owner: l.latest, expiresAt: l.until.get(l.latest) }
  }
  let now = T0
  for (const [i, step] of steps.entries()) {
    const result = results[i]
    const fail = (rule: string) => `step ${i} ${show(step)} → ${show(result)}: ${rule}`
    switch (step.op) {
      case "clock":
        now = step.now
        break
      case "tryAcquire": {
        const { input } = step
        const l = ledger(input.name)
        const owner = input.owner as Owner
        const requested = "ttlMs" in input ? now + input.ttlMs : input.expiresAt
        // An already expired lease (expiry before now) is refused, and nothing changes.
        if (requested < now) {
          if (!isDeepStrictEqual(result, refusedExpiry)) return fail("an expiry before now must be refused")
          break
        }
        const others = live(l, now).filter((o) => o !== owner)
        if (result === true) {
          if (others.length > 0) return fail(`granted while ${show(others)} still hold it live`)
          const mine = l.until.get(owner)
          // Already ours and live: held, and the row is left as it was.
          if (!(l.latest === owner && mine !== undefined && mine >= now)) {
            l.until.set(owner, requested)
            l.latest = owner
          }
        } else if (result === false) {
          if (others.length === 0) return fail("refused although no other owner holds it live")
        } else {
          return fail("unexpected result")
        }
        break
      }
      case "renew": {
        const { input } = step
        const l = ledger(input.name)
        if (("ttlMs" in input ? now + input.ttlMs : input.expiresAt) < now) {
          if (!isDeepStrictEqual(result, refusedExpiry)) return fail("an expiry before now must be refused")
          break
        }
        if (result !== (l.latest === input.owner)) return fail(`latest grantee is ${show(l.latest)}`)
        if (result === true) l.until.set(input.owner as Owner, "ttlMs" in input ? now + input.ttlMs : input.expiresAt)
        break
      }
      case "release": {
        const { input } = step
        const l = ledger(input.name)
        const until = l.until.get(input.owner as Owner)
        const may = l.latest === input.owner &&
          (input.expiredBefore === undefined || (until !== undefined && until < input.expiredBefore))
        if (result !== may) return fail(`latest grantee is ${show(l.latest)} until ${show(until)}`)
        if (result === true) {
          l.until.delete(input.owner as Owner)
          l.latest = undefined
        }
        break
      }
      case "ownerOf":
        if (result !== (ledger(step.name).latest ?? null)) {
          return fail(`latest grantee is ${show(ledger(step.name).latest)}`)
        }
        break
      case "read": {
        const row = result as LeaseRow | null
        const expected = expectedRow(step.name)
        const got = row === null ? null : { owner: row.owner, expiresAt: row.expiresAt }
        if (!isDeepStrictEqual(got, expected)) return fail(`expected ${show(expected)}`)
        break
      }
    }
    for (const [n, l] of ledgers) {
      const holders = live(l, now)
      if (holders.length > 1) return fail(`${show(holders)} all hold ${show(n)} live at ${now}`)
    }
  }
  const rows = (list as ReadonlyArray<LeaseRow>).map((r) =>
    [r.name, { owner: r.owner, expiresAt: r.expiresAt }] as const
  )
  const expected = [...ledgers.keys()].flatMap((n) => {
    const row = expectedRow(n)
    return row === null ? [] : [[n, row] as const]
  })
  const byName = (
    a: readonly [string, unknown],
    b: readonly [string, unknown]
  ) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)
  if (!isDeepStrictEqual([...rows].sort(byName), [...expected].sort(byName))) {
    return `final list ${show(list)}, expected ${show(expected)}`
  }
  return undefined
}

describe("LeaseLock: the in-memory model", () => {
  it("never lets two owners hold one live lease, and fences old owners (1000 runs of up to 40 steps)", () => {
    fc.assert(
      fc.property(genSteps(NAMES, 40), (gens) => {
        const { steps, trace } = Effect.runSync(
          Effect.flatMap(freshModel("model_ledger"), (lock) => runModel(lock, gens))
        )
        const violation = ledgerViolation(steps, trace.results, trace.list)
        if (violation !== undefined) {
          throw new Error(
            `${violation}\nsteps:\n${steps.map((s, i) => `  ${i} ${show(s)} → ${show(trace.results[i])}`).join("\n")}`
          )
        }
      }),
      { numRuns: 1000 }
    )
  })
})
