/**
 * `leasehold migrate`, `migrate status`, `migrate unlock [--force]`: the project's own schema
 * migrations and their lock (docs/behaviour.md §10).
 */
import { Command, Options } from "@effect/cli"
import { Effect } from "effect"
import * as Migrator from "../../runtime/migrate.ts"
import { withStore } from "../database.ts"
import { CliError, inHuman, print } from "../format.ts"
import { common } from "../options.ts"

const migrateRun = Command.make("migrate", common, (c) =>
  withStore(
    c,
    Effect.gen(function*() {
      const migrator = yield* Migrator.make({ prefix: c.prefix })
      const result = yield* migrator.run
      yield* print(c, result, () =>
        result.applied.length === 0
          ? "nothing to apply: the schema is up to date"
          : `applied ${result.applied.map((m) => `${m.id} (${m.name})`).join(", ")}`)
    })
  ))

const migrateStatus = Command.make("status", common, (c) =>
  withStore(
    c,
    Effect.gen(function*() {
      const migrator = yield* Migrator.make({ prefix: c.prefix })
      const status = yield* migrator.status
      yield* print(c, status, () => {
        const lock = status.lock
        const lockLine = lock.owner === null
          ? "lock: free"
          : `lock: ${lock.held ? "held" : "expired"} by ${lock.owner} on ${lock.host ?? "?"}, held for ${
            inHuman(lock.heldForMs ?? 0)
          }, ${lock.held ? `expires in ${inHuman(lock.expiresInMs ?? 0)}` : inHuman(lock.expiresInMs ?? 0)}`
        return [
          `applied: ${status.applied.map((m) => m.id).join(", ") || "none"}`,
          `pending: ${status.pending.map((m) => `${m.id} (${m.name})`).join(", ") || "none"}`,
          lockLine
        ].join("\n")
      })
    })
  ))

// A live lock belongs to a migration in progress: removing it is refused (exit 1) unless forced.
const migrateUnlock = Command.make(
  "unlock",
  { ...common, force: Options.boolean("force") },
  (c) =>
    withStore(
      c,
      Effect.gen(function*() {
        const migrator = yield* Migrator.make({ prefix: c.prefix })
        const result = yield* migrator.unlock({ force: c.force })
        yield* print(c, result, () =>
          result.removed
            ? "migration lock removed"
            : result.lock.owner === null
            ? "migration lock is free"
            : "migration lock is live: not removed (use --force)")
        if (!result.removed && result.lock.held) {
          return yield* new CliError({ message: "the migration lock is live; not removed (use --force)" })
        }
      })
    )
)

/** `migrate` applies pending migrations; its subcommands report and repair the lock. */
export const migrate = migrateRun.pipe(Command.withSubcommands([migrateStatus, migrateUnlock]))
