/**
 * A reader of the Prometheus text format for tests: checks every line's shape (HELP and TYPE
 * before a family's samples, label syntax, numeric values) and returns the samples by name.
 */

/** One sample line. */
export interface ParsedSample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

/** A parsed scrape: its samples and the declared type of each family. */
export interface Scrape {
  readonly samples: ReadonlyArray<ParsedSample>
  readonly types: ReadonlyMap<string, string>
  /** The value of the one sample named `name` whose labels include `labels` (undefined: none). */
  readonly value: (name: string, labels?: Readonly<Record<string, string>>) => number | undefined
}

// Label values may hold any character but the escaped three (a carriage return, say): `[^]`, not `.`.
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^]*)\})? (\S+)$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y

const unescape = (v: string) => v.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c))

const parseValue = (text: string): number => {
  if (text === "+Inf") return Infinity
  if (text === "-Inf") return -Infinity
  if (text === "NaN") return NaN
  const n = Number(text)
  if (Number.isNaN(n)) throw new Error(`not a number: ${text}`)
  return n
}

/** Parses a scrape, throwing on the first line that is not in the format. */
export const parseScrape = (text: string): Scrape => {
  if (!text.endsWith("\n")) throw new Error("a scrape ends with a newline")
  const samples: Array<ParsedSample> = []
  const types = new Map<string, string>()
  const helped = new Set<string>()
  for (const line of text.slice(0, -1).split("\n")) {
    if (line.startsWith("# HELP ")) {
      helped.add(line.split(" ")[2]!)
      continue
    }
    if (line.startsWith("# TYPE ")) {
      const [, , name, type] = line.split(" ")
      if (!helped.has(name!)) throw new Error(`TYPE before HELP: ${line}`)
      if (!["counter", "gauge", "histogram", "summary", "untyped"].includes(type!)) throw new Error(`bad type: ${line}`)
      types.set(name!, type!)
      continue
    }
    const m = SAMPLE.exec(line)
    if (m === null) throw new Error(`not a sample line: ${JSON.stringify(line)}`)
    const name = m[1]!
    const family = [...types.keys()].find((f) =>
      name === f || (name.startsWith(f) && /^_(bucket|sum|count)$/.test(name.slice(f.length)))
    )
    if (family === undefined) throw new Error(`sample of an undeclared family: ${line}`)
    const labels: Record<string, string> = {}
    if (m[3] !== undefined && m[3] !== "") {
      LABEL.lastIndex = 0
      while (LABEL.lastIndex < m[3].length) {
        const l = LABEL.exec(m[3])
        if (l === null) throw new Error(`bad labels: ${line}`)
        labels[l[1]!] = unescape(l[2]!)
      }
    }
    samples.push({ name, labels, value: parseValue(m[4]!) })
  }
  const value = (name: string, labels: Readonly<Record<string, string>> = {}) => {
    const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
    return found[0]?.value
  }
  return { samples, types, value }
}
