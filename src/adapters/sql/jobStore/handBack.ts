/**
 * The SQL JobStore's attempts ended without an outcome: one given back or deferred, and a
 * stopping worker's attempts all handed back with their leases released and handed off.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import type { Claim, HandedBack } from "../../../core/model.ts"
import type { JobStoreApi } from "../../../ports/JobStore.ts"
import { int } from "../decode.ts"
import { retryTransient } from "../retry.ts"
import { SqlList } from "../statement.ts"
import type { StoreRunner } from "./runner.ts"
import type { StoreWakeups } from "./wakeups.ts"

/** The SQL JobStore's `handBack`, `giveBack` and `defer` over `runner`. */
export const makeHandBack = (
  runner: StoreRunner,
  wakeups: StoreWakeups
): Pick<JobStoreApi, "handBack" | "giveBack" | "defer"> => {
  const { changed, dialect, guardedWrite, jobDialect, rows, statements, write } = runner
  const { woken } = wakeups

  // A stopping worker's attempts: one statement on PostgreSQL; elsewhere the leases (released
  // with RETURNING where the database has it, else read first), one hand-off statement for all
  // of them, then one give-back for every attempt. Every step is fenced (lease owner, claim
  // token), so a deadlock victim is simply sent again.
  const handBack = (claims: ReadonlyArray<Claim>, now: number): Effect.Effect<HandedBack, SqlError> => {
    if (claims.length === 0) return Effect.succeed({ handedBack: 0, released: 0, woke: 0 })
    const tokens = claims.map((c) => c.token)
    const strategy = jobDialect.finish
    const done = (result: HandedBack) => Effect.as(result.handedBack + result.woke > 0 ? woken : Effect.void, result)
    switch (strategy.kind) {
      case "oneStatement":
        return retryTransient(
          dialect,
          "hand back",
          Effect.flatMap(
            rows(strategy.handBack(statements.context, statements.handBackParts(claims, now))),
            (r) =>
              done({
                handedBack: int(r[0]?.handed_back ?? 0),
                released: int(r[0]?.released ?? 0),
                woke: int(r[0]?.woke ?? 0)
              })
          )
        )
      case "steps":
        return retryTransient(
          dialect,
          "hand back",
          Effect.gen(function*() {
            const names = (r: ReadonlyArray<Record<string, unknown>>) => r.map((x) => String(x.lockname))
            let released: ReadonlyArray<string>
            if (jobDialect.updateReports === "rows") {
              released = names(yield* rows(statements.releaseOwnedBy(tokens, true)))
            } else {
              released = names(yield* rows(statements.leasesOwnedBy(tokens)))
              if (released.length > 0) yield* changed(statements.releaseOwnedBy(tokens, false))
            }
            const woke = released.length === 0 ? 0 : yield* write(statements.handOffEach(new SqlList(released), now))
            const handedBack = yield* write(statements.giveBackMany(claims, now))
            return yield* done({ handedBack, released: released.length, woke })
          })
        )
    }
  }

  return {
    giveBack: (id, token, now) => guardedWrite("give back", statements.giveBack(id, token, now)),
    handBack,
    defer: (id, token, now, runAt, leaseName) =>
      guardedWrite("defer", statements.defer(id, token, now, runAt, leaseName))
  }
}
