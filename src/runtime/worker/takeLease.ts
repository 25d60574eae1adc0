/**
 * A slot of a job's lease taken from the database after the claim, or, every slot busy, the job
 * deferred until the first holder's lease should end (docs/behaviour.md §8; ./slots.ts).
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Cause, Clock, Effect, Either, Option } from "effect"
import type { BackoffOptions } from "../../core/jobs.ts"
import { busyDelaySeconds, leaseExpiresAt } from "../../core/lease.ts"
import type { JobRow } from "../../core/model.ts"
import { JobLeases, JobStore } from "../../ports/JobStore.ts"
import type { HeldLease } from "../Job.ts"
import type { Turn } from "./keyGate.ts"
import type { Resolved } from "./options.ts"
import { cancelledMeanwhile, describe, handOffNow, logCancelled, recordFailure } from "./outcome.ts"
import { jobRef, ProcessResult } from "./results.ts"
import { anySlotFree, firstToFree, slotNames, takeSlot } from "./slots.ts"

/**
 * Takes a slot of the job's lease after the claim and before perform (./slots.ts; one slot, the
 * lease itself, unless the type sets `concurrencyLimit`). All busy: perform does not run; the job
 * waits pending on the lease name until the first holder's lease should end, its attempt given
 * back (docs/behaviour.md §8). Succeeds with the held lease, or with the attempt's result (left)
 * when it ends here. `busy`: this worker's own attempts hold every slot (./keyGate.ts), so the
 * job defers without asking. `keepPlace`: the job was next in line for its key here (./keyGate.ts
 * `Turn`, `inLine`); busy, it defers due at its own run_at, not asleep.
 */
export const takeLease = (
  job: JobRow,
  leaseName: string,
  limit: number,
  backoff: BackoffOptions,
  o: Resolved,
  busy: Extract<Turn, { _tag: "Busy" }> | undefined,
  keepPlace = false
): Effect.Effect<Either.Either<HeldLease, ProcessResult>, SqlError, JobStore | JobLeases> =>
  Effect.gen(function*() {
    const leases = yield* JobLeases
    const token = job.claimToken!
    const now = yield* Clock.currentTimeMillis
    const expiresAt = leaseExpiresAt(now, job.claimTimeout)
    const names = slotNames(leaseName, limit)
    if (busy !== undefined) {
      return yield* defer(
        job,
        leaseName,
        names,
        { owner: busy.holder, expiresAt: busy.expiresAt },
        busy.releasedMeanwhile
      )
    }
    const acquired = yield* Effect.either(
      Effect.zipRight(
        // JobLeases remembers a table it has seen (src/adapters/jobLeases.ts): one catalog query per store.
        leases.ensureTable,
        takeSlot(leases, names, { owner: token, host: o.host, now, expiresAt })
      )
    )
    if (Either.isLeft(acquired)) {
      return Either.left(yield* recordFailure(job, backoff, describe(Cause.fail(acquired.left)), undefined))
    }
    if (Option.isSome(acquired.right)) {
      const { name, token: fencingToken } = acquired.right.value
      return Either.right({ name, owner: token, expiresAt, fencingToken })
    }
    return yield* defer(
      job,
      leaseName,
      names,
      Option.getOrUndefined(yield* firstToFree(leases, names)),
      () => true,
      keepPlace
    )
  })

/**
 * Defers a job whose lease is busy: pending again until the holder's lease should end, its
 * attempt given back, waiting on `leaseName`. A holder may have released (and found no waiter to
 * hand off to) between the look at the lease and the deferral (`releasedMeanwhile`): the lease is
 * read again, and if a slot is free, the job is handed off at once. `keepPlace`: pending due at
 * its own run_at instead (see `takeLease`), so it is claimed again before the key's later jobs
 * and no holder's release has to wake it.
 */
const defer = (
  job: JobRow,
  leaseName: string,
  names: ReadonlyArray<string>,
  holder: { readonly owner: string; readonly expiresAt: number } | undefined,
  releasedMeanwhile: () => boolean,
  keepPlace = false
): Effect.Effect<Either.Either<HeldLease, ProcessResult>, SqlError, JobStore | JobLeases> =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const now = yield* Clock.currentTimeMillis
    const delay = keepPlace ? 0 : busyDelaySeconds(holder?.expiresAt, now)
    const retryAt = keepPlace ? Math.min(job.runAt, now) : now + delay * 1000
    const holderOwner = holder?.owner ?? null
    if (!(yield* store.defer(job.id, job.claimToken!, now, retryAt, leaseName))) {
      if (yield* cancelledMeanwhile(job)) {
        yield* logCancelled("its job was cancelled before it started; not run")
        return Either.left(ProcessResult.Cancelled({ job: jobRef(job), leaseLost: false }))
      }
      return Either.left(ProcessResult.Fenced({ job: jobRef(job), leaseLost: false }))
    }
    const leases = yield* JobLeases
    if (
      releasedMeanwhile() &&
      (yield* Effect.orElseSucceed(anySlotFree(leases, names, yield* Clock.currentTimeMillis), () => false))
    ) {
      yield* handOffNow(leaseName)
    }
    yield* Effect.logDebug(
      `lease ${leaseName} busy (held by ${holderOwner ?? "nobody"}); ${
        keepPlace ? "taken as its turn came here: pending again, due, in its place" : `deferred ${delay} s`
      }`
    )
    return Either.left(ProcessResult.Deferred({ job: jobRef(job), leaseName, retryAt, holder: holderOwner }))
  })
