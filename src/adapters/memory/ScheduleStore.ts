/**
 * The in-memory ScheduleStore (src/ports/ScheduleStore.ts): the model of the SQL one. `advance`
 * runs its compare-and-set and the enqueue as one `MemoryDatabase` transaction.
 */
import { Effect, Layer, Option } from "effect"
import type { ScheduleRow } from "../../core/schedules.ts"
import { tableNames } from "../../core/tables.ts"
import { ScheduleStore, type ScheduleStoreApi } from "../../ports/ScheduleStore.ts"
import { MemoryDatabase, type MemoryDatabaseApi, modifyTable } from "./database.ts"

/** Builds the in-memory ScheduleStore on `db` for one prefix (its table made by the migrations). */
export const makeMemoryScheduleStore = (
  db: MemoryDatabaseApi,
  options: { readonly prefix?: string | undefined } = {}
): ScheduleStoreApi => {
  const tables = tableNames(options.prefix)
  const table = <A>(f: (rows: ReadonlyMap<string, ScheduleRow>) => readonly [A, ReadonlyMap<string, ScheduleRow>?]) =>
    modifyTable(db, tables.schedules, f)
  const put = (rows: ReadonlyMap<string, ScheduleRow>, row: ScheduleRow) => new Map(rows).set(row.name, row)
  return ScheduleStore.of({
    tables,
    register: (row) => table((rows) => (rows.has(row.name) ? [rows.get(row.name)!] : [row, put(rows, row)])),
    redefine: (row) =>
      table((rows) => {
        const old = rows.get(row.name)
        if (old === undefined) return [undefined]
        const { catchUp, cron, nextSlot, timeZone, updatedAt } = row
        return [undefined, put(rows, { ...old, cron, timeZone, catchUp, nextSlot, updatedAt })]
      }),
    get: (name) => table((rows) => [Option.fromNullable(rows.get(name))]),
    list: table((rows) => [[...rows.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))]),
    advance: (input, then) =>
      db.withTransaction(Effect.gen(function*() {
        const moved = yield* table((rows): readonly [boolean, ReadonlyMap<string, ScheduleRow>?] => {
          const row = rows.get(input.name)
          if (row === undefined || row.lastSlot !== input.from) return [false]
          return [true, put(rows, { ...row, lastSlot: input.slot, nextSlot: input.nextSlot, updatedAt: input.now })]
        })
        return moved ? Option.some(yield* then) : Option.none()
      }))
  })
}

/** A layer providing the in-memory `ScheduleStore` on the `MemoryDatabase`. */
export const memoryScheduleStoreLayer = (
  options: { readonly prefix?: string | undefined } = {}
): Layer.Layer<ScheduleStore, never, MemoryDatabase> =>
  Layer.effect(ScheduleStore, Effect.map(MemoryDatabase, (db) => makeMemoryScheduleStore(db, options)))
