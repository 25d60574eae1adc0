/** Small statistics for benchmark figures. */

/** The median of a non-empty list (mean of the middle two for an even count); NaN when empty. */
export const median = (xs: ReadonlyArray<number>): number => {
  if (xs.length === 0) return Number.NaN
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

/** The p-th percentile (0–100), nearest-rank; NaN when empty. */
export const percentile = (xs: ReadonlyArray<number>, p: number): number => {
  if (xs.length === 0) return Number.NaN
  const s = [...xs].sort((a, b) => a - b)
  const rank = Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length)))
  return s[rank - 1]!
}

export const mean = (xs: ReadonlyArray<number>): number =>
  xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length

/**
 * The most values in any window [t, t + width) over an ascending list: a window slid over every
 * value as its start (a window holding the most values can always be moved right until it starts
 * at one), not fixed buckets, which would split a burst across two.
 */
export const maxInWindow = (sorted: ReadonlyArray<number>, width: number): number => {
  let most = 0
  let end = 0
  for (let start = 0; start < sorted.length; start++) {
    while (end < sorted.length && sorted[end]! < sorted[start]! + width) end++
    most = Math.max(most, end - start)
  }
  return most
}

/** How many values of a list fall in [from, from + width). */
export const countInWindow = (xs: ReadonlyArray<number>, from: number, width: number): number =>
  xs.reduce((n, x) => (x >= from && x < from + width ? n + 1 : n), 0)
