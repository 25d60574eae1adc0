/**
 * An attempt's rate slot (docs/flow-control.md, src/core/rate.ts): taken after its lease and
 * before perform, held for one period, never released. Every slot busy, perform does not run:
 * the job's lease (if it holds one) is given back, and the job waits pending, its attempt given
 * back, until the slot it was booked into frees.
 *
 * Which slot to try, and when a job that finds none should come back, is decided by a book kept
 * per store in this process (`RateBook`): made from the slots' rows the first time a limit is
 * met, and kept since by this process's own takes and deferrals, so a job is claimed about once
 * for its start and once for its deferral however long its key's backlog. A slot the book thought
 * free but another process took is read again. Only the database's slots decide a start.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Cause, type Clock, Effect, Either, Option } from "effect"
import type { BackoffOptions } from "../../core/jobs.ts"
import type { LeaseRow } from "../../core/lease.ts"
import {
  bookLater,
  firstFreeSlot,
  type RateBook,
  rateBookOf,
  rateLeaseName,
  type RateLimit,
  RATE_START_ALLOWANCE_MS,
  rateSlotExpiresAt,
  rateSlotFree,
  rateSlotFreeAt,
  rateSlotNames,
  rateSlotOwner,
  takeBooking
} from "../../core/rate.ts"
import type { JobLeases, JobStore } from "../../ports/JobStore.ts"
import type { LeaseError, LeaseLockApi } from "../../ports/LeaseLock.ts"
import type { HeldLease } from "../Job.ts"
import type { Attempt, Steps } from "./attemptState.ts"
import { giveBack } from "./claimCheck.ts"
import { deferClaimed, describe, recordFailure } from "./outcome.ts"
import type { ProcessResult } from "./results.ts"

// One book per store (its lease service) and rate name: a store's workers in this process share it.
const books = new WeakMap<object, Map<string, RateBook>>()

const bookFor = (leases: object, name: string, limit: RateLimit): RateBook | undefined => {
  const book = books.get(leases)?.get(name)
  return book !== undefined && book.freeAt.length === limit.limit ? book : undefined
}

const keep = (leases: object, name: string, book: RateBook): void => {
  let byName = books.get(leases)
  if (byName === undefined) books.set(leases, byName = new Map())
  byName.set(name, book)
}

/** A rate slot taken (its lease name and fencing token), or the instant the job may come back. */
type Taken = Either.Either<
  { readonly name: string; readonly token: bigint; readonly takenAt: number; readonly expiresAt: number },
  number
>

/**
 * Takes a free slot of rate limit `name` at `now`, trying the slot the book says frees first; or,
 * by the book every slot busy, books the first to free for this job and returns when that is.
 */
const takeSlot = (
  a: Attempt,
  name: string,
  limit: RateLimit
): Effect.Effect<Taken, LeaseError> =>
  Effect.gen(function*() {
    const leases = a.leases
    const names = rateSlotNames(name, limit.limit)
    let book = bookFor(leases, name, limit)
    if (book === undefined) {
      const rows = yield* Effect.forEach(names, (slot) => leases.read(slot))
      book = rateBookOf(rows.map(Option.getOrUndefined), a.clock.unsafeCurrentTimeMillis())
      keep(leases, name, book)
    }
    // A job booked here comes back to its own slot, which the book counts busy for it: held still
    // (the run before it started late), it waits for that slot again, keeping its place. Any other
    // job tries the slot the book says frees first; each pass takes one or learns that one thought
    // free is busy, so after at most N passes the job is booked into the first to free.
    const booking = takeBooking(book, a.job.id)
    if (booking !== undefined) {
      const taken = yield* tryTake(a, names, book, booking, limit)
      if (taken !== undefined) return taken
    }
    for (let pass = 0; pass < limit.limit; pass++) {
      const slot = firstFreeSlot(book)
      if (book.freeAt[slot]! > a.clock.unsafeCurrentTimeMillis()) break
      const taken = yield* tryTake(a, names, book, undefined, limit, slot)
      if (taken !== undefined && Either.isRight(taken)) return taken
    }
    return Either.left(bookLater(book, limit, a.job.id, a.clock.unsafeCurrentTimeMillis()))
  })

/**
 * Tries to take slot `slot` (a booked job's own, `booking`): the slot taken; or, for a booked job
 * whose slot is still held, the instant it frees (the job booked into it again); or undefined
 * when the slot was busy and the book now says until when.
 */
const tryTake = (
  a: Attempt,
  names: ReadonlyArray<string>,
  book: RateBook,
  booking: { readonly slot: number; readonly at: number } | undefined,
  limit: RateLimit,
  slot = booking!.slot
): Effect.Effect<Taken | undefined, LeaseError> =>
  Effect.gen(function*() {
    const leases = a.leases
    const now = a.clock.unsafeCurrentTimeMillis()
    const expiresAt = rateSlotExpiresAt(now, limit)
    // Counted busy before the round trip, so this process's other attempts try another slot.
    const before = book.freeAt[slot]!
    book.freeAt[slot] = Math.max(before, rateSlotFreeAt(expiresAt))
    const token = yield* leases.tryAcquireToken({
      name: names[slot]!,
      owner: rateSlotOwner(a.token),
      host: a.o.host,
      now,
      expiresAt
    })
    if (Option.isSome(token)) return Either.right({ name: names[slot]!, token: token.value, takenAt: now, expiresAt })
    const row: LeaseRow | undefined = Option.getOrUndefined(yield* leases.read(names[slot]!))
    const freeAt = rateSlotFree(row, now) ? now : rateSlotFreeAt(row!.expiresAt)
    book.freeAt[slot] = Math.max(before, freeAt)
    if (booking === undefined || freeAt <= now) return undefined
    book.booked.set(a.job.id, { slot, at: freeAt })
    return Either.left(freeAt)
  })

/**
 * The rate limit's turn in an attempt: a slot taken (right), or the attempt's result (left) when
 * perform may not start now: the job deferred until its booked slot frees, waiting on the rate
 * name (no hand-off ever wakes it), its attempt given back and `held` given back to the lease's
 * next waiter; or the failure to reach the lock table recorded as the attempt's.
 */
export function* takeRate(
  a: Attempt,
  jobName: string,
  leaseName: string | undefined,
  limit: RateLimit,
  backoff: BackoffOptions,
  heldLease: HeldLease | undefined
): Steps<Either.Either<RateHold, ProcessResult>, SqlError, JobStore | JobLeases> {
  const { job } = a
  const name = rateLeaseName(jobName, leaseName)
  const taken = yield* Effect.either(Effect.zipRight(a.leases.ensureTable, takeSlot(a, name, limit)))
  if (Either.isLeft(taken)) {
    return Either.left(yield* recordFailure(job, backoff, describe(Cause.fail(taken.left)), heldLease))
  }
  const now = a.clock.unsafeCurrentTimeMillis()
  if (Either.isRight(taken.right)) {
    const slot = taken.right.right
    const held: RateHold = { name: slot.name, owner: rateSlotOwner(a.token), movedAt: slot.takenAt, limit }
    // The slot counts a period from its take; perform starts a moment later. A reply that came
    // late (a slow statement, a paused process) moves the slot's end to a period from now, and
    // again while each move's own reply comes late, so no window holds more than N starts of
    // perform, not only N takes. Perform's fiber checks once more as it starts (`rateStart`).
    const moved = yield* moveWhileLate(a.leases, held, a.clock)
    if (moved === undefined) return yield* deferTo(a, name, a.clock.unsafeCurrentTimeMillis(), now, heldLease)
    if (moved.movedAt !== slot.takenAt) {
      // The book counts the slot busy from its move, so the next job is booked for when it frees.
      const book = bookFor(a.leases, name, limit)
      const index = rateSlotNames(name, limit.limit).indexOf(slot.name)
      if (book !== undefined && index >= 0) {
        book.freeAt[index] = Math.max(book.freeAt[index]!, rateSlotFreeAt(rateSlotExpiresAt(moved.movedAt, limit)))
      }
    }
    yield* Effect.logDebug(`rate slot ${slot.name} taken`)
    return Either.right(moved)
  }
  return yield* deferTo(a, name, now, Math.max(taken.right.left, now), heldLease)
}

/** A rate slot an attempt holds: its lease, owner and limit, and when its period was last counted from. */
export interface RateHold {
  readonly name: string
  readonly owner: string
  readonly movedAt: number
  readonly limit: RateLimit
}

/** How often a slot is moved while each move's reply comes late, before the attempt gives up. */
const MAX_MOVES = 5

/**
 * Moves `hold`'s end to a period from now while more than the allowance has passed since it was
 * last counted from: the hold as it stands once a check finds it fresh, or undefined when a move
 * failed (the slot not ours, the table unreachable) or `MAX_MOVES` did not catch up.
 */
const moveWhileLate = (
  leases: LeaseLockApi,
  hold: RateHold,
  clock: Clock.Clock
): Effect.Effect<RateHold | undefined> =>
  Effect.gen(function*() {
    let current = hold
    for (let moves = 0;; moves++) {
      const now = clock.unsafeCurrentTimeMillis()
      if (now - current.movedAt <= RATE_START_ALLOWANCE_MS) return current
      if (moves === MAX_MOVES) return undefined
      const moved = yield* Effect.orElseSucceed(
        leases.renew({
          name: current.name,
          owner: current.owner,
          now,
          expiresAt: rateSlotExpiresAt(now, current.limit)
        }),
        () => false
      )
      if (!moved) return undefined
      current = { ...current, movedAt: now }
    }
  })

/**
 * Run first in perform's own fiber: the slot's period counted from perform's start, moved again
 * if the attempt reached it late. A move that fails here cannot stop a run that is starting: it
 * is logged as a warning (a window may then hold one start more than the limit).
 */
export const rateStart = (leases: LeaseLockApi, hold: RateHold): Effect.Effect<void> =>
  Effect.flatMap(
    Effect.clock,
    (clock) =>
      Effect.flatMap(moveWhileLate(leases, hold, clock), (moved) =>
        moved !== undefined ? Effect.void : Effect.logWarning(
          `rate slot ${hold.name} could not be moved to this run's start; a window of its period may hold one start more than ${hold.limit.limit}`
        ))
  )

/**
 * Defers the job until `retryAt`, waiting on the rate name (no hand-off ever wakes it), its
 * attempt given back and `held` given back to its lease's next waiter.
 */
function* deferTo(
  a: Attempt,
  name: string,
  now: number,
  retryAt: number,
  held: HeldLease | undefined
): Steps<Either.Either<never, ProcessResult>, SqlError, JobStore | JobLeases> {
  if (held !== undefined) yield* giveBack(a.job, held)
  const result = yield* deferClaimed(a.job, now, retryAt, name, null)
  if (result._tag === "Deferred") yield* Effect.logDebug(`rate limit ${name} reached; deferred ${retryAt - now} ms`)
  return Either.left(result)
}
