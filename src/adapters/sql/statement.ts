/**
 * The statement builder every dialect folder writes its SQL with. A `Statement` is SQL text plus
 * its parameters, with the dialect's own placeholders (`$1` on PostgreSQL, `?` on MySQL and
 * SQLite), ready for `sql.unsafe(text, params)`.
 *
 * Why not @effect/sql's own `Statement` builder (`sql\`…\``, `sql.in`, `sql.literal`): a
 * statement here is built once per call from plain values, independent of any client, so the
 * same text can be rendered for another dialect (schema listings, tests), nested into a larger
 * statement with its placeholders renumbered (PostgreSQL's one-statement finish), and run
 * without the app's name transforms. @effect/sql's fragments are bound to one client's compiler
 * and transforms; see docs/architecture.md.
 */
import { checkIdentifier } from "../../core/tables.ts"

export { checkIdentifier }

/**
 * SQL text and its bound parameters. One built by `sqlFor` renders them when first read (getters,
 * not own properties): copy one as `{ sql, params }`, never by spreading it.
 */
export interface Statement {
  readonly sql: string
  readonly params: ReadonlyArray<unknown>
  /** The unrendered template, so a statement can be nested in another (placeholders renumbered). */
  readonly fragment?: Fragment
}

/** A template's pieces before rendering. */
export interface Fragment {
  readonly strings: ReadonlyArray<string>
  readonly values: ReadonlyArray<unknown>
}

const isNested = (v: unknown): v is Statement & { readonly fragment: Fragment } =>
  typeof v === "object" && v !== null && "fragment" in v && (v as Statement).fragment !== undefined

/** Raw SQL spliced into a statement as written (identifiers, never user values). */
export class RawSql {
  constructor(readonly text: string) {}
}

/** A list of values bound as one parameter each, for `IN (…)`. */
export class SqlList {
  constructor(readonly values: ReadonlyArray<unknown>) {}
}

/** A whole number spliced as text (MySQL refuses a bound LIMIT under prepared statements). */
export const literalInt = (n: number): RawSql => {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`not a non-negative integer: ${n}`)
  return new RawSql(String(n))
}

/** The pieces of syntax that differ between dialects, chosen once when a store is built. */
export interface Syntax {
  readonly name: "pg" | "mysql" | "sqlite"
  /** The placeholder for the n-th parameter, 1-based. */
  readonly placeholder: (n: number) => string
  /** Quotes an identifier that is already known to be safe (see `checkIdentifier`). */
  readonly quote: (identifier: string) => string
}

const render = (syntax: Syntax, fragment: Fragment, params: Array<unknown>): string => {
  let text = fragment.strings[0] ?? ""
  fragment.values.forEach((value, i) => {
    if (value instanceof RawSql) {
      text += value.text
    } else if (value instanceof SqlList) {
      text += value.values.map((v) => {
        params.push(v)
        return syntax.placeholder(params.length)
      }).join(", ")
    } else if (isNested(value)) {
      text += render(syntax, value.fragment, params)
    } else {
      params.push(value)
      text += syntax.placeholder(params.length)
    }
    text += fragment.strings[i + 1] ?? ""
  })
  return text
}

/** Statements joined with `separator` into one, for a list of conditions or CASE branches. */
export const joined = (parts: ReadonlyArray<Statement>, separator: string): Statement => {
  const strings = parts.length === 0 ? [""] : ["", ...parts.slice(1).map(() => separator), ""]
  const fragment: Fragment = { strings, values: parts }
  return { sql: "", params: [], fragment }
}

// A template's text and parameters, rendered when first read. A statement nested in another is
// rendered by the outer one (its placeholders renumbered), so rendering each part as it is built
// rendered the inner parts once per level again: a claim or finish nests 4-5 deep and runs to
// kilobytes of text, and a hot-key job's allocations were largely its statements'. The
// template's strings are kept as given: the
// runtime makes one frozen array per call site.
class Rendered implements Statement {
  #done: Pick<Statement, "sql" | "params"> | undefined
  constructor(private readonly syntax: Syntax, readonly fragment: Fragment) {}
  get sql(): string {
    return this.#render().sql
  }
  get params(): ReadonlyArray<unknown> {
    return this.#render().params
  }
  #render(): Pick<Statement, "sql" | "params"> {
    if (this.#done === undefined) {
      const params: Array<unknown> = []
      this.#done = { sql: render(this.syntax, this.fragment, params), params }
    }
    return this.#done
  }
}

/**
 * A tagged template that turns `${value}` into a bound parameter, `${RawSql}` into text,
 * `${SqlList}` into a list of parameters and `${statement}` into that statement's SQL (its
 * placeholders renumbered), so SQL reads as SQL in the dialect files.
 */
export const sqlFor =
  (syntax: Syntax) => (strings: TemplateStringsArray, ...values: ReadonlyArray<unknown>): Statement =>
    new Rendered(syntax, { strings, values })
