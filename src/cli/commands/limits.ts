/**
 * `leasehold limits list | set | clear`: limits changed live, and pauses (docs/flow-control.md;
 * ../actions/limits.ts).
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as opt from "../options.ts"
import { action } from "./action.ts"

const load = () => import("../actions/limits.ts")

const target = {
  type: opt.text("type", "name", "A job type's limits (each of its keys, and the type as a whole).").pipe(
    Options.optional
  ),
  queue: opt.text("queue", "name", "A queue (it may only be paused).").pipe(Options.optional),
  key: opt.text("key", "key", "One concurrency key, as the job type's concurrencyKey(For) gives it.").pipe(
    Options.optional
  )
}

const limitsList = Command.make("list", opt.common, action(load, (m) => m.list)).pipe(
  Command.withDescription("List the limits set live and the pauses.")
)

const limitsSet = Command.make(
  "set",
  {
    ...opt.common,
    ...target,
    concurrency: opt.integer("concurrency", 1, "Runs at once per key.").pipe(Options.optional),
    typeCap: opt.integer("type-cap", 1, "Runs at once of the whole type (with --type).").pipe(Options.optional),
    rate: opt.text("rate", "N/period", "Starts per period per key, as 100/1m or 5/1s.").pipe(Options.optional),
    unset: opt.text("unset", "fields", "Remove overrides, comma-separated: concurrency, type-cap, rate.").pipe(
      Options.optional
    ),
    pause: opt.flag("pause", "Pause: its jobs stay pending and none starts."),
    resume: opt.flag("resume", "Lift a pause: the jobs it held are due at once."),
    by: opt.text("by", "who", "Who pauses, shown with the pause.").pipe(Options.optional)
  },
  action(load, (m) => m.set)
).pipe(Command.withDescription("Change a type's, a queue's or a key's limits, or pause or resume it."))

const limitsClear = Command.make("clear", { ...opt.common, ...target }, action(load, (m) => m.clear)).pipe(
  Command.withDescription("Remove a row: the declared limits apply again and a pause is lifted.")
)

/** The subcommands of `limits`. */
export const limitsSubcommands = [limitsList, limitsSet, limitsClear] as const

/** `limits` and its subcommands. */
export const limits = Command.make("limits").pipe(
  Command.withDescription("Change limits and pause jobs while workers run."),
  Command.withSubcommands(limitsSubcommands)
)
