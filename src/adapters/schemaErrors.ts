/**
 * Telling from a driver error that leasehold's schema is missing or older than the code, on each
 * database by its own code: the one test the CLI's "run `leasehold migrate` first?" and the
 * worker's log hint share. Nothing else (a missing database, a refused login, an unreachable
 * server) counts.
 */
import { SqlError } from "@effect/sql/SqlError"
import { Effect, Either, Option } from "effect"

/** One error of a cause chain: its codes (driver errors carry `code` and `errno`), tag and message. */
export interface ChainLink {
  readonly codes: ReadonlyArray<unknown>
  readonly tag: unknown
  readonly message: string
}

/** An error and its causes, outermost first (the first of an AggregateError stands for it). */
export const errorChain = (e: unknown): ReadonlyArray<ChainLink> => {
  const chain: Array<ChainLink> = []
  let current: unknown = e
  for (let i = 0; i < 6 && current !== undefined && current !== null; i++) {
    if (current instanceof AggregateError && current.errors.length > 0) current = current.errors[0]
    const record = current as { code?: unknown; errno?: unknown; _tag?: unknown; message?: unknown; cause?: unknown }
    chain.push({
      codes: [record.code, record.errno],
      tag: record._tag,
      message: typeof record.message === "string" ? record.message : String(current)
    })
    current = record.cause
  }
  return chain
}

/** What of leasehold's schema an error shows to be missing, in the driver's own words. */
export interface SchemaGap {
  /** A table (never migrated), or a column of one (migrated by an older version). */
  readonly missing: "table" | "column"
  /** The driver's message: `no such table: leasehold_jobs`, `relation "…" does not exist`, … */
  readonly detail: string
}

/** PostgreSQL's undefined_table, MySQL's ER_NO_SUCH_TABLE (1146); SQLite says it in words. */
const TABLE_CODES: ReadonlyArray<unknown> = ["42P01", "ER_NO_SUCH_TABLE", 1146]
/** PostgreSQL's undefined_column, MySQL's ER_BAD_FIELD_ERROR (1054). */
const COLUMN_CODES: ReadonlyArray<unknown> = ["42703", "ER_BAD_FIELD_ERROR", 1054]

/**
 * The part of leasehold's schema `e` (an error, or a chain of causes) shows to be missing, or
 * undefined when it shows nothing of the kind (a refused login, a lost connection, …).
 */
export const schemaGap = (e: unknown): SchemaGap | undefined => {
  // Innermost first: the driver's error, whose message names the table or column.
  for (const link of [...errorChain(e)].reverse()) {
    const table = link.codes.some((c) => TABLE_CODES.includes(c)) || /^no such table\b/.test(link.message)
    const column = link.codes.some((c) => COLUMN_CODES.includes(c)) || /^no such column\b/.test(link.message)
    if (table || column) return { missing: table ? "table" : "column", detail: link.message.split("\n")[0]!.trim() }
  }
  return undefined
}

/** Whether an error means a table or column of the schema is not there (migrations not run). */
export const isMissingSchema = (e: unknown): boolean => schemaGap(e) !== undefined

/** What to do about a missing schema, in every message that reports one. */
export const MIGRATE_HINT = "run leasehold's migrations first (Migrator.make({ prefix }).run, or `leasehold migrate`)"

/** The innermost non-empty message of an error's chain: the driver's own words. */
export const innermostMessage = (e: unknown): string =>
  [...errorChain(e)].reverse().find((link) => link.message !== "")?.message ?? String(e)

/**
 * `error` with the driver's words and the migration hint as its message when it means the schema
 * is missing (its cause kept); any other error as it is.
 */
export const withMigrateHint = <E>(error: E): E =>
  error instanceof SqlError && isMissingSchema(error)
    ? new SqlError({ cause: error.cause, message: `${innermostMessage(error)}: ${MIGRATE_HINT}` }) as E
    : error

/**
 * A store's API with `withMigrateHint` on the failures of every operation, so that an enqueue, a
 * claim or a read on tables that were never migrated says so in its own message, not only in
 * its cause.
 */
export const hintingMissingSchema = <A extends object>(api: A): A => {
  const hinted: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(api)) {
    hinted[key] = Option.isOption(value) || Either.isEither(value)
      ? value
      : typeof value === "function"
      ? (...args: Array<unknown>) => {
        const result = (value as (...a: Array<unknown>) => unknown)(...args)
        return Effect.isEffect(result) ? Effect.mapError(result, withMigrateHint) : result
      }
      : Effect.isEffect(value)
      ? Effect.mapError(value, withMigrateHint)
      : value
  }
  return hinted as A
}
