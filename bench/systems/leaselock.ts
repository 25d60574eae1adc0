/**
 * Scenario 5, LeaseLock: tryAcquire + release pairs per second, one after another on one
 * connection, each pair on a lease name of its own (`bench-<i>`), every result checked.
 *
 * - leasehold: `LeaseLock.make({ table })` over an @effect/sql client (PgClient, MysqlClient
 *   or SqliteClient with one connection). On PostgreSQL a free name costs tryAcquire = one
 *   INSERT … ON CONFLICT DO UPDATE … WHERE expired RETURNING, and release = DELETE: two
 *   statements per pair (MySQL: SELECT owner + INSERT + DELETE).
 * - raw-pg: a plain node-postgres `Client` sending exactly those two statements, built by
 *   leasehold's own statement builders (`leaseStatements` with the PostgreSQL dialect), so
 *   the SQL text and parameters are the same; the difference is leasehold's own overhead
 *   (Effect, validation, the pool checkout per statement).
 * - pg-advisory: `SELECT pg_try_advisory_lock($1)` + `SELECT pg_advisory_unlock($1)` (session
 *   locks, no table, no expiry, no fencing): two statements per pair.
 *
 * Statements per pair for leasehold are counted in a separate short pass through the counting
 * SqlClient (`../lib/sql.ts`), so the timed loop runs on the plain client.
 */
import { Effect, Layer } from "effect"
import pg from "pg"
import * as LeaseLock from "../../src/LeaseLock.ts"
import { postgres } from "../../src/adapters/postgres/dialect.ts"
import { leaseStatements } from "../../src/adapters/sql/leaseStatements.ts"
import type { Statement } from "../../src/adapters/sql/statement.ts"
import { countingLayer, sqlLayer, StatementCount } from "../lib/sql.ts"

export interface PairsResult {
  readonly pairs: number
  readonly ms: number
  readonly statementsPerPair: number
}

export const TABLE = "lh_bench_leases"
const OWNER = "bench-owner"
const TTL_MS = 30_000
const WARMUP = 200
const COUNT_PASS = 100

const leaseholdLoop = (lock: LeaseLock.LeaseLockApi, from: number, n: number) =>
  Effect.gen(function*() {
    for (let i = from; i < from + n; i++) {
      const name = `bench-${i}`
      if (!(yield* lock.tryAcquire({ name, owner: OWNER, ttlMs: TTL_MS }))) {
        return yield* Effect.dieMessage(`leasehold: tryAcquire(${name}) returned false`)
      }
      if (!(yield* lock.release({ name, owner: OWNER }))) {
        return yield* Effect.dieMessage(`leasehold: release(${name}) returned false`)
      }
    }
  })

/** leasehold's LeaseLock on any of its databases (the URL picks the client). */
export const leasehold = async (url: string, n: number): Promise<PairsResult> => {
  const client = sqlLayer(url, 1)
  const timed = Effect.gen(function*() {
    const lock = yield* LeaseLock.make({ table: TABLE })
    yield* lock.ensureTable
    yield* leaseholdLoop(lock, -WARMUP, WARMUP)
    const t0 = performance.now()
    yield* leaseholdLoop(lock, 0, n)
    return performance.now() - t0
  }).pipe(Effect.provide(client))
  const counted = Effect.gen(function*() {
    const lock = yield* LeaseLock.make({ table: TABLE })
    const count = yield* StatementCount
    count.reset()
    yield* leaseholdLoop(lock, n, COUNT_PASS)
    return count.get() / COUNT_PASS
  }).pipe(Effect.provide(Layer.provide(countingLayer, client)))
  const ms = await Effect.runPromise(timed)
  const statementsPerPair = await Effect.runPromise(counted)
  return { pairs: n, ms, statementsPerPair }
}

const query = (client: pg.Client, s: Statement) => client.query(s.sql, s.params as Array<unknown>)

/** The same statements leasehold sends on PostgreSQL, through a raw node-postgres Client. */
export const rawPg = async (url: string, n: number): Promise<PairsResult> => {
  const statements = leaseStatements(postgres.syntax, postgres.lease, TABLE)
  const acquire = postgres.lease.acquire
  if (acquire.kind !== "upsertWithToken") {
    throw new Error("raw-pg: PostgreSQL's lease acquire is expected to be one upsert that bumps the token")
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const pair = async (i: number) => {
    const name = `bench-${i}`
    const now = Date.now()
    const row = { name, owner: OWNER, host: null, acquiredAt: now, expiresAt: now + TTL_MS }
    const acquired = await query(client, acquire.statement(statements.quoted, statements.tokens, row))
    if (acquired.rows[0]?.got !== 1) throw new Error(`raw-pg: acquire of ${name} did not take the lease`)
    const released = await query(client, statements.release(name, OWNER))
    if (released.rowCount !== 1) throw new Error(`raw-pg: release of ${name} changed ${released.rowCount} rows`)
  }
  try {
    await query(client, statements.createTable)
    await query(client, statements.createTokensTable)
    for (let i = -WARMUP; i < 0; i++) await pair(i)
    const t0 = performance.now()
    for (let i = 0; i < n; i++) await pair(i)
    return { pairs: n, ms: performance.now() - t0, statementsPerPair: 2 }
  } finally {
    await client.end()
  }
}

/** pg_try_advisory_lock / pg_advisory_unlock pairs on a raw node-postgres Client. */
export const pgAdvisory = async (url: string, n: number): Promise<PairsResult> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const pair = async (key: number) => {
    const locked = await client.query("SELECT pg_try_advisory_lock($1) AS ok", [key])
    if (locked.rows[0]?.ok !== true) throw new Error(`pg-advisory: lock ${key} not taken`)
    const unlocked = await client.query("SELECT pg_advisory_unlock($1) AS ok", [key])
    if (unlocked.rows[0]?.ok !== true) throw new Error(`pg-advisory: lock ${key} not released`)
  }
  try {
    for (let i = 0; i < WARMUP; i++) await pair(1_000_000 + i)
    const t0 = performance.now()
    for (let i = 0; i < n; i++) await pair(i)
    return { pairs: n, ms: performance.now() - t0, statementsPerPair: 2 }
  } finally {
    await client.end()
  }
}
