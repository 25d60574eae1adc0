/**
 * Telling from a driver error that leasehold's schema is missing or older than the code, on each
 * database by its own code: the one test the CLI's "run `leasehold migrate` first?" and the
 * worker's log hint share. Nothing else (a missing database, a refused login, an unreachable
 * server) counts.
 */

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

/**
 * PostgreSQL's undefined_table (42P01) and undefined_column (42703); MySQL's ER_NO_SUCH_TABLE
 * (1146) and ER_BAD_FIELD_ERROR (1054); SQLite's messages, which carry no code of their own.
 */
const MISSING_CODES: ReadonlyArray<unknown> = ["42P01", "42703", "ER_NO_SUCH_TABLE", 1146, "ER_BAD_FIELD_ERROR", 1054]

/** Whether an error means a table or column of the schema is not there (migrations not run). */
export const isMissingSchema = (e: unknown): boolean =>
  errorChain(e).some(({ codes, message }) =>
    codes.some((code) => MISSING_CODES.includes(code)) || /^no such (table|column)\b/.test(message)
  )
