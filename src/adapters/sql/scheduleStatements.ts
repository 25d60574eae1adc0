/**
 * The schedules table's statements (docs/behaviour.md §14). They read the same on every
 * database, so they are written once and rendered with each dialect's placeholders and quoting;
 * the table's DDL is in each dialect folder's schema.ts.
 */
import type { ScheduleRow } from "../../core/schedules.ts"
import type { TableNames } from "../../core/tables.ts"
import type { AdvanceInput } from "../../ports/ScheduleStore.ts"
import { checkIdentifier, RawSql, sqlFor, type Syntax } from "./statement.ts"

/** The columns of a schedule row, in `decodeScheduleRow`'s names. */
const COLUMNS = "name, cron, time_zone, catch_up, last_slot, next_slot, created_at, updated_at"

/** The schedules statements for one dialect's syntax and one table prefix. */
export const scheduleStatements = (syntax: Syntax, tables: TableNames) => {
  const sql = sqlFor(syntax)
  const t = new RawSql(syntax.quote(checkIdentifier(tables.schedules)))
  const cols = new RawSql(COLUMNS)
  return {
    byName: (name: string) => sql`SELECT ${cols} FROM ${t} WHERE name = ${name}`,
    list: sql`SELECT ${cols} FROM ${t} ORDER BY name`,
    // A plain INSERT: a worker that loses the race to register gets a duplicate-key error outside
    // any transaction, reads the row back and carries on (./ScheduleStore.ts).
    insert: (r: ScheduleRow) =>
      sql`INSERT INTO ${t} (${cols}) VALUES (${r.name}, ${r.cron}, ${r.timeZone}, ${r.catchUp}, ${r.lastSlot}, ${r.nextSlot}, ${r.createdAt}, ${r.updatedAt})`,
    redefine: (r: ScheduleRow) =>
      sql`UPDATE ${t} SET cron = ${r.cron}, time_zone = ${r.timeZone}, catch_up = ${r.catchUp}, next_slot = ${r.nextSlot}, updated_at = ${r.updatedAt} WHERE name = ${r.name}`,
    // The compare-and-set: the row moves only from the last slot the worker read. Concurrent
    // workers queue on the row's lock; the losers find it moved and change nothing.
    advance: (a: AdvanceInput) =>
      a.from === null
        ? sql`UPDATE ${t} SET last_slot = ${a.slot}, next_slot = ${a.nextSlot}, updated_at = ${a.now} WHERE name = ${a.name} AND last_slot IS NULL`
        : sql`UPDATE ${t} SET last_slot = ${a.slot}, next_slot = ${a.nextSlot}, updated_at = ${a.now} WHERE name = ${a.name} AND last_slot = ${a.from}`
  }
}
