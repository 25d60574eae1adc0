/**
 * The ScheduleStore port (docs/behaviour.md §14): the schedules table of recurring jobs, one row
 * per scheduled job type. Exactly one enqueue per slot rests on `advance`, a compare-and-set of
 * the row's last slot that runs the enqueue in the same transaction. Implementations:
 * src/adapters/sql/ScheduleStore.ts and src/adapters/memory/ScheduleStore.ts.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Context, type Effect, type Option } from "effect"
import type { ScheduleRow } from "../core/schedules.ts"
import type { TableNames } from "../core/tables.ts"

/** One compare-and-set of a schedule's last slot. */
export interface AdvanceInput {
  readonly name: string
  /** The last slot as read (null: none yet): the row moves only if it still holds this. */
  readonly from: number | null
  readonly slot: number
  /** The slot after `slot`, shown as the next one. */
  readonly nextSlot: number | null
  readonly now: number
}

/** The schedules-table operations. */
export interface ScheduleStoreApi {
  readonly tables: TableNames
  /**
   * Inserts `row` unless a row of that name exists (several workers may race: one row results),
   * and returns the row as stored.
   */
  readonly register: (row: ScheduleRow) => Effect.Effect<ScheduleRow, SqlError>
  /** Rewrites a row's cron, time zone, catch-up policy and next slot (the app changed its definition). */
  readonly redefine: (row: ScheduleRow) => Effect.Effect<void, SqlError>
  readonly get: (name: string) => Effect.Effect<Option.Option<ScheduleRow>, SqlError>
  /** Every schedule, by name. */
  readonly list: Effect.Effect<ReadonlyArray<ScheduleRow>, SqlError>
  /**
   * Moves the row's last slot from `input.from` to `input.slot` and, in the same transaction,
   * runs `then` (the enqueue): Some with its result, or None, and `then` never runs, when another
   * worker moved the row first. If `then` fails, the row does not move.
   */
  readonly advance: <A, E, R>(
    input: AdvanceInput,
    then: Effect.Effect<A, E, R>
  ) => Effect.Effect<Option.Option<A>, E | SqlError, R>
}

/** The ScheduleStore service. */
export class ScheduleStore extends Context.Tag("leasehold/ScheduleStore")<ScheduleStore, ScheduleStoreApi>() {}
