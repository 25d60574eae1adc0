/**
 * The SQL ScheduleStore (the port in src/ports/ScheduleStore.ts) on PostgreSQL, MySQL/MariaDB
 * and SQLite: the schedules table, and the compare-and-set that makes one enqueue per slot.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option } from "effect"
import { decodeEpochMs } from "../../core/lease.ts"
import type { CatchUp, ScheduleRow } from "../../core/schedules.ts"
import { tableNames } from "../../core/tables.ts"
import { ScheduleStore, type ScheduleStoreApi } from "../../ports/ScheduleStore.ts"
import { hintingMissingSchema } from "../schemaErrors.ts"
import { dialectOf } from "./dialects.ts"
import { retryTransient } from "./retry.ts"
import { scheduleStatements } from "./scheduleStatements.ts"
import type { Statement } from "./statement.ts"
import { readCommittedTransaction } from "./transaction.ts"

const msOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : decodeEpochMs(v))

/** Decodes a schedules row from any driver (BIGINT as string, number or bigint). */
export const decodeScheduleRow = (r: Record<string, unknown>): ScheduleRow => ({
  name: String(r.name),
  cron: String(r.cron),
  timeZone: String(r.time_zone),
  catchUp: String(r.catch_up) as CatchUp,
  lastSlot: msOrNull(r.last_slot),
  nextSlot: msOrNull(r.next_slot),
  createdAt: decodeEpochMs(r.created_at),
  updatedAt: decodeEpochMs(r.updated_at)
})

/** Builds the SQL ScheduleStore over the current `SqlClient` for one table prefix. */
export const make = (
  options: { readonly prefix?: string | undefined } = {}
): Effect.Effect<ScheduleStoreApi, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const dialect = dialectOf(sql)
    const tables = tableNames(options.prefix)
    const s = scheduleStatements(dialect.syntax, tables)
    const rows = (st: Statement) =>
      sql.unsafe<Record<string, unknown>>(st.sql, st.params as Array<unknown>).withoutTransform
    const changed = (st: Statement) =>
      Effect.map(sql.unsafe(st.sql, st.params as Array<unknown>).raw, dialect.affectedRows)
    const get = (name: string) =>
      Effect.map(rows(s.byName(name)), (r) => Option.map(Option.fromNullable(r[0]), decodeScheduleRow))
    // The enqueue joins this transaction; on MySQL/MariaDB at READ COMMITTED like every job write
    // (docs/retries.md), so the job insert takes no gap locks a claim could deadlock on.
    const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      dialect.jobs.isolation === "readCommitted" ? readCommittedTransaction(sql, effect) : sql.withTransaction(effect)

    return hintingMissingSchema(ScheduleStore.of({
      tables,
      register: (row) =>
        Effect.gen(function*() {
          const existing = yield* get(row.name)
          if (Option.isSome(existing)) return existing.value
          const inserted = yield* Effect.either(changed(s.insert(row)))
          // Another worker inserted it first (a duplicate key): its row is the one.
          const stored = yield* get(row.name)
          if (Option.isSome(stored)) return stored.value
          if (inserted._tag === "Left") return yield* Effect.fail(inserted.left)
          return yield* Effect.dieMessage(`schedule ${row.name} was inserted and then not found`)
        }),
      redefine: (row) => Effect.asVoid(changed(s.redefine(row))),
      get,
      list: Effect.map(rows(s.list), (r) => r.map(decodeScheduleRow)),
      advance: (input, then) =>
        Effect.flatMap(Effect.context<Effect.Effect.Context<typeof then>>(), (context) =>
          retryTransient(
            dialect,
            "schedule",
            transaction(Effect.gen(function*() {
              if ((yield* changed(s.advance(input))) === 0) return Option.none()
              return Option.some(yield* then)
            })).pipe(Effect.provide(context))
          ))
    }))
  })

/** A layer providing the SQL `ScheduleStore` for one prefix over the current `SqlClient`. */
export const layer = (
  options: { readonly prefix?: string | undefined } = {}
): Layer.Layer<ScheduleStore, never, SqlClient.SqlClient> => Layer.effect(ScheduleStore, make(options))
