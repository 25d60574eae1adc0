/** What `schedules` does (declared in ../commands/schedules.ts, loaded only to run). */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schedules from "../../runtime/Schedules.ts"
import { withStore } from "../database.ts"
import { inHuman, iso, print, table } from "../format.ts"
import type { Common } from "../options.ts"

/**
 * `schedules`: each schedule a worker registered, with its last slot handled and the next one.
 * A next slot in the past ("due") means no worker has run since it came.
 */
export const schedules = (c: Common) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* Schedules.list
      const json = rows.map((r) => ({
        name: r.name,
        cron: r.cron,
        timeZone: r.timeZone,
        catchUp: r.catchUp,
        lastSlot: iso(r.lastSlot),
        nextSlot: iso(r.nextSlot),
        createdAt: iso(r.createdAt),
        updatedAt: iso(r.updatedAt)
      }))
      yield* print(c, json, (width) =>
        table(
          rows.map((r, i) => ({
            ...json[i]!,
            lastSlot: json[i]!.lastSlot ?? "-",
            nextSlot: r.nextSlot === null
              ? "-"
              : r.nextSlot <= now
              ? `${json[i]!.nextSlot} (due)`
              : `${json[i]!.nextSlot} (in ${inHuman(r.nextSlot - now)})`
          })),
          ["name", "cron", "timeZone", "catchUp", "lastSlot", "nextSlot"],
          { keep: ["name"], width }
        ))
    })
  )
