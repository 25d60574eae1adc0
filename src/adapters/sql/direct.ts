/**
 * A shorter path for the stores' own statements on a client leasehold built itself: the
 * statement goes straight to the driver's pool, without @effect/sql's steps around it (a span
 * object made per statement even with no tracer installed, a scope, the acquirer, the
 * transformer read). On an idle worker those steps are a large part of the Node time between an
 * enqueue and the start of its job (docs/performance.md).
 *
 * A driver's client layer registers its runner against the `SqlClient` it builds (PostgreSQL:
 * src/adapters/postgres/client.ts); `directOf` finds it. A client leasehold did not build, or one
 * wrapped by the app, has none, and its statements take @effect/sql's path as before. So does
 * every statement inside a transaction, or under an installed tracer (its spans are kept), or
 * under a statement transformer (`Statement.setTransformer`).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { currentTransformer } from "@effect/sql/Statement"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import { isTracing } from "../../infra/tracer.ts"
import { isTransactionContext } from "./transaction.ts"

/** Sends one statement to a pool, outside any transaction. */
export interface DirectRunner {
  /** The statement's rows; `raw`: the driver's whole result (as @effect/sql's `.raw`). */
  readonly run: (sql: string, params: ReadonlyArray<unknown>, raw: boolean) => Effect.Effect<unknown, SqlError>
}

const runners = new WeakMap<SqlClient.SqlClient, DirectRunner>()

/** Registers `runner` as the direct path of `client` (a client layer, when it is built). */
export const registerDirect = (client: SqlClient.SqlClient, runner: DirectRunner): void => {
  runners.set(client, runner)
}

/**
 * How a store runs a statement on `client`: straight to its pool when it has a direct path and
 * the fiber is in no transaction, has no tracer and no transformer; else `fallback()` (@effect/sql).
 * The choice is made per statement, in one step.
 */
export const directOf = (client: SqlClient.SqlClient) =>
<A>(
  sql: string,
  params: ReadonlyArray<unknown>,
  raw: boolean,
  fallback: () => Effect.Effect<A, SqlError>
): Effect.Effect<A, SqlError> => {
  const runner = runners.get(client)
  return runner === undefined ?
    fallback() :
    Effect.withFiberRuntime((fiber) =>
      isTracing(fiber.currentTracer) || isTransactionContext(fiber.currentContext) ||
        fiber.getFiberRef(currentTransformer)._tag === "Some"
        ? fallback()
        : runner.run(sql, params, raw) as Effect.Effect<A, SqlError>
    )
}

/** The direct path registered for `client`, if any (tests wrap it to see which path a statement took). */
export const registeredRunner = (client: SqlClient.SqlClient): DirectRunner | undefined => runners.get(client)
