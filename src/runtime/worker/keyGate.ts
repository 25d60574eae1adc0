/**
 * The long-running worker's view of the keys its own attempts hold (docs/behaviour.md §9, "A
 * busy key in one worker"). When attempts of this worker hold every slot of a key, the lease is
 * busy without asking the database:
 * - the first other attempt of the key waits here, at most `GATE_WAIT_MS`, for one of them to
 *   end, then takes its lease as usual. The holder's release wakes no waiter in the database for
 *   it (the waiter here is next), so the key's next run starts one round trip after the last one
 *   ended instead of after a hand-off, a wake-up and a claim (issue 13's hot key);
 * - any further attempt defers at once, by the holder's expiry, without reading the lease;
 * - an attempt that starts on a key that was busy here lately, with no attempt waiting, makes
 *   the key's next waiter in the database due, so that it is claimed and waits here meanwhile.
 *
 * Nothing here replaces the database's rule: leases are taken by the usual atomic statement,
 * another process may take one first (the attempt then defers), and deferred jobs wait in the
 * database. A waiter that was promised the lease and does not take it hands off in the holder's
 * place, so no job waits on a hand-off that never comes.
 */
import { Clock, Deferred, Duration, Effect, Option } from "effect"

/** The longest an attempt waits here for its key before it takes its lease (busy: it defers). */
export const GATE_WAIT_MS = 1_000

/** How many recently busy keys the gate remembers. */
const MAX_CONTENDED = 1_000

interface Waiter {
  readonly token: string
  readonly expiresAt: number
  readonly turn: Deferred.Deferred<void>
  /** A holder skipped its release's hand-off for this waiter: it must take the lease or hand off. */
  promised: boolean
}

interface Entry {
  /** This worker's attempts holding a slot of the key: claim token → lease expiry. */
  readonly holders: Map<string, number>
  waiter: Waiter | undefined
  /** Holders that began writing their outcome (and releasing), ever, and those doing it now. */
  finishStarts: number
  finishingNow: number
  /** A promised waiter went away (interrupted) before its turn came: the next leave hands off. */
  owedHandOff: boolean
}

/**
 * What an attempt of a key finds here:
 * - `Open`: not every slot is held by this worker; take the lease as usual.
 * - `Waited`: it waited `ms` for a holder here to end; take the lease now. `owesHandOff`: the
 *   holder released without waking the database's next waiter, for this attempt; if it does not
 *   take the lease, it hands off itself.
 * - `Busy`: every slot is held here and another attempt already waits: defer until `expiresAt`
 *   (the first holder's lease expiry). `releasedMeanwhile()`, asked after the deferral is written,
 *   says whether a holder may have released without seeing it (then look at the lease, as any
 *   deferral does).
 */
export type Turn =
  | { readonly _tag: "Open" }
  | { readonly _tag: "Waited"; readonly ms: number; readonly owesHandOff: boolean }
  | {
    readonly _tag: "Busy"
    readonly holder: string
    readonly expiresAt: number
    readonly releasedMeanwhile: () => boolean
  }

/** The keys this worker's attempts hold, and the attempt waiting on each. */
export interface KeyGate {
  /**
   * Where the attempt of `token` on lease `name` (with `limit` slots) stands; may wait (see
   * `Turn`). Unless `Busy`, the attempt counts as a holder from then on (with the lease expiry it
   * will ask for), until `leave`: so two attempts never both find the key open here while one of
   * them is still taking the lease.
   */
  readonly turn: (name: string, limit: number, token: string, expiresAt: number) => Effect.Effect<Turn>
  /**
   * Whether `name` was busy here within the last `GATE_WAIT_MS` and no attempt waits for it now:
   * the attempt starting on it should make the key's next waiter in the database due.
   */
  readonly wantsNext: (name: string) => Effect.Effect<boolean>
  /** The attempt of `token` holds a slot of `name` until `expiresAt` (a lease its claim took, or a new expiry). */
  readonly enter: (name: string, token: string, expiresAt: number) => Effect.Effect<void>
  /**
   * The attempt of `token` is about to write its outcome and release its lease. True: an attempt
   * waits here for the lease, so the release should not wake the database's next waiter.
   */
  readonly finishing: (token: string) => Effect.Effect<boolean>
  /**
   * The attempt of `token` ended (its outcome written, its lease released, or it deferred): its
   * waiter becomes a holder in its place and goes on.
   * A lease name when the caller should hand it off after all (a promised waiter went away).
   */
  readonly leave: (token: string) => Effect.Effect<string | undefined>
}

/** A gate for one worker's attempts. */
export const makeKeyGate = (): KeyGate => {
  const keys = new Map<string, Entry>()
  const heldBy = new Map<string, { readonly name: string; finishing: boolean }>()
  // When each key last had an attempt wait or defer here (insertion order: oldest first).
  const contended = new Map<string, number>()
  const noteContended = (name: string, now: number) => {
    contended.delete(name)
    contended.set(name, now)
    if (contended.size > MAX_CONTENDED) contended.delete(contended.keys().next().value!)
  }
  const tidy = (name: string, e: Entry) => {
    if (e.holders.size === 0 && e.waiter === undefined && !e.owedHandOff) keys.delete(name)
  }
  const entry = (name: string): Entry => {
    let e = keys.get(name)
    if (e === undefined) {
      keys.set(
        name,
        e = { holders: new Map(), waiter: undefined, finishStarts: 0, finishingNow: 0, owedHandOff: false }
      )
    }
    return e
  }
  const hold = (name: string, e: Entry, token: string, expiresAt: number) => {
    e.holders.set(token, expiresAt)
    heldBy.set(token, { name, finishing: false })
  }
  const wait = (name: string, e: Entry, token: string, expiresAt: number) =>
    Effect.gen(function*() {
      const w: Waiter = { token, expiresAt, turn: yield* Deferred.make<void>(), promised: false }
      e.waiter = w
      const started = yield* Clock.currentTimeMillis
      const woke = yield* Effect.timeoutOption(Deferred.await(w.turn), Duration.millis(GATE_WAIT_MS)).pipe(
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            if (e.waiter === w) e.waiter = undefined
            if (w.promised) e.owedHandOff = true
            tidy(name, e)
          })
        )
      )
      // Timed out: a holder finishing for this waiter makes it wait on (its leave comes soon);
      // else it stops waiting and counts as a holder anyway, to take the lease (or defer).
      const promisedMeanwhile = Option.isNone(woke) && (yield* Effect.sync(() => {
        if (w.promised) return true
        if (e.waiter === w) e.waiter = undefined
        hold(name, e, token, expiresAt)
        return false
      }))
      if (promisedMeanwhile) yield* Deferred.await(w.turn)
      return { _tag: "Waited", ms: (yield* Clock.currentTimeMillis) - started, owesHandOff: w.promised } as const
    })
  return {
    turn: (name, limit, token, expiresAt) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const e = entry(name)
        if (e.holders.size < limit) {
          hold(name, e, token, expiresAt)
          return { _tag: "Open" } as const
        }
        noteContended(name, now)
        if (e.waiter === undefined) return yield* wait(name, e, token, expiresAt)
        const [holder, holderExpires] = [...e.holders].reduce((a, b) => (b[1] < a[1] ? b : a))
        const starts = e.finishStarts
        const finishing = e.finishingNow > 0
        return {
          _tag: "Busy",
          holder,
          expiresAt: holderExpires,
          releasedMeanwhile: () => finishing || keys.get(name) !== e || e.finishStarts !== starts
        } as const
      }),
    wantsNext: (name) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const at = contended.get(name)
        return at !== undefined && now - at < GATE_WAIT_MS && keys.get(name)?.waiter === undefined
      }),
    enter: (name, token, expiresAt) => Effect.sync(() => hold(name, entry(name), token, expiresAt)),
    finishing: (token) =>
      Effect.sync(() => {
        const h = heldBy.get(token)
        const e = h === undefined ? undefined : keys.get(h.name)
        if (h === undefined || e === undefined || h.finishing) return false
        h.finishing = true
        e.finishStarts++
        e.finishingNow++
        if (e.waiter === undefined || e.waiter.promised) return false
        e.waiter.promised = true
        return true
      }),
    leave: (token) =>
      Effect.suspend(() => {
        const h = heldBy.get(token)
        if (h === undefined) return Effect.succeed(undefined)
        heldBy.delete(token)
        const e = keys.get(h.name)
        if (e === undefined) return Effect.succeed(undefined)
        e.holders.delete(token)
        if (h.finishing) e.finishingNow--
        const waiter = e.waiter
        const owed = e.owedHandOff ? h.name : undefined
        e.waiter = undefined
        e.owedHandOff = false
        if (waiter === undefined) {
          tidy(h.name, e)
          return Effect.succeed(owed)
        }
        // The waiter holds from now: no attempt arriving meanwhile finds the key open.
        hold(h.name, e, waiter.token, waiter.expiresAt)
        return Effect.as(Deferred.succeed(waiter.turn, undefined), owed)
      })
  }
}
