/** `leasehold enqueue <job> '<payload-json>'`, or `--many <file>` (../actions/enqueue.ts). */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as opt from "../options.ts"
import { action } from "./action.ts"

/** Enqueues one job, or many from a file, their payloads checked against their type first. */
export const enqueue = Command.make(
  "enqueue",
  {
    ...opt.common,
    jobs: opt.jobsModule,
    name: Args.text({ name: "job" }).pipe(Args.withDescription("The job type's name.")),
    payload: Args.text({ name: "payload-json" }).pipe(
      Args.withDescription("The payload, as JSON. Default: {}."),
      Args.optional
    ),
    many: opt.text(
      "many",
      "file",
      "Enqueue one job per payload read from this file (- for stdin): a JSON array, or one JSON payload per line. " +
        "Every payload is checked first; then one transaction, one INSERT per 1,000 jobs. Taken unique keys are listed."
    ).pipe(Options.optional),
    queue: opt.text("queue", "queue", "The queue. Default: the job type's queue.").pipe(Options.optional),
    priority: opt.integer(
      "priority",
      Number.MIN_SAFE_INTEGER,
      "The priority; higher runs first. Default: the job type's priority."
    ).pipe(Options.optional),
    delay: opt.duration("delay", "Run no sooner than this from now (30s, 5m, 2 hours). Default: at once.").pipe(
      Options.optional
    ),
    uniqueKey: opt.text(
      "unique-key",
      "key",
      "At most one job with this key at a time, whatever its type: a second enqueue reports a duplicate."
    ).pipe(Options.optional),
    uniqueKeyField: opt.text(
      "unique-key-field",
      "field",
      "With --many: each job's unique key is this field of its payload (a string or a number; none when absent)."
    ).pipe(Options.optional),
    uniqueUntil: opt.choice(
      "unique-until",
      ["purged", "finished"],
      "How long a unique key stays taken: until the job is purged, or until it finished (completed or died).",
      { default: "purged" }
    ).pipe(Options.withDefault("purged" as const))
  },
  action(() => import("../actions/enqueue.ts"), (m) => m.enqueue)
).pipe(Command.withDescription("Enqueue one job (or --many) of a type the --jobs module exports."))
