/**
 * Picks the wake-ups (src/ports/Wakeups.ts) for the database the app runs on: LISTEN/NOTIFY when
 * the current SqlClient is a `PgClient`, none otherwise (workers then poll).
 */
import type { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option } from "effect"
import { none, Wakeups, type WakeupsApi } from "../ports/Wakeups.ts"
import * as PostgresWakeups from "./postgres/wakeups.ts"

/**
 * The `PgClient` service, found by its tag's key ("@effect/sql-pg/PgClient", the key
 * @effect/sql-pg registers it under) so that importing leasehold never loads @effect/sql-pg: an
 * app on MySQL or SQLite need not install it. test/integration/notify.test.ts fails if the key ever changes.
 */
const PgClientTag = Context.GenericTag<Pick<PgClient.PgClient, "config">>("@effect/sql-pg/PgClient")

/** The wake-ups for the `PgClient` in context, if there is one; otherwise none. */
export const fromContext: Effect.Effect<WakeupsApi> = Effect.map(
  Effect.serviceOption(PgClientTag),
  Option.match({ onNone: () => none, onSome: (client) => PostgresWakeups.make(client.config) })
)

/** `fromContext` as a layer (src/runtime/Leasehold.ts provides it next to the job store). */
export const layer: Layer.Layer<Wakeups> = Layer.effect(Wakeups, fromContext)
