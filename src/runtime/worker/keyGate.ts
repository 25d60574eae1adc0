/**
 * The long-running worker's view of the keys its own attempts hold (docs/behaviour.md §9, "A
 * busy key in one worker"). When attempts of this worker hold every slot of a key, the lease is
 * busy without asking the database:
 * - one other attempt of the key (the best by hand-off order) waits here, at most
 *   `GATE_WAIT_MS`, for one of them to end, then takes its lease as usual. The holder's release
 *   wakes no waiter in the database for it (the waiter here is next; but never more than
 *   `MAX_SKIPPED_HAND_OFFS` releases in a row), so the key's next run starts one round trip
 *   after the last one ended instead of after a hand-off, a wake-up and a claim (issue 13's hot
 *   key);
 * - any other attempt defers at once, by the holder's expiry, without reading the lease;
 * - an attempt that starts on a key that was busy here lately, with no attempt waiting, makes
 *   the key's best waiter in the database due, so that it is claimed and waits here meanwhile
 *   (or, if it is better by hand-off order than the attempt that waits by then, in its place).
 *
 * Nothing here replaces the database's rule: leases are taken by the usual atomic statement,
 * another process may take one first (the attempt then defers), and deferred jobs wait in the
 * database. A waiter that was promised the lease and does not take it leaves the hand-off to
 * its runner (`leave`), so no job waits on a hand-off that never comes.
 */
import { Clock, Deferred, Duration, Effect, Option } from "effect"
import { type HandOffRank, handOffOrder } from "../../core/transitions.ts"

/** The longest an attempt waits here for its key before it takes its lease (busy: it defers). */
export const GATE_WAIT_MS = 1_000

/** How many releases of a key in a row may leave its waiters in the database asleep. */
export const MAX_SKIPPED_HAND_OFFS = 7

/** How many recently busy keys the gate remembers. */
const MAX_CONTENDED = 1_000

interface Waiter {
  readonly token: string
  readonly expiresAt: number
  readonly rank: HandOffRank
  /** Resolved with true when its turn comes, false when a better attempt took its place. */
  readonly turn: Deferred.Deferred<boolean>
  /** A holder skipped its release's hand-off for this waiter: it must take the lease or hand off. */
  promised: boolean
}

interface Entry {
  /** This worker's attempts holding (or taking) a slot of the key: claim token → lease expiry. */
  readonly holders: Map<string, number>
  waiter: Waiter | undefined
  /** Holders that began writing their outcome or left, ever; holders writing their outcome now. */
  releases: number
  finishingNow: number
  /** Releases in a row that skipped their hand-off. */
  skipped: number
  /** A promised waiter went away before its turn came: the next leave hands off. */
  owedHandOff: boolean
}

interface Holder {
  readonly name: string
  finishing: boolean
  /** Made a holder by a leave that skipped its hand-off, and has not taken the lease yet. */
  owes: boolean
}

/**
 * What an attempt of a key finds here:
 * - `Open`: not every slot is held by this worker; take the lease as usual.
 * - `Waited`: it waited `ms` for a holder here to end; take the lease now.
 * - `Busy`: every slot is held here and a better attempt waits: defer until `expiresAt` (the
 *   first holder's lease expiry). `releasedMeanwhile()`, asked after the deferral is written,
 *   says whether a holder may have released (or left) without seeing it: then look at the lease,
 *   as any deferral does.
 */
export type Turn =
  | { readonly _tag: "Open" }
  | { readonly _tag: "Waited"; readonly ms: number }
  | {
    readonly _tag: "Busy"
    readonly holder: string
    readonly expiresAt: number
    readonly releasedMeanwhile: () => boolean
  }

/** The keys this worker's attempts hold, and the attempt waiting on each. */
export interface KeyGate {
  /**
   * Where the attempt of `token` (job `rank`) on lease `name` (with `limit` slots) stands; may
   * wait (see `Turn`). Unless `Busy`, the attempt counts as a holder from then on (with the lease
   * expiry it will ask for) until `leave`, so two attempts never both find the key open here
   * while one of them is still taking the lease.
   */
  readonly turn: (
    name: string,
    limit: number,
    token: string,
    expiresAt: number,
    rank: HandOffRank
  ) => Effect.Effect<Turn>
  /** The attempt of `token` holds a slot of `name` until `expiresAt` (taken, or renewed). */
  readonly enter: (name: string, token: string, expiresAt: number) => Effect.Effect<void>
  /**
   * Whether the attempt starting on `name` should make the key's best waiter in the database due
   * now: the key was busy here within the last `GATE_WAIT_MS`, and no attempt waits here.
   */
  readonly wakeNext: (name: string) => Effect.Effect<boolean>
  /**
   * The attempt of `token` is about to write its outcome and release its lease. True: its
   * release should wake nobody in the database, since the attempt waiting here takes the lease
   * next (it is promised it).
   */
  readonly finishing: (token: string) => Effect.Effect<boolean>
  /**
   * The attempt of `token` ended (its outcome written and its lease released, or it deferred,
   * or it was stopped): its waiter becomes a holder in its place and goes on. A lease name when
   * the caller should hand it off: a hand-off was skipped for an attempt that did not take it.
   */
  readonly leave: (token: string) => Effect.Effect<string | undefined>
}

/** A gate for one worker's attempts. */
export const makeKeyGate = (): KeyGate => {
  const keys = new Map<string, Entry>()
  const heldBy = new Map<string, Holder>()
  // When each key last had an attempt wait or defer here (insertion order: oldest first).
  const contended = new Map<string, number>()
  const noteContended = (name: string, now: number) => {
    contended.delete(name)
    contended.set(name, now)
    if (contended.size > MAX_CONTENDED) contended.delete(contended.keys().next().value!)
  }
  const entry = (name: string): Entry => {
    let e = keys.get(name)
    if (e === undefined) {
      keys.set(
        name,
        e = {
          holders: new Map(),
          waiter: undefined,
          releases: 0,
          finishingNow: 0,
          skipped: 0,
          owedHandOff: false
        }
      )
    }
    return e
  }
  const tidy = (name: string, e: Entry) => {
    if (e.holders.size === 0 && e.waiter === undefined && !e.owedHandOff) keys.delete(name)
  }
  const hold = (name: string, e: Entry, token: string, expiresAt: number, owes: boolean) => {
    e.holders.set(token, expiresAt)
    heldBy.set(token, { name, finishing: false, owes })
  }
  // A waiter that stops waiting without its turn (timed out unpromised, or interrupted).
  const drop = (name: string, e: Entry, w: Waiter) => {
    if (e.waiter === w) e.waiter = undefined
    if (w.promised) e.owedHandOff = true
    tidy(name, e)
  }
  const busy = (name: string, e: Entry): Turn => {
    const [holder, expiresAt] = [...e.holders].reduce((a, b) => (b[1] < a[1] ? b : a))
    const releases = e.releases
    const finishing = e.finishingNow > 0
    return {
      _tag: "Busy",
      holder,
      expiresAt,
      releasedMeanwhile: () => finishing || keys.get(name) !== e || e.releases !== releases
    }
  }
  const wait = (name: string, e: Entry, token: string, expiresAt: number, rank: HandOffRank) =>
    Effect.gen(function*() {
      const w: Waiter = { token, expiresAt, rank, turn: yield* Deferred.make<boolean>(), promised: false }
      e.waiter = w
      const started = yield* Clock.currentTimeMillis
      const waited = Effect.map(Clock.currentTimeMillis, (now) => now - started)
      const onStop = Effect.onInterrupt(() => Effect.sync(() => drop(name, e, w)))
      const woke = yield* onStop(Effect.timeoutOption(Deferred.await(w.turn), Duration.millis(GATE_WAIT_MS)))
      if (Option.isSome(woke)) {
        return woke.value ? { _tag: "Waited", ms: yield* waited } as const : busy(name, e)
      }
      // Timed out: a holder finishing for this waiter makes it wait on (its leave comes soon);
      // else it stops waiting and counts as a holder anyway, to take the lease (or defer).
      const promised = yield* Effect.sync(() => {
        if (w.promised) return true
        if (e.waiter === w) e.waiter = undefined
        hold(name, e, token, expiresAt, false)
        return false
      })
      if (promised) yield* onStop(Deferred.await(w.turn))
      return { _tag: "Waited", ms: yield* waited } as const
    })
  return {
    turn: (name, limit, token, expiresAt, rank) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const e = entry(name)
        if (e.holders.size < limit) {
          hold(name, e, token, expiresAt, false)
          return { _tag: "Open" } as const
        }
        noteContended(name, now)
        const current = e.waiter
        if (current === undefined) return yield* wait(name, e, token, expiresAt, rank)
        // The better of the two waits (core's hand-off order); the other defers.
        if (current.promised || handOffOrder(rank, current.rank) >= 0) return busy(name, e)
        e.waiter = undefined
        yield* Deferred.succeed(current.turn, false)
        return yield* wait(name, e, token, expiresAt, rank)
      }),
    enter: (name, token, expiresAt) =>
      Effect.sync(() => {
        const e = entry(name)
        e.holders.set(token, expiresAt)
        const h = heldBy.get(token)
        if (h === undefined) heldBy.set(token, { name, finishing: false, owes: false })
        else h.owes = false
      }),
    wakeNext: (name) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const at = contended.get(name)
        const e = keys.get(name)
        if (at === undefined || now - at >= GATE_WAIT_MS || e === undefined) return false
        return e.waiter === undefined
      }),
    finishing: (token) =>
      Effect.sync(() => {
        const h = heldBy.get(token)
        const e = h === undefined ? undefined : keys.get(h.name)
        if (h === undefined || e === undefined || h.finishing) return false
        h.finishing = true
        e.releases++
        e.finishingNow++
        // Every `MAX_SKIPPED_HAND_OFFS + 1`-th release wakes the database's best waiter anyway,
        // so jobs deferred elsewhere (another process) are not kept waiting behind this worker's.
        if (e.waiter === undefined || e.waiter.promised || e.skipped >= MAX_SKIPPED_HAND_OFFS) {
          e.skipped = 0
          return false
        }
        e.skipped++
        e.waiter.promised = true
        return true
      }),
    leave: (token) =>
      Effect.suspend(() => {
        const h = heldBy.get(token)
        if (h === undefined) return Effect.succeed(undefined)
        heldBy.delete(token)
        const e = keys.get(h.name)
        if (e === undefined) return Effect.succeed(h.owes ? h.name : undefined)
        e.holders.delete(token)
        e.releases++
        if (h.finishing) e.finishingNow--
        const waiter = e.waiter
        const owed = e.owedHandOff || h.owes ? h.name : undefined
        e.waiter = undefined
        e.owedHandOff = false
        if (waiter === undefined) {
          tidy(h.name, e)
          return Effect.succeed(owed)
        }
        // The waiter holds from now: no attempt arriving meanwhile finds the key open.
        hold(h.name, e, waiter.token, waiter.expiresAt, waiter.promised)
        return Effect.as(Deferred.succeed(waiter.turn, true), owed)
      })
  }
}
