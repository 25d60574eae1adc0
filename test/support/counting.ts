/**
 * Runs a test's effect over the benchmark's statement-counting client (bench/lib/sql.ts) on one
 * database URL, scoped, with warnings and worse logged only, failures as defects.
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Layer, Logger, LogLevel, type Scope } from "effect"
import { countingLayer, sqlLayer, type StatementCount } from "../../bench/lib/sql.ts"

/** `effect` with a counting `SqlClient` and `StatementCount` on `url`. */
export const overCountingClient =
  (url: string) =>
  <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient | StatementCount | Scope.Scope>): Effect.Effect<A> =>
    effect.pipe(
      Effect.scoped,
      Logger.withMinimumLogLevel(LogLevel.Warning),
      Effect.provide(countingLayer.pipe(Layer.provideMerge(sqlLayer(url)))),
      Effect.orDie
    )
