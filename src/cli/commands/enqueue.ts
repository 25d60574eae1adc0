/** `leasehold enqueue <job> '<payload-json>'` (../actions/enqueue.ts). */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as opt from "../options.ts"
import { action } from "./action.ts"

/** Enqueues one job, its payload checked against its type first. */
export const enqueue = Command.make(
  "enqueue",
  {
    ...opt.common,
    jobs: opt.jobsModule,
    name: Args.text({ name: "job" }).pipe(Args.withDescription("The job type's name.")),
    payload: Args.text({ name: "payload-json" }).pipe(
      Args.withDescription("The payload, as JSON. Default: {}."),
      Args.withDefault("{}")
    ),
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
      "At most one job with this key (and the same name) at a time: a second enqueue reports a duplicate."
    ).pipe(Options.optional)
  },
  action(() => import("../actions/enqueue.ts"), (m) => m.enqueue)
).pipe(Command.withDescription("Enqueue one job of a type the --jobs module exports."))
