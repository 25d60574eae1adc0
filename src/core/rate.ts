/**
 * Rate limits as lease slots (docs/flow-control.md): a job type with `rateLimit: { limit: N,
 * period }` has N rate slots per key (per type when it has no key). An attempt takes one as it
 * starts and holds it for one period; it is never released early, so every start in a window
 * [t, t + period) holds a slot of its own and no window holds more than N starts.
 */
import { fitLeaseName, isExpired, type LeaseRow, slotLeaseName } from "./lease.ts"

/** The most starts a rate limit may allow per period (its slots). */
export const MAX_RATE_LIMIT = 1000
/** The longest period a rate limit may have, in ms (one day). */
export const MAX_RATE_PERIOD_MS = 86_400_000

/** A job type's rate limit, checked: at most `limit` starts in any window of `periodMs`. */
export interface RateLimit {
  readonly limit: number
  readonly periodMs: number
}

/**
 * The name a rate limit's slots are counted under: the key's lease name (`key:…`, or `job:…` for an
 * exclusive type), or the type's own `job:<name>` when its jobs take no lease; prefixed `rate:`,
 * hashed past 100 characters (src/core/lease.ts `fitLeaseName`).
 */
export const rateLeaseName = (jobName: string, leaseName: string | undefined): string =>
  fitLeaseName("rate:", leaseName ?? fitLeaseName("job:", jobName))

/** The lease names of a rate limit's N slots, slot 0 first. */
export const rateSlotNames = (rateName: string, limit: number): ReadonlyArray<string> =>
  Array.from({ length: limit }, (_, slot) => slotLeaseName(rateName, slot))

/**
 * The owner written on a rate slot: never the attempt's claim token itself, so that nothing that
 * releases an attempt's leases by owner (a stopping worker's hand-back) frees a slot early.
 */
export const rateSlotOwner = (claimToken: string): string => `rate:${claimToken}`

/** Whether a rate slot's lease is a rate slot owner's (see `rateSlotOwner`). */
export const isRateSlotOwner = (owner: string): boolean => owner.startsWith("rate:")

/**
 * How long after its slot is taken an attempt's perform may start and still fall inside the
 * slot's period: a slot lasts a period and this much from its take, and an attempt whose perform
 * would start later than this moves its slot's end first (src/runtime/worker/rateLimit.ts).
 */
export const RATE_START_ALLOWANCE_MS = 10

/**
 * When a slot taken at `now` frees: a period and the start allowance later (free once that
 * instant is past), so a period from perform's start has passed whenever the slot is taken again.
 */
export const rateSlotExpiresAt = (now: number, limit: RateLimit): number =>
  now + limit.periodMs + RATE_START_ALLOWANCE_MS

/** The first instant a slot expiring at `expiresAt` may be taken again (src/core/lease.ts isExpired). */
export const rateSlotFreeAt = (expiresAt: number): number => expiresAt + 1

/** Whether a slot row (none: never taken) is free at `now`. */
export const rateSlotFree = (row: LeaseRow | undefined, now: number): boolean =>
  row === undefined || isExpired(row.expiresAt, now)

/**
 * A process's view of one rate limit's slots: when each frees, as last seen or as this process
 * itself booked it. It only ever decides when to ask the database and when to defer a job; the
 * slots in the database decide whether a job starts.
 */
export interface RateBook {
  /** Per slot: the first instant it may be free, by what this process knows or has booked. */
  readonly freeAt: Array<number>
  /** Jobs deferred by this process, by id: the slot each was booked into and when. */
  readonly booked: Map<string, { readonly slot: number; readonly at: number }>
}

/** A book made from the slots' rows as read (undefined: never taken, free now). */
export const rateBookOf = (rows: ReadonlyArray<LeaseRow | undefined>, now: number): RateBook => ({
  freeAt: rows.map((row) => (rateSlotFree(row, now) ? now : rateSlotFreeAt(row!.expiresAt))),
  booked: new Map()
})

/** The slot that frees first by the book (the lowest index among equals). */
export const firstFreeSlot = (book: RateBook): number => {
  let best = 0
  for (let i = 1; i < book.freeAt.length; i++) {
    if (book.freeAt[i]! < book.freeAt[best]!) best = i
  }
  return best
}

/**
 * Books the slot that frees first for a job that must wait for it: the job is due when the slot
 * frees (the returned instant), and the slot is counted busy for one period from then, so the
 * next job waiting is given the slot after it rather than the same one.
 */
export const bookLater = (book: RateBook, limit: RateLimit, jobId: string, now: number): number => {
  const slot = firstFreeSlot(book)
  const at = book.freeAt[slot]!
  book.freeAt[slot] = rateSlotFreeAt(rateSlotExpiresAt(at, limit))
  if (book.booked.size >= BOOKINGS_KEPT) forgetPast(book, now - limit.periodMs)
  book.booked.set(jobId, { slot, at })
  return at
}

/** How many bookings a book keeps before it forgets those long past (jobs that never came back). */
const BOOKINGS_KEPT = 10_000

const forgetPast = (book: RateBook, before: number): void => {
  for (const [id, booking] of book.booked) {
    if (booking.at < before) book.booked.delete(id)
  }
}

/** The slot job `jobId` was booked into and when, taken out of the book (none: not booked here). */
export const takeBooking = (
  book: RateBook,
  jobId: string
): { readonly slot: number; readonly at: number } | undefined => {
  const booking = book.booked.get(jobId)
  if (booking !== undefined) book.booked.delete(jobId)
  return booking
}
