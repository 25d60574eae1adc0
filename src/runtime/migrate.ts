/**
 * The migration runner: applies leasehold's own schema migrations (src/adapters/sql/schema.ts)
 * under the migration lock (docs/behaviour.md §10).
 *
 * The lock is a LeaseLock row named `migrate` in its own table. One runner works over an
 * abstract backend (the SQL database, or the in-memory store), so both share every rule:
 * wait for the lock polling once a second (Effect's Clock, so TestClock drives it), take over
 * an expired lease, renew before each step and stop if it is no longer ours, record each
 * migration, and release only our own row, whatever happened.
 *
 * Migrations are not wrapped in a transaction: DDL commits an open transaction on MySQL, so a
 * transaction would promise an atomicity it cannot give. Instead each migration is idempotent.
 */
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { Clock, Context, Duration, Effect, Layer, Option, Ref } from "effect"
import { randomUUID } from "node:crypto"
import { hostname } from "node:os"
import {
  type LeaseInputError,
  MIGRATE_UNLOCK_COMMAND,
  MigrationInTransactionError,
  MigrationLockLostError,
  MigrationLockTimeoutError
} from "../core/errors.ts"
import { isExpired, type LeaseRow } from "../core/lease.ts"
import { type TableNames, tableNames } from "../core/tables.ts"
import { MemoryDatabase, type MemoryDatabaseApi } from "../adapters/memory/database.ts"
import { makeMemoryMigrationStore } from "../adapters/memory/MigrationStore.ts"
import { makeMigrationStore } from "../adapters/sql/MigrationStore.ts"
import { migrations as leaseholdMigrations } from "../adapters/sql/schema.ts"
import type { AppliedMigration, Migration, MigrationStore } from "../ports/MigrationStore.ts"

export type { MigrationStore }

/** The name of the migration lock's row. */
export const LOCK_NAME = "migrate"

/** How long `run` waits for a lock held elsewhere, by default. */
export const DEFAULT_LOCK_TIMEOUT: Duration.DurationInput = "60 seconds"
/** How long the lease lasts between renewals, by default; each step must finish within it. */
export const DEFAULT_LOCK_TTL: Duration.DurationInput = "60 seconds"
/** How often a waiting run asks for the lock again, by default. */
export const DEFAULT_POLL_INTERVAL: Duration.DurationInput = "1 second"

/** A migration about to run, as the `onStep` hook sees it. */
export interface MigrationStep {
  readonly migration: Migration
  /** This run's owner id on the lock. */
  readonly owner: string
}

/** Options of a migrator. */
export interface MigratorOptions {
  /** The table prefix (default `leasehold_`). */
  readonly prefix?: string | undefined
  /** Recorded on the lock so an operator can see who holds it (default the OS host name). */
  readonly host?: string | undefined
  /** How long to wait for a lock held elsewhere before failing (default 60 s). */
  readonly lockTimeout?: Duration.DurationInput | undefined
  /** The lease's time to live, renewed before each step (default 60 s). */
  readonly lockTtl?: Duration.DurationInput | undefined
  /** How often to ask again while waiting (default 1 s). */
  readonly pollInterval?: Duration.DurationInput | undefined
  /** The migrations to apply (default leasehold's own); ids must be unique and ascending. */
  readonly migrations?: ReadonlyArray<Migration> | undefined
  /**
   * Runs with the lock held, before each step's renewal. A seam for tests (and diagnostics):
   * it lets a test move the clock or steal the lease between steps.
   */
  readonly onStep?: ((step: MigrationStep) => Effect.Effect<void>) | undefined
}

/** The migration lock as seen at one instant. All fields but the flags are null when it is free. */
export interface MigrationLockState {
  /** A row exists and its lease has not expired. */
  readonly held: boolean
  /** A row exists but its lease has expired (a run will take it over). */
  readonly expired: boolean
  readonly owner: string | null
  readonly host: string | null
  /** Epoch ms when the holder took it. */
  readonly acquiredAt: number | null
  /** Epoch ms when its lease expires. */
  readonly expiresAt: number | null
  /** Now minus acquiredAt. */
  readonly heldForMs: number | null
  /** expiresAt minus now; negative once expired. */
  readonly expiresInMs: number | null
}

/** A migration that has not been applied yet. */
export interface PendingMigration {
  readonly id: number
  readonly name: string
}

/** What `status` reports. */
export interface MigrationStatus {
  readonly applied: ReadonlyArray<AppliedMigration>
  readonly pending: ReadonlyArray<PendingMigration>
  readonly lock: MigrationLockState
}

/** What `run` did. */
export interface MigrationRunResult {
  /** This run's owner id on the lock. */
  readonly owner: string
  /** The migrations this run applied, in order (empty when everything was applied already). */
  readonly applied: ReadonlyArray<AppliedMigration>
}

/** What `unlock` did. */
export interface UnlockResult {
  /** Whether the `migrate` row was removed. */
  readonly removed: boolean
  /** The lock as it was found. */
  readonly lock: MigrationLockState
}

/** How `run` can fail. */
export type MigrationRunError =
  | SqlError
  | LeaseInputError
  | MigrationLockTimeoutError
  | MigrationLockLostError
  | MigrationInTransactionError

/** The migrator's operations. */
export interface MigratorApi {
  readonly tables: TableNames
  /** The table the migration lock lives in (never the job lock table). */
  readonly lockTable: string
  /** Applies every pending migration under the migration lock. */
  readonly run: Effect.Effect<MigrationRunResult, MigrationRunError>
  /** Applied and pending migrations, and the lock. Reads only; creates nothing. */
  readonly status: Effect.Effect<MigrationStatus, SqlError>
  /**
   * Removes the `migrate` row if its lease has expired, or with `force` even if it has not
   * (only when you know the holder is gone: a live run would go on without the lock).
   */
  readonly unlock: (options?: { readonly force?: boolean | undefined }) => Effect.Effect<UnlockResult, SqlError>
}

/** The Migrator service. */
export class Migrator extends Context.Tag("leasehold/Migrator")<Migrator, MigratorApi>() {}

const FREE: MigrationLockState = {
  held: false,
  expired: false,
  owner: null,
  host: null,
  acquiredAt: null,
  expiresAt: null,
  heldForMs: null,
  expiresInMs: null
}

const lockState = (row: Option.Option<LeaseRow>, now: number): MigrationLockState =>
  Option.match(row, {
    onNone: () => FREE,
    onSome: (r) => ({
      held: !isExpired(r.expiresAt, now),
      expired: isExpired(r.expiresAt, now),
      owner: r.owner,
      host: r.host,
      acquiredAt: r.acquiredAt,
      expiresAt: r.expiresAt,
      heldForMs: now - r.acquiredAt,
      expiresInMs: r.expiresAt - now
    })
  })

const positiveMillis = (name: string, input: Duration.DurationInput, allowZero: boolean): number => {
  const ms = Duration.toMillis(Duration.decode(input))
  if (!Number.isFinite(ms) || ms < 0 || (!allowZero && ms === 0)) {
    throw new RangeError(`migrator ${name} must be a finite duration${allowZero ? "" : " above zero"}: ${ms} ms`)
  }
  return Math.ceil(ms)
}

const checkMigrations = (list: ReadonlyArray<Migration>): ReadonlyArray<Migration> => {
  list.forEach((m, i) => {
    if (!Number.isSafeInteger(m.id) || m.id <= 0) {
      throw new RangeError(`migration id must be a positive integer: ${m.id}`)
    }
    const before = list[i - 1]
    if (before !== undefined && before.id >= m.id) {
      throw new RangeError(`migration ids must be unique and ascending: ${before.id} then ${m.id}`)
    }
  })
  return list
}

// The lock table's row name is a constant that always fits, so an input error here is a bug.
const dieOnInput = <A>(effect: Effect.Effect<A, SqlError | LeaseInputError>): Effect.Effect<A, SqlError> =>
  Effect.catchTag(effect, "LeaseInputError", (e) => Effect.die(e))

/** Builds a migrator over any backend; `make` and `makeMemory` are this with their backend. */
export const makeWith = (backend: MigrationStore, options: MigratorOptions = {}): MigratorApi => {
  const { lock, tables } = backend
  const host = options.host ?? hostname()
  const timeoutMs = positiveMillis("lockTimeout", options.lockTimeout ?? DEFAULT_LOCK_TIMEOUT, true)
  const ttlMs = positiveMillis("lockTtl", options.lockTtl ?? DEFAULT_LOCK_TTL, false)
  const pollMs = positiveMillis("pollInterval", options.pollInterval ?? DEFAULT_POLL_INTERVAL, false)
  const list = checkMigrations(options.migrations ?? leaseholdMigrations)
  const onStep = options.onStep

  const readLock = Effect.flatMap(
    lock.tableExists,
    (exists) => exists ? dieOnInput(lock.read(LOCK_NAME)) : Effect.succeed(Option.none<LeaseRow>())
  )

  const waitForLock = (owner: string) =>
    Effect.gen(function*() {
      const start = yield* Clock.currentTimeMillis
      let logged = false
      while (true) {
        if (yield* lock.tryAcquire({ name: LOCK_NAME, owner, host, ttlMs })) return
        const now = yield* Clock.currentTimeMillis
        const waited = now - start
        if (waited >= timeoutMs) {
          const holder = yield* dieOnInput(lock.read(LOCK_NAME))
          return yield* new MigrationLockTimeoutError({
            table: lock.table,
            owner: Option.match(holder, { onNone: () => null, onSome: (r) => r.owner }),
            host: Option.match(holder, { onNone: () => null, onSome: (r) => r.host }),
            expiresAt: Option.match(holder, { onNone: () => null, onSome: (r) => r.expiresAt }),
            waitedMs: waited,
            timeoutMs,
            unlockCommand: MIGRATE_UNLOCK_COMMAND
          })
        }
        if (!logged) {
          logged = true
          const holder = lockState(yield* dieOnInput(lock.read(LOCK_NAME)), now)
          yield* Effect.logInfo(
            `waiting up to ${timeoutMs} ms for the migration lock, held by ${holder.owner ?? "nobody"} on ${
              holder.host ?? "?"
            }`
          )
        }
        yield* Effect.sleep(Duration.millis(Math.min(pollMs, timeoutMs - waited)))
      }
    })

  // Renews our lease, or fails with who holds it instead.
  const stillOurs = (owner: string, migration: Migration) =>
    Effect.gen(function*() {
      if (yield* lock.renew({ name: LOCK_NAME, owner, ttlMs })) return
      const holder = yield* dieOnInput(lock.read(LOCK_NAME))
      return yield* new MigrationLockLostError({
        table: lock.table,
        owner,
        holder: Option.match(holder, { onNone: () => null, onSome: (r) => r.owner }),
        holderHost: Option.match(holder, { onNone: () => null, onSome: (r) => r.host }),
        migrationId: migration.id,
        migrationName: migration.name
      })
    })

  // Owner-fenced, so it never removes a lease someone took over from us (or one we never had).
  const release = (owner: string) =>
    lock.release({ name: LOCK_NAME, owner }).pipe(
      Effect.catchAllCause((cause) =>
        Effect.logWarning("could not release the migration lock; it expires by itself", cause)
      ),
      Effect.asVoid
    )

  const steps = (owner: string) =>
    Effect.gen(function*() {
      yield* waitForLock(owner)
      // Read under the lock: a run that waited for another finds its work done.
      const done = new Set((yield* backend.applied).map((a) => a.id))
      const applied: Array<AppliedMigration> = []
      for (const migration of list) {
        if (done.has(migration.id)) continue
        if (onStep !== undefined) yield* onStep({ migration, owner })
        yield* stillOurs(owner, migration)
        yield* Effect.logInfo(`applying leasehold migration ${migration.id}: ${migration.name}`)
        yield* backend.apply(migration)
        // Record only while it is still ours: if the lease ran out during the step, the new
        // holder re-applies it (migrations are idempotent) and records it once.
        yield* stillOurs(owner, migration)
        const row: AppliedMigration = {
          id: migration.id,
          name: migration.name,
          appliedAt: yield* Clock.currentTimeMillis
        }
        yield* backend.record(row)
        applied.push(row)
      }
      return { owner, applied } satisfies MigrationRunResult
    })

  const run: Effect.Effect<MigrationRunResult, MigrationRunError> = Effect.gen(function*() {
    if (yield* backend.inTransaction) return yield* new MigrationInTransactionError({ table: tables.migrations })
    yield* backend.prepare
    const owner = randomUUID()
    // The release covers the wait too: interrupted right after winning the lock, we still
    // give it back; never having won it, the owner-fenced delete matches nothing.
    return yield* Effect.ensuring(steps(owner), release(owner))
  })

  const status: Effect.Effect<MigrationStatus, SqlError> = Effect.gen(function*() {
    const applied = (yield* backend.hasMigrationsTable) ? yield* backend.applied : []
    const done = new Set(applied.map((a) => a.id))
    const row = yield* readLock
    const now = yield* Clock.currentTimeMillis
    return {
      applied,
      pending: list.filter((m) => !done.has(m.id)).map((m) => ({ id: m.id, name: m.name })),
      lock: lockState(row, now)
    }
  })

  const unlock = (unlockOptions: { readonly force?: boolean | undefined } = {}) =>
    Effect.gen(function*() {
      const row = yield* readLock
      const now = yield* Clock.currentTimeMillis
      const found = lockState(row, now)
      if (Option.isNone(row)) return { removed: false, lock: found }
      // Fenced by the owner we read: if someone took it over meanwhile, nothing is removed.
      const removed = yield* dieOnInput(lock.release({
        name: LOCK_NAME,
        owner: row.value.owner,
        expiredBefore: unlockOptions.force === true ? undefined : now
      }))
      if (removed) {
        yield* Effect.logWarning(`removed the migration lock held by ${row.value.owner} on ${row.value.host ?? "?"}`)
      }
      return { removed, lock: found }
    })

  return Migrator.of({ tables, lockTable: lock.table, run, status, unlock })
}

// ---------------------------------------------------------------------------------------------
// SQL

/**
 * A migrator over the current `SqlClient` (PostgreSQL, MySQL/MariaDB or SQLite). Library SQL
 * runs without the app's name transforms.
 */
export const make = (options: MigratorOptions = {}): Effect.Effect<MigratorApi, never, SqlClient.SqlClient> =>
  Effect.map(makeMigrationStore(options), (store) => makeWith(store, options))

/** A layer providing `Migrator` over the current `SqlClient`. */
export const layer = (options: MigratorOptions = {}): Layer.Layer<Migrator, never, SqlClient.SqlClient> =>
  Layer.effect(Migrator, make(options))

// ---------------------------------------------------------------------------------------------
// Memory

/** A migrator for the in-memory store: "creating" a table adds an empty map under its name. */
export const makeMemory = (db: MemoryDatabaseApi, options: MigratorOptions = {}): MigratorApi =>
  makeWith(makeMemoryMigrationStore(db, options), options)

/** A layer providing `Migrator` for the `MemoryDatabase`. */
export const memoryLayer = (options: MigratorOptions = {}): Layer.Layer<Migrator, never, MemoryDatabase> =>
  Layer.effect(Migrator, Effect.map(MemoryDatabase, (db) => makeMemory(db, options)))
