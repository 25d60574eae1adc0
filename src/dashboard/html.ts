/**
 * HTML built only through the `html` template tag: every interpolated value is escaped unless it
 * is already `Html` (made by this tag), so job payloads, keys, errors, queue, host and lease
 * names (all user data) can never become markup. Attributes are always written in double quotes.
 */

/** Markup made by `html` (or `raw`), safe to interpolate as it is. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}

/** What may be interpolated: text and numbers are escaped; null, undefined and false render nothing. */
export type Part = Html | string | number | boolean | null | undefined | ReadonlyArray<Part>

const ENTITIES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  "\"": "&quot;",
  "'": "&#39;"
}

/** Escapes text for an element's content or a double-quoted attribute. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ENTITIES[c]!)

const render = (part: Part): string =>
  part instanceof Html
    ? part.text
    : Array.isArray(part)
    ? part.map(render).join("")
    : part === null || part === undefined || part === false
    ? ""
    : escapeHtml(String(part))

/** The template tag: literal parts as written, interpolations escaped. */
export const html = (strings: TemplateStringsArray, ...values: ReadonlyArray<Part>): Html =>
  new Html(strings.reduce((out, s, i) => out + s + (i < values.length ? render(values[i]!) : ""), ""))

/** Markup from a trusted constant (the stylesheet's, an SVG path built from numbers). */
export const raw = (text: string): Html => new Html(text)
