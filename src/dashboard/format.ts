/** How the dashboard shows times and durations (the database stores epoch ms). */

/** A duration for people: `42s`, `5m`, `3h`, `2d`. */
export const duration = (ms: number): string => {
  const s = Math.round(Math.abs(ms) / 1000)
  return s < 120 ?
    `${s}s` :
    s < 7200 ?
    `${Math.round(s / 60)}m` :
    s < 172_800 ?
    `${Math.round(s / 3600)}h` :
    `${Math.round(s / 86_400)}d`
}

/** `at` relative to `now`: `5s ago`, `in 2m`. */
export const relative = (at: number, now: number): string =>
  at <= now ? `${duration(now - at)} ago` : `in ${duration(at - now)}`

/** An epoch-ms time as ISO 8601 (UTC). */
export const iso = (at: number): string => new Date(at).toISOString()
