/**
 * The Prometheus text exposition format (version 0.0.4), as plain data to text: metric families
 * with HELP and TYPE lines, label values escaped, histograms as cumulative `_bucket` lines with
 * `le`, `_sum` and `_count`. Pure: the worker's counters (src/runtime/metrics.ts) and the
 * store's gauges are gathered elsewhere.
 */

/** The Content-Type of a scrape's reply. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

/** Label names and values, in the order they are written. */
export type Labels = ReadonlyArray<readonly [name: string, value: string]>

/** One line of a family: its labels, value, and the suffix after the family's name (`_bucket`, …). */
export interface Sample {
  readonly labels: Labels
  readonly value: number
  readonly suffix?: string
}

/** A metric family: one HELP and one TYPE line, then its samples. */
export interface MetricFamily {
  readonly name: string
  readonly help: string
  readonly type: "counter" | "gauge" | "histogram"
  readonly samples: ReadonlyArray<Sample>
}

/** A label value as the format writes it between quotes: backslash, quote and newline escaped. */
export const escapeLabelValue = (value: string): string =>
  value.replace(/\\/g, "\\\\").replace(/"/g, "\\\"").replace(/\n/g, "\\n")

const escapeHelp = (text: string): string => text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")

/** A sample value: Go's float syntax for the infinities and NaN. */
export const formatValue = (n: number): string =>
  Number.isNaN(n) ? "NaN" : n === Infinity ? "+Inf" : n === -Infinity ? "-Inf" : String(n)

const labelText = (labels: Labels): string =>
  labels.length === 0 ? "" : `{${labels.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(",")}}`

/** The families as one exposition, ending with a newline. */
export const renderFamilies = (families: ReadonlyArray<MetricFamily>): string => {
  const lines: Array<string> = []
  for (const f of families) {
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`)
    for (const s of f.samples) lines.push(`${f.name}${s.suffix ?? ""}${labelText(s.labels)} ${formatValue(s.value)}`)
  }
  return lines.join("\n") + "\n"
}

/**
 * A histogram's samples: `counts[i]` observations fell in bucket i (at most `bounds[i]`, above
 * the one before; the last count is above every bound), written cumulatively as the format wants.
 */
export const histogramSamples = (
  labels: Labels,
  bounds: ReadonlyArray<number>,
  counts: ArrayLike<number>,
  sum: number
): Array<Sample> => {
  const samples: Array<Sample> = []
  let cumulative = 0
  for (let i = 0; i < bounds.length; i++) {
    cumulative += counts[i]!
    samples.push({ suffix: "_bucket", labels: [...labels, ["le", formatValue(bounds[i]!)]], value: cumulative })
  }
  cumulative += counts[bounds.length]!
  samples.push({ suffix: "_bucket", labels: [...labels, ["le", "+Inf"]], value: cumulative })
  samples.push({ suffix: "_sum", labels, value: sum }, { suffix: "_count", labels, value: cumulative })
  return samples
}

/** The index of the bucket `value` falls in (`bounds.length`: above every bound). */
export const bucketOf = (bounds: ReadonlyArray<number>, value: number): number => {
  let i = 0
  while (i < bounds.length && value > bounds[i]!) i++
  return i
}
