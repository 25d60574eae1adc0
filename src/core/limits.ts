/**
 * Limits changed live (docs/flow-control.md, docs/behaviour.md §19): rows of the limits table
 * that override what a job type declares, per job type, queue or concurrency key, and the rules
 * that turn them and a type's declaration into the limits an attempt runs under. Pure: the rows
 * are read by the store (src/ports/JobStore.ts `limits`), the decisions made here.
 */
import { keyProblem, textProblem } from "./input.ts"
import { fitLeaseName, MAX_CONCURRENCY_LIMIT } from "./lease.ts"
import { MAX_RATE_LIMIT, MAX_RATE_PERIOD_MS, type RateLimit } from "./rate.ts"

/** What a limits row applies to: every job of a type, every job of a queue, or one concurrency key. */
export type LimitScope = "type" | "queue" | "key"

/** The scopes, in the order overrides apply (a key's row wins over its type's). */
export const LIMIT_SCOPES: ReadonlyArray<LimitScope> = ["type", "queue", "key"]

/** Longest target (type, queue or key) a limits row holds. */
export const MAX_LIMIT_TARGET_LENGTH = 255

/** One row of the limits table. A null field leaves the job type's own declaration in force. */
export interface LimitRow {
  readonly scope: LimitScope
  /** The job type's name, the queue's, or the concurrency key as the app gives it. */
  readonly target: string
  /** Runs at once per key (a type's row: each of its keys; a key's row: that key). */
  readonly concurrency: number | null
  /** Runs at once of the whole type (a type's row only). */
  readonly typeCap: number | null
  /** Starts per period (with `ratePeriodMs`), per key or per type as the type's own rate limit counts. */
  readonly rateLimit: number | null
  readonly ratePeriodMs: number | null
  /** Its jobs stay pending and none starts while set. */
  readonly paused: boolean
  /** Who paused it, as the caller said (null: not said, or not paused). */
  readonly pausedBy: string | null
  /** When it was paused (epoch ms; null when not paused). */
  readonly pausedAt: number | null
  readonly updatedAt: number
}

/** A change to one row: a field left out stays as it is; null removes that override. */
export interface LimitChange {
  readonly scope: LimitScope
  readonly target: string
  readonly concurrency?: number | null | undefined
  readonly typeCap?: number | null | undefined
  readonly rate?: RateLimit | null | undefined
  readonly paused?: boolean | undefined
  /** Who pauses (shown with the pause). */
  readonly by?: string | undefined
}

const wholeIn = (value: unknown, max: number) =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 1 && value <= max

/** Why `change` cannot be stored, or undefined when it can. */
export const limitChangeProblem = (change: LimitChange): string | undefined => {
  if (!LIMIT_SCOPES.includes(change.scope)) return `scope must be type, queue or key, got ${String(change.scope)}`
  if (typeof change.target !== "string" || change.target.trim() === "") return "the target must not be blank"
  if (change.target.length > MAX_LIMIT_TARGET_LENGTH) {
    return `the target must be at most ${MAX_LIMIT_TARGET_LENGTH} characters`
  }
  const text = change.scope === "key" ? textProblem(change.target) : keyProblem(change.target)
  if (text !== undefined) return `the target ${text}`
  if (change.concurrency != null && !wholeIn(change.concurrency, MAX_CONCURRENCY_LIMIT)) {
    return `concurrency must be a whole number from 1 to ${MAX_CONCURRENCY_LIMIT}, got ${String(change.concurrency)}`
  }
  if (change.typeCap != null) {
    if (change.scope !== "type") return "a type cap is set on a job type"
    if (!wholeIn(change.typeCap, MAX_CONCURRENCY_LIMIT)) {
      return `typeCap must be a whole number from 1 to ${MAX_CONCURRENCY_LIMIT}, got ${String(change.typeCap)}`
    }
  }
  if (change.scope === "queue" && (change.concurrency != null || change.rate != null)) {
    return "a queue's row may only pause it"
  }
  if (change.rate != null) {
    if (!wholeIn(change.rate.limit, MAX_RATE_LIMIT)) {
      return `rate limit must be a whole number from 1 to ${MAX_RATE_LIMIT}, got ${String(change.rate.limit)}`
    }
    if (!wholeIn(change.rate.periodMs, MAX_RATE_PERIOD_MS)) {
      return `rate period must be a whole number of ms from 1 to ${MAX_RATE_PERIOD_MS}, got ${
        String(change.rate.periodMs)
      }`
    }
  }
  if (change.by !== undefined && (typeof change.by !== "string" || change.by.length > MAX_LIMIT_TARGET_LENGTH)) {
    return `by must be text of at most ${MAX_LIMIT_TARGET_LENGTH} characters`
  }
  return undefined
}

/** The row after `change` at `now` (a row is made when there was none). */
export const applyLimitChange = (current: LimitRow | undefined, change: LimitChange, now: number): LimitRow => {
  const paused = change.paused ?? current?.paused ?? false
  const newlyPaused = paused && current?.paused !== true
  return {
    scope: change.scope,
    target: change.target.trim(),
    concurrency: change.concurrency === undefined ? current?.concurrency ?? null : change.concurrency,
    typeCap: change.typeCap === undefined ? current?.typeCap ?? null : change.typeCap,
    rateLimit: change.rate === undefined ? current?.rateLimit ?? null : change.rate?.limit ?? null,
    ratePeriodMs: change.rate === undefined ? current?.ratePeriodMs ?? null : change.rate?.periodMs ?? null,
    paused,
    pausedBy: !paused ? null : newlyPaused ? change.by ?? null : current?.pausedBy ?? null,
    pausedAt: !paused ? null : newlyPaused ? now : current?.pausedAt ?? now,
    updatedAt: now
  }
}

/**
 * The name a paused job waits on (its `lease_name`): `paused:<scope>:<target>`, hashed past 100
 * characters. Lifting the pause wakes every job waiting on it.
 */
export const pausedWaitName = (scope: LimitScope, target: string): string =>
  fitLeaseName("paused:", `${scope}:${target.trim()}`)

/**
 * How long a paused job waits before it is looked at again, unless the pause is lifted first
 * (which wakes it). It bounds the wait of a job held just as its pause was lifted elsewhere.
 */
export const PAUSED_RECHECK_MS = 300_000

/** The rows by what they apply to, as an attempt looks them up. */
export interface LimitIndex {
  readonly byType: ReadonlyMap<string, LimitRow>
  readonly byQueue: ReadonlyMap<string, LimitRow>
  /** By the key's lease name (src/core/lease.ts `leaseNameFor`), as a job's lease is named. */
  readonly byLease: ReadonlyMap<string, LimitRow>
}

/** Indexes `rows` for lookups. */
export const indexLimits = (rows: ReadonlyArray<LimitRow>): LimitIndex => {
  const byType = new Map<string, LimitRow>()
  const byQueue = new Map<string, LimitRow>()
  const byLease = new Map<string, LimitRow>()
  for (const row of rows) {
    if (row.scope === "type") byType.set(row.target, row)
    else if (row.scope === "queue") byQueue.set(row.target, row)
    else byLease.set(fitLeaseName("key:", row.target.trim()), row)
  }
  return { byType, byQueue, byLease }
}

/** The limits an attempt runs under. */
export interface EffectiveLimits {
  readonly concurrencyLimit: number
  readonly typeConcurrencyLimit: number | undefined
  readonly rateLimit: RateLimit | undefined
  /** The row that pauses it, if any (a key's, its type's or its queue's). */
  readonly pausedBy: LimitRow | undefined
}

/** What a job type declares, as the rules need it. */
export interface DeclaredLimits {
  readonly name: string
  readonly queue: string
  readonly concurrencyLimit: number
  readonly typeConcurrencyLimit?: number | undefined
  readonly rateLimit?: RateLimit | undefined
}

const rateOf = (row: LimitRow | undefined): RateLimit | undefined =>
  row?.rateLimit != null && row.ratePeriodMs != null ? { limit: row.rateLimit, periodMs: row.ratePeriodMs } : undefined

/**
 * The limits for a job of `type` in `queue` under lease `leaseName` (undefined: it takes none):
 * the key's row over the type's row over the declaration, field by field; paused if any of the
 * key's, the type's or the queue's rows is.
 */
export const effectiveLimits = (
  index: LimitIndex,
  type: DeclaredLimits,
  queue: string,
  leaseName: string | undefined
): EffectiveLimits => {
  const t = index.byType.get(type.name)
  const k = leaseName === undefined ? undefined : index.byLease.get(leaseName)
  const q = index.byQueue.get(queue)
  return {
    concurrencyLimit: k?.concurrency ?? t?.concurrency ?? type.concurrencyLimit,
    typeConcurrencyLimit: t?.typeCap ?? type.typeConcurrencyLimit,
    rateLimit: rateOf(k) ?? rateOf(t) ?? type.rateLimit,
    pausedBy: [k, t, q].find((row) => row?.paused === true)
  }
}

/** Whether the index holds no row at all (the declarations apply unchanged). */
export const noLimits = (index: LimitIndex): boolean =>
  index.byType.size === 0 && index.byQueue.size === 0 && index.byLease.size === 0
