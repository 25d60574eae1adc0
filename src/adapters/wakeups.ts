/**
 * Picks the wake-ups (src/ports/Wakeups.ts) for the database the app runs on: LISTEN/NOTIFY when
 * the current SqlClient is a `PgClient`, none otherwise (workers then poll).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option } from "effect"
import { none, Wakeups, type WakeupsApi } from "../ports/Wakeups.ts"
import * as PostgresWakeups from "./postgres/wakeups.ts"

/** The wake-ups for the `PgClient` in context, if there is one; otherwise none. */
export const fromContext: Effect.Effect<WakeupsApi> = Effect.map(
  Effect.serviceOption(PgClient.PgClient),
  Option.match({ onNone: () => none, onSome: (client) => PostgresWakeups.make(client.config) })
)

/** `fromContext` as a layer (src/runtime/Leasehold.ts provides it next to the job store). */
export const layer: Layer.Layer<Wakeups> = Layer.effect(Wakeups, fromContext)
