/**
 * The SQL JobStore (the port in src/ports/JobStore.ts) on PostgreSQL, MySQL/MariaDB and
 * SQLite. It runs the dialect folder's statements; every decision is made in src/core. Its parts
 * are in ./jobStore/, one file per operation over one shared statement runner
 * (./jobStore/runner.ts); this module assembles them.
 */
import { localWakeupsFor } from "../localWakeups.ts"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { tableNames } from "../../core/tables.ts"
import { JobLeases, JobStore, type JobStoreApi } from "../../ports/JobStore.ts"
import type { ScheduleStore } from "../../ports/ScheduleStore.ts"
import { rememberingTable } from "../jobLeases.ts"
import { hintingMissingSchema } from "../schemaErrors.ts"
import { poolSizeOf } from "./connections.ts"
import { makeAdmin } from "./jobStore/admin.ts"
import { makeLimits } from "./jobStore/limits.ts"
import { makeClaims } from "./jobStore/claim.ts"
import { makeFinish } from "./jobStore/finish.ts"
import { makeHandBack } from "./jobStore/handBack.ts"
import { makeInserts } from "./jobStore/insert.ts"
import { makeReaping } from "./jobStore/reaping.ts"
import { makeStoreRunner } from "./jobStore/runner.ts"
import { makeStoreWakeups } from "./jobStore/wakeups.ts"
import * as LeaseLock from "./LeaseLock.ts"
import * as ScheduleStoreAdapter from "./ScheduleStore.ts"

export { ENQUEUE_BYTES_TOGETHER, ENQUEUES_TOGETHER, INSERT_CHUNK_ROWS } from "./jobStore/insert.ts"

/**
 * Builds the SQL JobStore over the current `SqlClient` for one table prefix. The dialect is
 * resolved here, once; statements run without the app's name transforms, and inside the
 * caller's transaction when there is one (so an enqueue joins it).
 */
export const make = (
  options: { readonly prefix?: string | undefined } = {}
): Effect.Effect<JobStoreApi, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const client = yield* SqlClient.SqlClient
    const runner = makeStoreRunner(client, options.prefix)
    const wakeups = makeStoreWakeups(runner)
    const poolSize = yield* poolSizeOf(client, runner.dialect)
    // A store on tables never migrated says so in its failures' messages (../schemaErrors.ts).
    return hintingMissingSchema(JobStore.of({
      tables: runner.tables,
      wakeups: localWakeupsFor(runner.tables.channel),
      idleProbe: wakeups.idleProbe,
      remote: !runner.dialect.inProcess,
      ...makeInserts(runner, wakeups, poolSize),
      ...makeClaims(runner),
      ...makeFinish(runner, wakeups),
      ...makeHandBack(runner, wakeups),
      ...makeReaping(runner),
      ...makeAdmin(runner),
      ...makeLimits(runner, wakeups)
    }))
  })

/**
 * A layer providing the SQL `JobStore` and `JobLeases` for one prefix over the current
 * `SqlClient`, and the `ScheduleStore` of recurring jobs (./ScheduleStore.ts).
 */
export const layer = (
  options: { readonly prefix?: string | undefined } = {}
): Layer.Layer<JobStore | JobLeases | ScheduleStore, never, SqlClient.SqlClient> =>
  Layer.mergeAll(
    Layer.effect(JobStore, make(options)),
    ScheduleStoreAdapter.layer(options),
    Layer.effect(
      JobLeases,
      Effect.map(LeaseLock.make({ table: tableNames(options.prefix).jobLocks }), rememberingTable)
    )
  )
