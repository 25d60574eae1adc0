/**
 * The in-memory JobStore's tables (jobs, hosts, lost leases) for one prefix, each read and
 * written in one atomic update (./database.ts `modifyTable`), and the guarded row update every
 * job write is. Shared by ./JobStore.ts and ./jobStoreAdmin.ts.
 */
import type { SqlError } from "@effect/sql/SqlError"
import type { Effect } from "effect"
import type { HostRow, JobRow } from "../../core/model.ts"
import type { LostLeaseRow } from "../../core/lostLeases.ts"
import type { TableNames } from "../../core/tables.ts"
import { type MemoryDatabaseApi, modifyTable } from "./database.ts"

/** One table's rows handed to `f`, which returns a result and, optionally, the new rows. */
export type TableUpdate<V> = <A>(
  f: (rows: ReadonlyMap<string, V>) => readonly [A, ReadonlyMap<string, V>?]
) => Effect.Effect<A, SqlError>

/** The jobs, hosts and lost-lease tables of one prefix. */
export interface MemoryJobTables {
  readonly jobsTable: TableUpdate<JobRow>
  readonly hostsTable: TableUpdate<HostRow>
  readonly lostTable: TableUpdate<LostLeaseRow>
  /** Applies `change` to one job row if `guard` holds; true when it changed. */
  readonly update: (
    id: string,
    guard: (row: JobRow) => boolean,
    change: (row: JobRow) => JobRow
  ) => Effect.Effect<boolean, SqlError>
}

/** A copy of `rows` with `row` at `key`. */
export const put = <V>(rows: ReadonlyMap<string, V>, key: string, row: V) => new Map(rows).set(key, row)

/** The job tables of `tables` on `db`. */
export const memoryJobTables = (db: MemoryDatabaseApi, tables: TableNames): MemoryJobTables => {
  const jobsTable: TableUpdate<JobRow> = (f) => modifyTable(db, tables.jobs, f)
  const update = (id: string, guard: (row: JobRow) => boolean, change: (row: JobRow) => JobRow) =>
    jobsTable((rows) => {
      const row = rows.get(id)
      if (row === undefined || !guard(row)) return [false]
      return [true, put(rows, id, change(row))]
    })
  return {
    jobsTable,
    hostsTable: (f) => modifyTable(db, tables.hosts, f),
    lostTable: (f) => modifyTable(db, tables.lostLeases, f),
    update
  }
}
