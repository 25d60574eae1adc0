/** `leasehold jobs list | stats | retry <id> | purge`: inspecting and repairing job rows. */
import { Args, Command, Options } from "@effect/cli"
import { Clock, Duration, Effect, Option } from "effect"
import { JobStore } from "../../ports/JobStore.ts"
import { JOB_STATUSES, type JobStatus } from "../../core/jobs.ts"
import { withStore } from "../database.ts"
import { CliError, iso, print, table } from "../format.ts"
import { common, durationFlag } from "../options.ts"

const jobsList = Command.make(
  "list",
  {
    ...common,
    status: Options.choice("status", JOB_STATUSES).pipe(Options.optional),
    queue: Options.text("queue").pipe(Options.optional),
    name: Options.text("name").pipe(Options.optional),
    limit: Options.integer("limit").pipe(Options.withDefault(50))
  },
  (c) =>
    withStore(
      c,
      Effect.gen(function*() {
        if (c.limit < 0) return yield* new CliError({ message: "--limit must not be negative" })
        const rows = yield* (yield* JobStore).list({
          status: Option.getOrUndefined(c.status) as JobStatus | undefined,
          queue: Option.getOrUndefined(c.queue),
          name: Option.getOrUndefined(c.name),
          limit: c.limit
        })
        yield* print(c, rows, () =>
          table(
            rows.map((r) => ({ ...r, runAt: iso(r.runAt), lastError: r.lastError?.slice(0, 60) ?? null })),
            ["id", "name", "queue", "status", "attempts", "priority", "runAt", "claimedBy", "lastError"]
          ))
      })
    )
)

const jobsStats = Command.make("stats", common, (c) =>
  withStore(
    c,
    Effect.gen(function*() {
      const counts = yield* (yield* JobStore).counts
      yield* print(c, counts, () => table(counts, ["queue", "status", "count"]))
    })
  ))

// Only a dead job (failed or interrupted) goes back to pending; anything else is an error line.
const jobsRetry = Command.make(
  "retry",
  { ...common, id: Args.text({ name: "job-id" }) },
  (c) =>
    withStore(
      c,
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const ok = yield* (yield* JobStore).retryDead(c.id, now)
        if (!ok) return yield* new CliError({ message: `no failed or interrupted job with id ${c.id}` })
        yield* print(c, { id: c.id, status: "pending" }, () => `job ${c.id} is pending again`)
      })
    )
)

const jobsPurge = Command.make(
  "purge",
  {
    ...common,
    status: Options.choice("status", ["completed", "failed", "interrupted"] as const).pipe(
      Options.withDefault("completed" as const)
    ),
    olderThan: Options.text("older-than").pipe(Options.withDefault("7 days"))
  },
  (c) =>
    withStore(
      c,
      Effect.gen(function*() {
        const age = yield* durationFlag("older-than", c.olderThan)
        const now = yield* Clock.currentTimeMillis
        const n = yield* (yield* JobStore).purge(c.status, now - age)
        yield* print(
          c,
          { purged: n },
          () => `purged ${n} ${c.status} job(s) older than ${Duration.format(Duration.millis(age))}`
        )
      })
    )
)

/** `jobs` and its subcommands. */
export const jobs = Command.make("jobs").pipe(Command.withSubcommands([jobsList, jobsStats, jobsRetry, jobsPurge]))
