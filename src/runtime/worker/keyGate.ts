/**
 * The long-running worker's view of the keys its own attempts hold (docs/behaviour.md §9, "A
 * busy key in one worker"). When attempts of this worker hold every slot of a key, the lease is
 * busy without asking the database:
 * - one other attempt of the key (the best by hand-off order) waits here, at most
 *   `GATE_WAIT_MS`, for one of them to end. The holder that ends first is promised to it: its
 *   outcome write passes the lease straight to the waiter, with a new fencing token, and wakes
 *   no waiter in the database, so the key's next run starts one round trip after the last one
 *   ended. Every `MAX_SKIPPED_HAND_OFFS + 1`-th holder in a row passes it
 *   only if no job waits on the key in the database asleep (else it releases and hands off to
 *   that one). The waiter starts as soon as the write returns (`passedOn`). A waiter not passed
 *   the lease (its wait timed out, or the write did not pass it) takes it as usual;
 * - any other attempt defers at once, by the holder's expiry, without reading the lease. The
 *   worker's claim rarely brings one (./keyClaims.ts): only a job better than the one waiting,
 *   which takes its place (the other defers);
 * - an attempt that starts on a key on which attempts deferred here, with no attempt waiting,
 *   makes the key's best waiter in the database due, so that it is claimed and waits here
 *   meanwhile.
 *
 * Nothing here replaces the database's rule: leases are taken or passed on by owner-fenced
 * statements, another process may take one first (the attempt then defers), and deferred jobs
 * wait in the database. A waiter that was promised the lease and does not take it leaves the
 * hand-off to its runner (`leave`); one passed the lease that does not run gives it back and
 * hands off; so no job waits on a hand-off that never comes.
 */
import { Clock, Deferred, Duration, Effect, Exit } from "effect"
import { leaseExpiresAt } from "../../core/lease.ts"
import { type HandOffRank, handOffOrder } from "../../core/transitions.ts"
import { type Watch, watch } from "./watchdog.ts"

/** The longest an attempt waits here for its key before it takes its lease (busy: it defers). */
export const GATE_WAIT_MS = 1_000

/**
 * How many holders of a key in a row pass the lease on here whatever waits for it in the
 * database; the next one does only if no job waits there asleep.
 */
export const MAX_SKIPPED_HAND_OFFS = 7

/** How many keys with deferrals to wake the gate remembers. */
const MAX_DEFERRED_KEYS = 1_000

/** A lease a finishing holder passed straight to the waiter (core's FinishInput `transferTo`). */
export interface PassedLease {
  readonly name: string
  readonly fencingToken: bigint
  readonly expiresAt: number
}

/** What a waiting attempt is: its claim token, timeout (for its lease's expiry) and hand-off rank. */
export type WaiterJob = HandOffRank & { readonly claimTimeout: number | null }

/** How a wait in the gate ends. */
type Woke = "turn" | "displaced" | "late"

interface Waiter {
  readonly token: string
  readonly job: WaiterJob
  expiresAt: number
  /** Resolved when its turn comes, when a better attempt takes its place, or past its wait. */
  readonly turn: Deferred.Deferred<Woke>
  /** A holder skipped its release's hand-off for this waiter: it must take the lease or hand off. */
  promised: boolean
  /** The lease the promising holder passed to it, once that holder's finish did. */
  passed: PassedLease | undefined
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
 * - `Waited`: it waited `ms` for a holder here to end; take the lease now (unless passed it).
 *   `inLine`: the wait ended with its turn (the holder here left, or passed the lease on), not
 *   past GATE_WAIT_MS: the key's next run here is this attempt's. Should another attempt take
 *   the lease first (the job a holder's release woke in the database, or one a claim of the key
 *   took it for meanwhile), it defers due, in its place in the queue, not asleep
 *   (docs/behaviour.md §9).
 * - `Busy`: every slot is held here and a better attempt waits: defer until `expiresAt` (the
 *   first holder's lease expiry). `releasedMeanwhile()`, asked after the deferral is written,
 *   says whether a holder may have released (or left) without seeing it: then look at the lease,
 *   as any deferral does.
 */
export type Turn =
  | { readonly _tag: "Open" }
  | {
    readonly _tag: "Waited"
    readonly ms: number
    readonly lease?: PassedLease | undefined
    readonly inLine: boolean
  }
  | {
    readonly _tag: "Busy"
    readonly holder: string
    readonly expiresAt: number
    readonly releasedMeanwhile: () => boolean
  }

/** The keys this worker's attempts hold, and the attempt waiting on each. */
export interface KeyGate {
  /**
   * Where the attempt of `token` (of `job`) on lease `name` (with `limit` slots) stands; may
   * wait (see `Turn`). Unless `Busy`, the attempt counts as a holder from then on (with the lease
   * expiry it will ask for) until `leave`, so two attempts never both find the key open here
   * while one of them is still taking the lease.
   */
  readonly turn: (name: string, limit: number, token: string, job: WaiterJob) => Effect.Effect<Turn>
  /** The attempt of `token` holds a slot of `name` until `expiresAt` (taken, or renewed). */
  readonly enter: (name: string, token: string, expiresAt: number) => void
  /**
   * Whether the attempt starting on `name` should make the key's best waiter in the database due
   * now: attempts of this worker deferred on the key here (`Busy`) more often than starts have
   * woken one since, and no attempt waits here.
   */
  readonly wakeNext: (name: string) => boolean
  /**
   * The attempt of `token` is about to write its outcome and release its lease. Defined: the
   * attempt waiting here is promised the lease next, so the finish should pass the lease to it
   * (its claim token `owner`, until `expiresAt`, a lease window from `now`) rather than release it
   * and wake anybody in the database; with `unlessWaiting`, only if no job waits on it in the
   * database asleep.
   */
  readonly finishing: (
    token: string,
    now: number
  ) => { readonly owner: string; readonly expiresAt: number; readonly unlessWaiting: boolean } | undefined
  /**
   * The finish of the attempt of `token` passed `lease` to the waiter it was promised to, which
   * starts with it at once. False: that waiter is gone (its worker is stopping), and the caller
   * gives the lease back for it. Undefined: the finish released the lease and handed it off
   * instead (`unlessWaiting`: a job waited on it in the database); the waiter takes it as usual.
   */
  readonly passedOn: (token: string, lease: PassedLease | undefined) => boolean
  /**
   * The attempt of `token` ended (its outcome written and its lease released, or it deferred,
   * or it was stopped): its waiter becomes a holder in its place and goes on. A lease name when
   * the caller should hand it off: a hand-off was skipped for an attempt that did not take it.
   */
  readonly leave: (token: string) => string | undefined
}

/** A gate for one worker's attempts; waits are timed by `timer` (the worker's watchdog). */
export const makeKeyGate = (timer: Watch = watch): KeyGate => {
  const keys = new Map<string, Entry>()
  const heldBy = new Map<string, Holder>()
  // Per key, the deferrals here (`Busy`) that no start has woken yet (insertion order: oldest first).
  const deferredHere = new Map<string, number>()
  const noteDeferred = (name: string) => {
    const n = deferredHere.get(name) ?? 0
    deferredHere.delete(name)
    deferredHere.set(name, n + 1)
    if (deferredHere.size > MAX_DEFERRED_KEYS) deferredHere.delete(deferredHere.keys().next().value!)
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
  // The attempt of `token` leaves its key: the waiter, if any, holds from now (no attempt arriving
  // meanwhile finds the key open) and is woken. A lease name when the caller should hand it off.
  const quit = (token: string): string | undefined => {
    const h = heldBy.get(token)
    if (h === undefined) return undefined
    heldBy.delete(token)
    const e = keys.get(h.name)
    if (e === undefined) return h.owes ? h.name : undefined
    e.holders.delete(token)
    e.releases++
    if (h.finishing) e.finishingNow--
    const waiter = e.waiter
    const owed = e.owedHandOff || h.owes ? h.name : undefined
    e.waiter = undefined
    e.owedHandOff = false
    if (waiter === undefined) {
      tidy(h.name, e)
      return owed
    }
    hold(h.name, e, waiter.token, waiter.expiresAt, waiter.promised && waiter.passed === undefined)
    Deferred.unsafeDone(waiter.turn, Exit.succeed("turn"))
    return owed
  }
  const busy = (name: string, e: Entry): Turn => {
    noteDeferred(name)
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
  const wait = (name: string, e: Entry, token: string, expiresAt: number, job: WaiterJob) =>
    Effect.gen(function*() {
      const turn = yield* Deferred.make<Woke>()
      const w: Waiter = { token, job, expiresAt, turn, promised: false, passed: undefined }
      e.waiter = w
      const started = yield* Clock.currentTimeMillis
      // Past GATE_WAIT_MS it stops waiting and counts as a holder anyway, to take the lease (or
      // defer); unless a holder finishing for it promised it the lease: then it waits on (that
      // holder's leave comes soon). Decided in the timer's callback, in one step with the rest
      // of the gate's state, and by the worker's shared timer (no fiber or race per wait).
      const cancel = yield* timer(
        Duration.millis(GATE_WAIT_MS),
        Effect.sync(() => {
          if (w.promised) return
          if (e.waiter === w) e.waiter = undefined
          hold(name, e, token, expiresAt, false)
          Deferred.unsafeDone(w.turn, Exit.succeed("late"))
        })
      )
      const woke = yield* Effect.onInterrupt(
        Deferred.await(w.turn),
        () => Effect.zipRight(Effect.sync(() => drop(name, e, w)), cancel)
      )
      if (woke !== "late") yield* cancel
      if (woke === "displaced") return busy(name, e)
      const ms = (yield* Clock.currentTimeMillis) - started
      return { _tag: "Waited", ms, lease: w.passed, inLine: woke === "turn" } as const
    })
  return {
    turn: (name, limit, token, job) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const expiresAt = leaseExpiresAt(now, job.claimTimeout)
        const e = entry(name)
        if (e.holders.size < limit) {
          hold(name, e, token, expiresAt, false)
          return { _tag: "Open" } as const
        }
        const current = e.waiter
        if (current === undefined) return yield* wait(name, e, token, expiresAt, job)
        // The better of the two waits (core's hand-off order); the other defers.
        if (current.promised || handOffOrder(job, current.job) >= 0) return busy(name, e)
        e.waiter = undefined
        yield* Deferred.succeed(current.turn, "displaced")
        return yield* wait(name, e, token, expiresAt, job)
      }),
    // enter, wakeNext and finishing are plain calls, not effects: the attempt of every job with
    // a key makes each once, and as effects each would be steps of its own.
    enter: (name, token, expiresAt) => {
      const e = entry(name)
      e.holders.set(token, expiresAt)
      const h = heldBy.get(token)
      if (h === undefined) heldBy.set(token, { name, finishing: false, owes: false })
      else h.owes = false
    },
    wakeNext: (name) => {
      const n = deferredHere.get(name) ?? 0
      if (n === 0 || keys.get(name)?.waiter !== undefined) return false
      if (n === 1) deferredHere.delete(name)
      else deferredHere.set(name, n - 1)
      return true
    },
    finishing: (token, now) => {
      const h = heldBy.get(token)
      const e = h === undefined ? undefined : keys.get(h.name)
      if (h === undefined || e === undefined || h.finishing) return undefined
      h.finishing = true
      e.releases++
      e.finishingNow++
      const w = e.waiter
      if (w === undefined || w.promised) {
        e.skipped = 0
        return undefined
      }
      // Every `MAX_SKIPPED_HAND_OFFS + 1`-th release passes the lease on only if no job waits
      // on it asleep in the database (deferred elsewhere, by another process): else it wakes
      // that one, so jobs deferred elsewhere are not kept waiting behind this worker's.
      const unlessWaiting = e.skipped >= MAX_SKIPPED_HAND_OFFS
      e.skipped = unlessWaiting ? 0 : e.skipped + 1
      w.promised = true
      // Its lease, if passed on, lasts as long as one it took now would.
      w.expiresAt = leaseExpiresAt(now, w.job.claimTimeout)
      return { owner: w.token, expiresAt: w.expiresAt, unlessWaiting }
    },
    passedOn: (token, lease) => {
      const h = heldBy.get(token)
      const e = h === undefined ? undefined : keys.get(h.name)
      const w = e?.waiter
      if (w === undefined || !w.promised) return lease === undefined
      if (lease === undefined) {
        // Released and handed off instead: the waiter takes the lease as usual, and owes nothing.
        w.promised = false
        return true
      }
      w.passed = lease
      // It starts now, not once this attempt has recorded its result: the key is its from here.
      if (!e!.owedHandOff && !h!.owes) quit(token)
      return true
    },
    leave: quit
  }
}
