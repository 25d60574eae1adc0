/**
 * The lease rules, as pure functions over plain data (docs/behaviour.md §2, §3).
 *
 * Everything that decides *whether* a lease may be taken, *what* it is called, *how long* it
 * lasts and *how long* a busy job waits lives here, so the SQL stores and the in-memory model
 * make the same decisions. No I/O, no Effect services: times are passed in as epoch ms.
 */
import { createHash } from "node:crypto"
import { keyProblem, textProblem } from "./input.ts"

/** Longest lease name the lock table holds (`lockname VARCHAR(100)`). */
export const MAX_LEASE_NAME_LENGTH = 100
/** Longest lease owner the lock table holds (`lockowner VARCHAR(64)`). */
export const MAX_LEASE_OWNER_LENGTH = 64
/** Longest host the lock table holds (`lockhost VARCHAR(255)`). */
export const MAX_LEASE_HOST_LENGTH = 255
/** Claim timeout, in seconds, used when a job's own is missing or not positive. */
export const DEFAULT_CLAIM_TIMEOUT_SECONDS = 300
/** The longest a busy job waits before it looks at its lease again, in seconds. */
export const MAX_BUSY_DELAY_SECONDS = 30

/** One row of a lease table. */
export interface LeaseRow {
  readonly name: string
  readonly owner: string
  readonly host: string | null
  /** Epoch ms when the current owner took it. */
  readonly acquiredAt: number
  /** Epoch ms; the lease is free for take-over once this is strictly in the past. */
  readonly expiresAt: number
}

/** The lease-related options of a job type (a subset of its definition). */
export interface LeaseOptions<P = unknown> {
  readonly exclusive?: boolean | undefined
  readonly concurrencyKey?: string | undefined
  readonly concurrencyKeyFor?: ((payload: P) => string | null | undefined) | undefined
}

const isBlank = (s: string | null | undefined): s is null | undefined | "" =>
  s === undefined || s === null || s.trim() === ""

/** Whether jobs of a type with these options may take a lease (some payload may give a key). */
export const mayTakeLease = (options: LeaseOptions<never>): boolean =>
  options.exclusive === true || !isBlank(options.concurrencyKey) || options.concurrencyKeyFor !== undefined

/**
 * Fits `prefix + key` into the lock table: used as is when it fits in 100 characters,
 * otherwise `prefix + sha256(key)` in lowercase hex (prefix + 64 characters).
 */
export const fitLeaseName = (prefix: string, key: string): string => {
  const whole = prefix + key
  if (whole.length <= MAX_LEASE_NAME_LENGTH) return whole
  return prefix + createHash("sha256").update(key, "utf8").digest("hex")
}

/**
 * The lease a job of this type takes for this payload, or `undefined` when it takes none.
 * Order: `concurrencyKeyFor(payload)` if non-blank, else `concurrencyKey` if non-blank
 * (both → `key:<key>`); else `exclusive` → `job:<jobName>`; else no lease.
 */
export const leaseNameFor = <P>(jobName: string, options: LeaseOptions<P>, payload: P): string | undefined => {
  // Keys are trimmed: surrounding spaces never make a different lease (see leaseInputProblem).
  const fromFunction = options.concurrencyKeyFor?.(payload)
  if (!isBlank(fromFunction)) return fitLeaseName("key:", fromFunction.trim())
  if (!isBlank(options.concurrencyKey)) return fitLeaseName("key:", options.concurrencyKey.trim())
  if (options.exclusive === true) return fitLeaseName("job:", jobName)
  return undefined
}

/** The most lease slots a key may have (`concurrencyLimit`). */
export const MAX_CONCURRENCY_LIMIT = 1000

/**
 * The lease name of slot `slot` (0-based) of a key limited to N concurrent runs: slot 0 is the
 * key's own lease name, so a limit of 1 is the exclusive lease; slot i is `<name>#<i + 1>`, or,
 * where that would pass 100 characters, `slot:` + sha256(name) + `#<i + 1>`.
 */
export const slotLeaseName = (name: string, slot: number): string => {
  if (slot === 0) return name
  const suffix = `#${slot + 1}`
  if (name.length + suffix.length <= MAX_LEASE_NAME_LENGTH) return name + suffix
  return `slot:${createHash("sha256").update(name, "utf8").digest("hex")}${suffix}`
}

/** A claim timeout in seconds, with `≤ 0`, NaN or missing meaning the default 300 s. */
export const effectiveClaimSeconds = (claimTimeoutSeconds: number | null | undefined): number =>
  claimTimeoutSeconds === null || claimTimeoutSeconds === undefined || !Number.isFinite(claimTimeoutSeconds) ||
    claimTimeoutSeconds <= 0
    ? DEFAULT_CLAIM_TIMEOUT_SECONDS
    : claimTimeoutSeconds

/**
 * The lease window in seconds: claim + max(60, claim). It equals the grace after which the
 * reaper may take the job row back, so a reaped re-run finds the lease still busy.
 */
export const leaseWindowSeconds = (claimTimeoutSeconds: number | null | undefined): number => {
  const claim = effectiveClaimSeconds(claimTimeoutSeconds)
  return claim + Math.max(60, claim)
}

/** The lease window in ms: what a job row stores as its grace (`grace_ms`). */
export const leaseWindowMs = (claimTimeoutSeconds: number | null | undefined): number =>
  leaseWindowSeconds(claimTimeoutSeconds) * 1000

/**
 * When a lease taken (or renewed) at `now` expires. The same instant is the job row's stale
 * deadline after a claim or heartbeat at `now`, so a reaped re-run finds the lease still busy.
 */
export const leaseExpiresAt = (now: number, claimTimeoutSeconds: number | null | undefined): number =>
  now + leaseWindowMs(claimTimeoutSeconds)

/**
 * How long before an attempt starts its claim may have taken its lease for the attempt to use
 * that lease as it is (docs/behaviour.md §8): a lease taken earlier (the job waited, or its
 * process was paused) is renewed first, owner-fenced, so no run starts on a lease that may
 * already have run out and been taken over.
 */
export const CLAIM_LEASE_FRESH_MS = 1000

/** Whether a lease a claim took, expiring at `expiresAt`, may be used as is by an attempt starting at `now`. */
export const isClaimLeaseFresh = (
  expiresAt: number,
  now: number,
  claimTimeoutSeconds: number | null | undefined
): boolean => expiresAt >= leaseExpiresAt(now, claimTimeoutSeconds) - CLAIM_LEASE_FRESH_MS

/** A lease is free for take-over once its expiry is strictly in the past. */
export const isExpired = (expiresAt: number, now: number): boolean => expiresAt < now

/** Whether `owner` may take `current` at `now`: it is free, expired, or already ours. */
export const mayAcquire = (current: LeaseRow | undefined, owner: string, now: number): boolean =>
  current === undefined || isExpired(current.expiresAt, now) || current.owner === owner

/**
 * How long a job that found its lease busy waits, in whole seconds, within [1, 30]:
 * the holder's remaining time rounded up, or 1 when it turned free meanwhile.
 */
export const busyDelaySeconds = (holderExpiresAt: number | undefined, now: number): number => {
  const remaining = holderExpiresAt === undefined || !Number.isFinite(holderExpiresAt)
    ? 1
    : Math.ceil((holderExpiresAt - now) / 1000)
  return Math.min(MAX_BUSY_DELAY_SECONDS, Math.max(1, remaining))
}

/** A deferral gives back the attempt its claim counted, never going below zero. */
export const giveBackAttempt = (attempts: number): number => Math.max(0, attempts - 1)

/**
 * Decodes an epoch-ms BIGINT as the drivers return it: pg gives a string, mysql2 and
 * better-sqlite3 a number, some configurations a bigint. Fails loudly on anything else, since
 * a silently wrong expiry would break exclusivity.
 */
export const decodeEpochMs = (value: unknown): number => {
  const n = typeof value === "number"
    ? value
    : typeof value === "bigint"
    ? Number(value)
    : typeof value === "string" && /^-?\d+$/.test(value.trim())
    ? Number(value.trim())
    : Number.NaN
  if (!Number.isSafeInteger(n)) {
    throw new RangeError(`not an epoch-ms integer: ${String(value)}`)
  }
  return n
}

/**
 * Decodes a fencing token (a BIGINT counter) as the drivers return it: a string (pg), a number
 * (mysql2, better-sqlite3) or a bigint. Fails loudly on anything else: a wrong token would let
 * a stale holder's write through.
 */
export const decodeToken = (value: unknown): bigint => {
  if (typeof value === "bigint") return value
  if (typeof value === "number" && Number.isSafeInteger(value)) return BigInt(value)
  if (typeof value === "string" && /^\d+$/.test(value.trim())) return BigInt(value.trim())
  throw new RangeError(`not a fencing token: ${String(value)}`)
}

/** Longest fence resource the fences table holds (`resource VARCHAR(255)`). */
export const MAX_FENCE_RESOURCE_LENGTH = 255

/**
 * Why a guarded write's resource or token cannot be used, or `undefined` when both can. A token
 * is a lease's fencing token: a whole number from 0 up to 2^53 − 1, the most every driver binds
 * exactly (a counter bumped once a millisecond reaches it after 285,000 years).
 */
export const fenceInputProblem = (
  resource: string,
  token: bigint
): { readonly field: "resource" | "token"; readonly reason: string } | undefined => {
  if (typeof resource !== "string" || resource.length === 0) return { field: "resource", reason: "is empty" }
  if (resource.length > MAX_FENCE_RESOURCE_LENGTH) {
    return {
      field: "resource",
      reason: `is ${resource.length} characters; at most ${MAX_FENCE_RESOURCE_LENGTH} fit`
    }
  }
  const text = keyProblem(resource)
  if (text !== undefined) return { field: "resource", reason: text }
  if (typeof token !== "bigint") return { field: "token", reason: `must be a bigint, got ${typeof token}` }
  if (token < 0n || token > BigInt(Number.MAX_SAFE_INTEGER)) {
    return { field: "token", reason: `must be from 0 to ${Number.MAX_SAFE_INTEGER}, got ${token}` }
  }
  return undefined
}

/** Why a lease name, owner or host cannot be stored, or `undefined` when it can. */
export const leaseInputProblem = (
  field: "name" | "owner" | "host",
  value: string
): string | undefined => {
  const max = field === "name"
    ? MAX_LEASE_NAME_LENGTH
    : field === "owner"
    ? MAX_LEASE_OWNER_LENGTH
    : MAX_LEASE_HOST_LENGTH
  if (field !== "host" && value.length === 0) return `lease ${field} is empty`
  if (value.length > max) return `lease ${field} is ${value.length} characters; at most ${max} fit`
  // Hosts may end in a space here; the worker refuses that for its own host (keyProblem).
  const text = field === "host" ? textProblem(value) : keyProblem(value)
  return text === undefined ? undefined : `lease ${field} ${text}`
}

/**
 * The lease name of a job type's cap (`typeConcurrencyLimit`): `cap:<type>`, hashed past 100
 * characters; its slots are `slotLeaseName(capLeaseName(type), i)` like a key's.
 */
export const capLeaseName = (jobName: string): string => fitLeaseName("cap:", jobName)
