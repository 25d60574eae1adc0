/**
 * The order the dashboard browses jobs in, and its minutes (src/ports/JobInsights.ts): newest
 * first, ties by id descending, so a cursor (creation time, id) names one place in the order and
 * the next page is "everything strictly after it".
 */
import type { JobRow } from "./model.ts"

/** One minute in ms: the activity chart's bucket. */
export const MINUTE_MS = 60_000

/** The start of the minute `ms` falls in (epoch ms). */
export const minuteOf = (ms: number): number => ms - (ms % MINUTE_MS)

/** Compares two jobs in browsing order: newest `createdAt` first, then id descending. */
export const newestFirst = (a: Pick<JobRow, "createdAt" | "id">, b: Pick<JobRow, "createdAt" | "id">): number =>
  b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)

/** Whether `row` comes strictly after `cursor` in browsing order. */
export const isAfterCursor = (
  row: Pick<JobRow, "createdAt" | "id">,
  cursor: { readonly createdAt: number; readonly id: string }
): boolean => newestFirst(cursor, row) < 0
