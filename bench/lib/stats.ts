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
