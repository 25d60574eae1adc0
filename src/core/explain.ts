/**
 * Why a job is where it is (docs/why-a-job-waits.md): from its row, the lease rows it waits on or
 * holds, the hosts the store knows and its type's limits, one tagged reason (./explainReason.ts)
 * and the one sentence that says it (./explainSentence.ts). Pure: src/runtime/explain.ts reads
 * that state (what a claim reads: status, run_at, queue; and what a deferral wrote: lease_name)
 * and calls this, so the Effect and Promise APIs, the CLI and the dashboard print the same words.
 */
import type { ExplainReason, Explanation, SlotHolder } from "./explainReason.ts"
import { sentence } from "./explainSentence.ts"
import { hostState, isDraining } from "./hosts.ts"
import { capLeaseName, isExpired, type LeaseRow, slotLeaseName } from "./lease.ts"
import type { HostRow, JobRow } from "./model.ts"
import { rateLeaseName, type RateLimit, rateSlotFreeAt, rateSlotNames, rateSlotOwner } from "./rate.ts"

/** A job type's limits as this process's registry has them (none: the type is not registered here). */
export interface TypeLimits {
  readonly concurrencyLimit: number
  readonly typeConcurrencyLimit?: number | undefined
  readonly rateLimit?: RateLimit | undefined
}

/** The state an explanation is made from. */
export interface ExplainInput {
  readonly job: JobRow
  readonly now: number
  readonly limits: TypeLimits | undefined
  /** The lease rows read, by name (those `leasesToRead` named; a name absent: no row). */
  readonly leases: ReadonlyMap<string, LeaseRow>
  /** The hosts the store knows (read when `needsHosts`). */
  readonly hosts: ReadonlyArray<HostRow>
}

/** The prefix of the name a job held by a pause waits on (src/core/limits.ts `pausedWaitName`). */
const PAUSED = "paused:"

/** Which kind of lease a deferred job waits on, its slots and how many there are (null: unknown). */
const waitedOn = (leaseName: string, limits: TypeLimits | undefined) => {
  // A pause is no lease: nothing to read.
  if (leaseName.startsWith(PAUSED)) return { kind: "paused" as const, limit: null, names: [] }
  if (leaseName.startsWith("rate:")) {
    const limit = limits?.rateLimit?.limit ?? null
    return { kind: "rate" as const, limit, names: rateSlotNames(leaseName, limit ?? 1) }
  }
  const kind = leaseName.startsWith("cap:") ? "typeCap" as const : "key" as const
  const limit = kind === "typeCap" ? limits?.typeConcurrencyLimit ?? null : limits?.concurrencyLimit ?? null
  return { kind, limit, names: slotNames(leaseName, limit ?? 1) }
}

const slotNames = (name: string, limit: number): ReadonlyArray<string> =>
  Array.from({ length: limit }, (_, slot) => slotLeaseName(name, slot))

/** Whether a pending job waits on a lease: deferred, and not yet due. */
const waitsOnLease = (job: JobRow, now: number): job is JobRow & { readonly leaseName: string } =>
  job.status === "pending" && job.runAt > now && job.leaseName !== null

/** The leases a processing job's attempt may hold: its key's slots, its type's cap slots, its rate slots. */
const heldCandidates = (job: JobRow, limits: TypeLimits | undefined): ReadonlyArray<string> => [
  ...(job.claimLease === null ? [] : slotNames(job.claimLease, limits?.concurrencyLimit ?? 1)),
  ...(limits?.typeConcurrencyLimit === undefined ? [] : slotNames(capLeaseName(job.name), limits.typeConcurrencyLimit)),
  ...(limits?.rateLimit === undefined
    ? []
    : rateSlotNames(rateLeaseName(job.name, job.claimLease ?? undefined), limits.rateLimit.limit))
]

/** The lease rows an explanation of `job` at `now` reads: the slots it waits on, or those its attempt may hold. */
export const leasesToRead = (job: JobRow, limits: TypeLimits | undefined, now: number): ReadonlyArray<string> =>
  waitsOnLease(job, now)
    ? waitedOn(job.leaseName, limits).names
    : job.status === "processing" && job.claimToken !== null
    ? heldCandidates(job, limits)
    : []

/** Whether an explanation of `job` at `now` reads the hosts: it is due, or claimed by a host. */
export const needsHosts = (job: JobRow, now: number): boolean =>
  (job.status === "pending" && job.runAt <= now) || job.status === "processing"

/** The held (unexpired) rows among `names`, each with its slot number, the first to free first. */
const heldSlots = (names: ReadonlyArray<string>, leases: ReadonlyMap<string, LeaseRow>, now: number) =>
  names.flatMap((name, i): Array<SlotHolder> => {
    const row = leases.get(name)
    return row === undefined || isExpired(row.expiresAt, now)
      ? []
      : [{ name, owner: row.owner, host: row.host, expiresAt: row.expiresAt, slot: i + 1 }]
  }).sort((a, b) => a.expiresAt - b.expiresAt)

/** Why a pending job that is not due yet waits. */
const notDueReason = (input: ExplainInput): ExplainReason => {
  const { job, leases, limits, now } = input
  if (!waitsOnLease(job, now)) {
    return job.attempts > 0 || job.lastError !== null
      ? { _tag: "Backoff", runAt: job.runAt, attempt: job.attempts, lastError: job.lastError }
      : { _tag: "NotDue", runAt: job.runAt }
  }
  const wait = waitedOn(job.leaseName, limits)
  if (wait.kind === "paused") {
    return { _tag: "Paused", runAt: job.runAt, waitName: job.leaseName, what: job.leaseName.slice(PAUSED.length) }
  }
  const held = heldSlots(wait.names, leases, now)
  if (wait.kind === "rate") {
    const first = held[0]
    return {
      _tag: "RateLimited",
      runAt: job.runAt,
      rateName: job.leaseName,
      key: job.leaseName.slice("rate:".length),
      used: held.length,
      limit: wait.limit,
      periodMs: limits?.rateLimit?.periodMs ?? null,
      nextFreeAt: first === undefined ? null : rateSlotFreeAt(first.expiresAt)
    }
  }
  return {
    _tag: "LeaseBusy",
    runAt: job.runAt,
    lease: wait.kind,
    leaseName: job.leaseName,
    holder: held[0] ?? null,
    held: held.length,
    limit: wait.limit
  }
}

/** Why a due job waits: for a worker of its queue, or for a host that is not draining. */
const dueReason = (input: ExplainInput): ExplainReason => {
  const { hosts, job, now } = input
  // The hosts table knows no queues: the hosts a worker refreshed lately stand for its workers.
  const live = hosts.filter((h) => hostState(h, now) !== "gone")
  return live.length > 0 && live.every((h) => isDraining(h, now))
    ? { _tag: "HostsDraining", dueSince: job.runAt, queue: job.queue, hosts: live.map((h) => h.host) }
    : { _tag: "Due", dueSince: job.runAt, queue: job.queue }
}

/** What a processing job's attempt is doing. */
const runningReason = (input: ExplainInput): ExplainReason => {
  const { hosts, job, leases, limits, now } = input
  const owners = job.claimToken === null ? [] : [job.claimToken, rateSlotOwner(job.claimToken)]
  const host = hosts.find((h) => h.host === job.claimedBy)
  return {
    _tag: "Running",
    host: job.claimedBy,
    since: job.updatedAt,
    attempt: job.attempts,
    leases: heldCandidates(job, limits).filter((name) => {
      const row = leases.get(name)
      return row !== undefined && owners.includes(row.owner)
    }),
    heartbeatAt: job.heartbeatAt,
    stale: job.staleAt !== null && job.staleAt < now,
    hostDraining: host !== undefined && isDraining(host, now)
  }
}

/** The reason for `input.job` at `input.now`. */
const reasonOf = (input: ExplainInput): ExplainReason => {
  const { job, now } = input
  switch (job.status) {
    case "pending":
      return job.runAt > now ? notDueReason(input) : dueReason(input)
    case "processing":
      return runningReason(input)
    case "completed":
      return { _tag: "Completed", at: job.completedAt ?? job.updatedAt, attempt: job.attempts }
    case "failed":
      return { _tag: "Dead", at: job.failedAt ?? job.updatedAt, attempts: job.attempts, lastError: job.lastError }
    case "interrupted":
      return { _tag: "Interrupted", at: job.failedAt ?? job.updatedAt, lastError: job.lastError }
    case "cancelled":
      return { _tag: "Cancelled", at: job.failedAt ?? job.updatedAt }
  }
}

/** Explains a job: its reason and the sentence that says it. */
export const explainJob = (input: ExplainInput): Explanation => {
  const { job, limits, now } = input
  const reason = reasonOf(input)
  return {
    id: job.id,
    name: job.name,
    queue: job.queue,
    status: job.status,
    at: now,
    registered: limits !== undefined,
    reason,
    message: sentence(reason, job.name, limits !== undefined, now)
  }
}
