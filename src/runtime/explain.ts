/**
 * "Why isn't my job running?" (docs/why-a-job-waits.md): `explain(id)` reads what a claim reads
 * (the job's row), what its deferral or its attempt holds (the lease rows of its key, its type's
 * cap or its rate limit) and the hosts the store knows, and answers with src/core/explain.ts's
 * reason and sentence. Exported as `Job.explain`; the Promise API, the CLI (`leasehold jobs why`)
 * and the dashboard's job page print its `message`. It only reads.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, Effect, Option } from "effect"
import { JobNotFoundError } from "../core/errors.ts"
import { explainJob, leasesToRead, needsHosts, type TypeLimits } from "../core/explain.ts"
import type { Explanation } from "../core/explainReason.ts"
import { textProblem } from "../core/input.ts"
import { effectiveLimits, indexLimits } from "../core/limits.ts"
import type { LeaseRow } from "../core/lease.ts"
import type { HostRow, JobRow } from "../core/model.ts"
import { JobLeases, JobStore } from "../ports/JobStore.ts"
import type { LeaseLockApi } from "../ports/LeaseLock.ts"
import { Jobs } from "./job/registry.ts"

/** Longest job id a jobs table holds (`id VARCHAR(36)`): a longer one names no job. */
const MAX_JOB_ID_LENGTH = 36

/** Past this many slots, one listing of the lease table costs less than a read of each. */
const READ_EACH_UP_TO = 16

/** The limits of `name` in this process's registry, if there is one and it registers the type. */
const limitsOf = (name: string): Effect.Effect<TypeLimits | undefined> =>
  Effect.map(
    Effect.serviceOption(Jobs),
    (jobs) => Option.getOrUndefined(Option.map(Option.flatMap(jobs, (j) => j.get(name)), ({ type }) => type))
  )

/**
 * The limits a job's next attempt would run under: its type's declaration with the overrides set
 * live (src/core/limits.ts), as a worker applies them. The limits table unreadable (not migrated
 * yet), the declaration alone.
 */
const liveLimitsOf = (
  row: JobRow,
  declared: TypeLimits | undefined
): Effect.Effect<TypeLimits | undefined, never, JobStore> =>
  declared === undefined ? Effect.succeed(undefined) : Effect.map(
    Effect.orElseSucceed(Effect.flatMap(JobStore, (store) => store.limits), () => []),
    (rows) =>
      rows.length === 0
        ? declared
        : effectiveLimits(
          indexLimits(rows),
          { name: row.name, queue: row.queue, ...declared },
          row.queue,
          row.claimLease ?? undefined
        )
  )

/**
 * The rows of the leases `names`, by name. No lease table yet (it is made at the first lease
 * taken) means no rows; it is asked of the catalog, since a failed read would abort a PostgreSQL
 * transaction and stay in better-sqlite3's statement cache.
 */
const readLeases = (
  leases: LeaseLockApi,
  names: ReadonlyArray<string>
): Effect.Effect<ReadonlyMap<string, LeaseRow>, SqlError> =>
  Effect.gen(function*() {
    if (names.length === 0 || !(yield* leases.tableExists)) return new Map()
    if (names.length > READ_EACH_UP_TO) {
      const wanted = new Set(names)
      return new Map((yield* leases.list).filter((row) => wanted.has(row.name)).map((row) => [row.name, row]))
    }
    const rows = yield* Effect.forEach(names, (name) =>
      // The names are made from the stored row's lease names, which the table held: never bad input.
      Effect.catchTag(leases.read(name), "LeaseInputError", (e) => Effect.die(e)))
    return new Map(rows.flatMap((row) => Option.isSome(row) ? [[row.value.name, row.value] as const] : []))
  })

/**
 * Explains a job already read (`row`): reads the leases and hosts its state calls for, at the
 * Clock's now. For a caller that has the row (the dashboard's job page); `explain` reads it too.
 */
export const explainRow = (
  row: JobRow
): Effect.Effect<Explanation, SqlError, JobStore | JobLeases> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const limits = yield* liveLimitsOf(row, yield* limitsOf(row.name))
    const leases = yield* readLeases(yield* JobLeases, leasesToRead(row, limits, now))
    const hosts: ReadonlyArray<HostRow> = needsHosts(row, now) ? yield* (yield* JobStore).listHosts : []
    return explainJob({ job: row, now, limits, leases, hosts })
  })

/**
 * Why job `id` is where it is: not due yet (a delay, or a backoff after a failed attempt), waiting
 * on a lease held by another run (its key's, or its type's cap), rate limited, due and waiting
 * for a worker (or for a host that is not draining), running, or how it ended; a tagged `reason`
 * with its fields and the `message` saying it in one sentence. A job type registered in the
 * context (`Job.Jobs`) gives its slot counts; without it they are reported as unknown. An id that
 * names no job (none stored, or not one at all) fails with `JobNotFoundError`; nothing is written.
 */
export const explain = (
  id: string
): Effect.Effect<Explanation, JobNotFoundError | SqlError, JobStore | JobLeases> =>
  Effect.gen(function*() {
    // An id no row can have is not looked up: a NUL is refused by PostgreSQL as an error of its own.
    if (typeof id !== "string" || id === "" || id.length > MAX_JOB_ID_LENGTH || textProblem(id) !== undefined) {
      return yield* new JobNotFoundError({ jobId: String(id) })
    }
    const found = yield* (yield* JobStore).get(id)
    if (Option.isNone(found)) return yield* new JobNotFoundError({ jobId: id })
    return yield* explainRow(found.value)
  })
