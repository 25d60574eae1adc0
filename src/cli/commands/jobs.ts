/**
 * `leasehold jobs list | show <id> | why <id> | stats | retry | discard | cancel | purge`:
 * inspecting and repairing job rows (../actions/jobs.ts).
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { CANCELLABLE_STATUSES, JOB_STATUSES } from "../../core/jobs.ts"
import { ENDED_STATUSES } from "../../runtime/deadJobs.ts"
import * as opt from "../options.ts"
import { action } from "./action.ts"

const load = () => import("../actions/jobs.ts")

const jobsList = Command.make(
  "list",
  {
    ...opt.common,
    status: opt.choice("status", JOB_STATUSES, "Only jobs in this status.").pipe(Options.optional),
    queue: opt.text("queue", "queue", "Only jobs in this queue.").pipe(Options.optional),
    name: opt.text("name", "job", "Only jobs of this type.").pipe(Options.optional),
    limit: opt.integer("limit", 0, "At most this many jobs.", { default: "50" }).pipe(Options.withDefault(50))
  },
  action(load, (m) => m.list)
).pipe(Command.withDescription("List jobs, newest first."))

const jobsStats = Command.make("stats", opt.common, action(load, (m) => m.stats)).pipe(
  Command.withDescription("Count jobs per queue and status.")
)

const jobsShow = Command.make(
  "show",
  { ...opt.common, id: Args.text({ name: "job-id" }).pipe(Args.withDescription("The job's id.")) },
  action(load, (m) => m.show)
).pipe(Command.withDescription("Show one job and its last attempts (start, end, outcome, error, host)."))

const jobsWhy = Command.make(
  "why",
  {
    ...opt.common,
    id: Args.text({ name: "job-id" }).pipe(Args.withDescription("The job's id.")),
    jobs: opt.optionalJobsModule(
      "The module exporting the app's job types: the answer then names how many slots a key, a type's cap or a " +
        "rate limit has (without it, they are unknown)."
    )
  },
  action(load, (m) => m.why)
).pipe(
  Command.withDescription(
    "Say in one sentence why a job is not running: not due yet, a backoff, a busy key, a rate limit, draining hosts, " +
      "or waiting for a worker (or what it is doing, or how it ended)."
  )
)

// Which dead jobs `retry` and `discard` take: one id, filters, or --all. Cancelled jobs only by
// id or with --status cancelled (../../runtime/deadJobs.ts).
const deadFilter = {
  id: Args.text({ name: "job-id" }).pipe(
    Args.withDescription("One job's id, dead or cancelled (filters, if given, must match it too)."),
    Args.optional
  ),
  name: opt.text("name", "job", "Only jobs of this type.").pipe(Options.optional),
  queue: opt.text("queue", "queue", "Only jobs in this queue.").pipe(Options.optional),
  status: opt.choice(
    "status",
    ENDED_STATUSES,
    "Only jobs in this status: failed or interrupted (dead), or cancelled. Default: failed and interrupted."
  ).pipe(Options.optional),
  olderThan: opt.duration("older-than", "Only jobs that died (or were cancelled) longer ago than this.").pipe(
    Options.optional
  ),
  all: opt.flag("all", "Every dead job (when no id or filter is given).")
}

const jobsRetry = Command.make("retry", { ...opt.common, ...deadFilter }, action(load, (m) => m.retry)).pipe(
  Command.withDescription(
    "Put dead (failed or interrupted) or cancelled jobs back to pending: one by id, or all that match."
  )
)

const jobsDiscard = Command.make("discard", { ...opt.common, ...deadFilter }, action(load, (m) => m.discard)).pipe(
  Command.withDescription("Delete dead (failed or interrupted) or cancelled jobs: one by id, or all that match.")
)

const jobsCancel = Command.make(
  "cancel",
  {
    ...opt.common,
    id: Args.text({ name: "job-id" }).pipe(
      Args.withDescription("The job's id; without it, every unfinished job the filters match."),
      Args.optional
    ),
    name: opt.text("name", "job", "Cancel the unfinished jobs of this type.").pipe(Options.optional),
    queue: opt.text("queue", "queue", "Cancel the unfinished jobs in this queue.").pipe(Options.optional),
    status: opt.choice("status", CANCELLABLE_STATUSES, "Cancel only pending or only processing jobs.").pipe(
      Options.optional
    )
  },
  action(load, (m) => m.cancel)
).pipe(
  Command.withDescription(
    "Cancel a job, or the unfinished jobs matching --name, --queue and --status: a pending job never runs, a running one stops at its next heartbeat."
  )
)

const jobsPurge = Command.make(
  "purge",
  {
    ...opt.common,
    status: opt.choice(
      "status",
      ["completed", "failed", "interrupted", "cancelled"] as const,
      "Which finished jobs to delete.",
      {
        default: "completed"
      }
    ).pipe(Options.withDefault("completed" as const)),
    olderThan: opt.duration("older-than", "Delete only jobs that finished longer ago than this.", {
      default: "7 days"
    })
  },
  action(load, (m) => m.purge)
).pipe(Command.withDescription("Delete finished jobs of one status."))

/** The subcommands of `jobs`. */
export const jobsSubcommands = [
  jobsList,
  jobsShow,
  jobsWhy,
  jobsStats,
  jobsRetry,
  jobsDiscard,
  jobsCancel,
  jobsPurge
] as const

/** `jobs` and its subcommands. */
export const jobs = Command.make("jobs").pipe(
  Command.withDescription("Inspect and repair jobs."),
  Command.withSubcommands(jobsSubcommands)
)
