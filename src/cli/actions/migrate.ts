/** What `migrate`, `migrate status` and `migrate unlock` do (declared in ../commands/migrate.ts, loaded only to run). */
import * as Effect from "effect/Effect"
import type { AppliedMigration } from "../../ports/MigrationStore.ts"
import * as Migrator from "../../runtime/migrate.ts"
import { withStore } from "../database.ts"
import { CliError, inHuman, iso, print } from "../format.ts"
import type { Common } from "../options.ts"

const appliedJson = (m: AppliedMigration) => ({ ...m, appliedAt: iso(m.appliedAt) })

/** The migration lock as JSON: ISO-8601 times, the spans in ms. */
const lockJson = (lock: Migrator.MigrationLockState) => ({
  ...lock,
  acquiredAt: iso(lock.acquiredAt),
  expiresAt: iso(lock.expiresAt)
})

/** `migrate`: applies every pending migration (creating an SQLite file that is not there yet). */
export const run = (c: Common) =>
  withStore(
    c,
    { create: true },
    Effect.gen(function*() {
      const migrator = yield* Migrator.make({ prefix: c.prefix })
      const result = yield* migrator.run
      yield* print(c, { ...result, applied: result.applied.map(appliedJson) }, () =>
        result.applied.length === 0
          ? "nothing to apply: the schema is up to date"
          : `applied ${result.applied.map((m) => `${m.id} (${m.name})`).join(", ")}`)
    })
  )

/** `migrate status`: applied and pending migrations, and the lock. */
export const status = (c: Common) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const migrator = yield* Migrator.make({ prefix: c.prefix })
      const status = yield* migrator.status
      const json = { applied: status.applied.map(appliedJson), pending: status.pending, lock: lockJson(status.lock) }
      yield* print(c, json, () => {
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
  )

/** The values of `migrate unlock`. */
export interface UnlockConfig extends Common {
  readonly force: boolean
}

/**
 * `migrate unlock`: a live lock belongs to a migration in progress, so removing it is refused
 * (one line on stderr, exit 1, nothing on stdout) unless forced.
 */
export const unlock = (c: UnlockConfig) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const migrator = yield* Migrator.make({ prefix: c.prefix })
      const result = yield* migrator.unlock({ force: c.force })
      if (!result.removed && result.lock.held) {
        return yield* new CliError({
          message: `the migration lock is live (held by ${result.lock.owner} on ${result.lock.host ?? "?"}); ` +
            "not removed (use --force)"
        })
      }
      yield* print(c, { removed: result.removed, lock: lockJson(result.lock) }, () =>
        result.removed ? "migration lock removed" : "migration lock is free")
    })
  )
