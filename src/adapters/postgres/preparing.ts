/**
 * Named prepared statements for node-postgres (docs/performance.md). A statement sent without a
 * name is parsed and planned by PostgreSQL on every call, which for leasehold's claims and
 * enqueues took longer than running them. A named statement is parsed once per connection, and
 * its plan can be kept. graphile-worker names its statements for the same reason.
 *
 * `PreparingClient` is a node-postgres `Client` that names the statements worth keeping: data
 * statements with parameters (the ones leasehold repeats), at most `MAX_PER_CONNECTION` per
 * connection and none longer than `MAX_TEXT_LENGTH`, each named by a hash of its text, so the
 * same text always gets the same name.
 * Statements without parameters (BEGIN, COMMIT, DDL, LISTEN) go as before.
 *
 * What a prepared statement cannot survive: a change of its result's columns under it (a
 * `SELECT *` after ALTER TABLE … ADD COLUMN, or a returned column's type changed). PostgreSQL
 * then refuses it ("cached plan must not change result type", SQLSTATE 0A000). So a text with a
 * `*` in its select list is never named, and a text PostgreSQL refused once goes unnamed on that
 * connection from then on: the call that met the refusal fails, the next one runs. A statement
 * dropped under it (DEALLOCATE ALL or DISCARD ALL on the connection) fails once too, and is
 * parsed again on the next call. The app's own statements through the same pool are named too.
 *
 * Not for a transaction-mode connection pooler that cannot keep a connection's prepared
 * statements: the `preparedStatements: false` option of `clientLayer` (./client.ts).
 */
import { createHash } from "node:crypto"
import pg from "pg"

/** How many statements one connection keeps prepared; later new texts go unnamed. */
export const MAX_PER_CONNECTION = 500

/**
 * The longest text named. A bulk enqueue of 1,000 rows is a text of ~100 KB whose length varies
 * with the batch: kept prepared, such one-off texts would fill the connection's slots and the
 * server's memory for nothing.
 */
export const MAX_TEXT_LENGTH = 4096

// Data statements only. A `*` that is not `COUNT(*)` may be a select list that a migration can
// widen under the prepared plan.
const DATA_STATEMENT = /^\s*(?:SELECT|INSERT|UPDATE|DELETE|WITH)\b/i
const STAR = /\*(?!\))/
const PLAN_CHANGED = "0A000"
// "prepared statement … does not exist": dropped under us (DEALLOCATE ALL, DISCARD ALL).
const NOT_PREPARED = "26000"

type Callback = (err: (Error & { code?: string }) | null, result: unknown) => void
type Query = (this: pg.Client, config: unknown, values?: unknown, callback?: unknown) => unknown

/**
 * A node-postgres `Client` that sends repeated data statements as named prepared statements.
 * Pass it as the `Client` of a `pg.Pool` (`new pg.Pool({ Client: PreparingClient, … })`);
 * leasehold's own `clientLayer` does.
 */
export class PreparingClient extends pg.Client {
  /** The texts named on this connection, and their names. */
  readonly prepared = new Map<string, string>()
  /** The texts PostgreSQL refused as prepared statements (their result changed): sent unnamed. */
  readonly refused = new Set<string>()
}

/** The name to send `text` under on `client`, or undefined to send it unnamed. */
const nameFor = (client: PreparingClient, text: string): string | undefined => {
  const known = client.prepared.get(text)
  if (known !== undefined) return known
  if (client.prepared.size >= MAX_PER_CONNECTION || text.length > MAX_TEXT_LENGTH || client.refused.has(text)) {
    return undefined
  }
  if (!DATA_STATEMENT.test(text) || STAR.test(text)) return undefined
  const name = `lh_${createHash("sha1").update(text).digest("hex")}`
  client.prepared.set(text, name)
  return name
}

const baseQuery = pg.Client.prototype.query as Query

// node-postgres's `query` has many overloads; only the two forms @effect/sql-pg sends are named:
// (text, values, callback) and ({ text, values, rowMode }, callback). Anything else (promises,
// cursors, no parameters) goes through unchanged.
const callOf = (
  config: unknown,
  values: unknown,
  callback: unknown
): { readonly request: { readonly text: string } & Record<string, unknown>; readonly done: Callback } | undefined => {
  if (typeof config === "string") {
    return Array.isArray(values) && values.length > 0 && typeof callback === "function"
      ? { request: { text: config, values }, done: callback as Callback }
      : undefined
  }
  const c = config as { text?: unknown; name?: unknown; values?: unknown; submit?: unknown } | null
  return typeof c === "object" && c !== null && typeof values === "function" && callback === undefined &&
      typeof c.text === "string" && c.name === undefined && Array.isArray(c.values) && c.values.length > 0 &&
      typeof c.submit !== "function"
    ? { request: { ...c, text: c.text }, done: values as Callback }
    : undefined
}

const preparingQuery: Query = function(this: pg.Client, config, values, callback) {
  const client = this as PreparingClient
  const call = callOf(config, values, callback)
  const text = call?.request.text
  const name = text === undefined ? undefined : nameFor(client, text)
  if (call === undefined || text === undefined || name === undefined) {
    return baseQuery.call(this, config, values, callback)
  }
  return baseQuery.call(this, { ...call.request, name }, (err: (Error & { code?: string }) | null, result: unknown) => {
    if (err !== null && err.code === PLAN_CHANGED) {
      client.prepared.delete(text)
      client.refused.add(text)
    }
    // node-postgres still believes it parsed: forget it, so the next call parses it again.
    if (err !== null && err.code === NOT_PREPARED) {
      const parsed = (client as unknown as { connection?: { parsedStatements?: Record<string, string> } }).connection
        ?.parsedStatements
      if (parsed !== undefined) delete parsed[name]
    }
    call.done(err, result)
  })
}

Object.defineProperty(PreparingClient.prototype, "query", { value: preparingQuery, writable: true, configurable: true })
