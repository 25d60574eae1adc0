/**
 * The flow-limit checker: pure functions from what a chaos run recorded (every perform of the
 * limited job types, the outcomes, the lost-lease records, the kills) to the summary's `limits`.
 *
 * - Rate: per rate name (each key of `ChaosLimited`, the whole of `ChaosRated`), every start
 *   anchors a window [c, c + period) and no window may hold more than `rate` starts. A start is
 *   placed at its worker's *Clock* reading as perform began (the chaos clock, plus the skew on
 *   the skewed worker): the clock the slots were stamped with. Why that is the rule under skew,
 *   and exactly so while the skew is below the period: `checkRate`. A window over the limit is
 *   *reported* (listed apart) when at least as many of its starts as there are starts too many
 *   were made with no rate slot left — none of the attempt's own found as perform began, or it
 *   had expired — by an attempt that came back fenced or with a lost lease: its process stood
 *   still past the lease window between the take and perform (a pause), the limit of leases.
 * - Cap and key: a run lasts from perform's start to its end (wall clock; the end of a killed
 *   worker's run is the kill). Each start after which more than `typeCap` runs of the type, or
 *   more than `keyLimit` runs of one key, are in progress is a moment over the limit. It is
 *   *reported*, listed apart and not an overshoot, when at least as many of the runs in progress
 *   as there are runs too many lost their slot and said so: the attempt came back `Fenced` (or
 *   perform stopped on a fenced heartbeat), or leasehold recorded a lost lease of that kind (a
 *   `cap:` slot for the cap, the run's key slot for the key) for the attempt; an attempt that came
 *   back with `leaseLost` and has no lost-lease record at all (the record's write may fail in a
 *   server restart) counts as reported too. That is how check.ts treats overlaps on one lease.
 */
import { type ChaosClockConfig, chaosTimeOf } from "./clock.ts"
import type { HistoryRow, LimitsSpec } from "./jobs.ts"

/** A lost lease as leasehold recorded it (its `lost_leases` table). */
export interface LostLeaseRecord {
  readonly leaseName: string
  readonly jobId: string
  readonly attempt: number
  readonly holder: string | null
  readonly detected: string
}

/** Everything the limits checker reads. */
export interface LimitsInput {
  readonly spec: LimitsSpec
  readonly clock: Pick<ChaosClockConfig, "speed" | "anchorMs">
  /** Wall clock of the chaos phase's start and of the checker's snapshot. */
  readonly startedAt: number
  readonly endedAt: number
  readonly history: ReadonlyArray<HistoryRow>
  readonly lostLeases: ReadonlyArray<LostLeaseRecord>
  readonly kills: ReadonlyArray<{ readonly pid: number; readonly at: number }>
  readonly pauses: ReadonlyArray<{ readonly pid: number; readonly from: number; readonly to: number }>
  /** The injected skew, in Clock ms (0: none). */
  readonly skewMs: number
}

/** One start as the details show it. Times are seconds since the chaos phase started. */
export interface StartSummary {
  readonly job: string
  readonly attempt: number
  readonly host: string
  readonly key: string | null
  readonly startS: number
  readonly endS: number | null
  /** The worker's Clock minus the shared chaos time at the start (≈ 0, or the skew). */
  readonly clockOffsetMs: number
  /** How perform ended, and what the worker reported for the attempt. */
  readonly ended: string
  readonly outcome: string | null
  readonly leaseLost: boolean | null
  readonly keySlot: string | null
  readonly capSlot: string | null
  readonly rateSlot: string | null
  readonly rateToken: string | null
  /** The start's Clock reading minus the instant its rate slot counts from (taken, or moved). */
  readonly rateLagMs: number | null
  /** Lost-lease records of the attempt. */
  readonly lostLeases: ReadonlyArray<string>
  readonly faults: ReadonlyArray<string>
}

/** One window or moment over a limit. */
export interface LimitDetail {
  readonly kind: "rate" | "cap" | "key"
  /** The rate name, the type or the key. */
  readonly scope: string
  readonly limit: number
  readonly count: number
  readonly reported: boolean
  readonly atS: number
  readonly runs: ReadonlyArray<StartSummary>
}

/** The summary's `limits`. */
export interface LimitsResult {
  /** The limits checked: rate period (Clock ms), per key, per type, starts per period. */
  readonly spec: LimitsSpec
  readonly rateWindowsChecked: number
  readonly rateOvershoots: number
  /** Windows over the rate limit explained by starts made after their slot was gone, reported (see above). */
  readonly rateWindowsReported: number
  readonly capOvershoots: number
  readonly keyOvershoots: number
  /** Moments over the cap or a key's limit explained by a lost slot the system reported. */
  readonly capOverlapsReported: number
  readonly keyOverlapsReported: number
  readonly starts: { readonly limited: number; readonly rated: number; readonly onSkewedClock: number }
  /** The most starts any window held: by the workers' Clocks (the rule), and by the shared time. */
  readonly maxStartsInWindow: { readonly byClock: number; readonly bySharedTime: number }
  /**
   * Windows [t, t + period) of the shared (unskewed) time holding more than the limit: allowed
   * only where the skewed worker's starts are in them; `withoutSkewedStart` must be 0.
   */
  readonly sharedTimeWindowsOverLimit: { readonly total: number; readonly withoutSkewedStart: number }
  /** Windows of period − skew of the shared time holding more than the limit (the documented bound; 0). */
  readonly periodMinusSkewWindowsOverLimit: number | null
  readonly maxConcurrent: { readonly type: number; readonly key: number }
  /** Deferrals by what was full: the limits were reached, not only stayed under. */
  readonly deferred: { readonly rate: number; readonly cap: number; readonly key: number }
  /** Clock ms from the instant a start's rate slot counts from to perform's start, as recorded. */
  readonly rateStartLagMs: { readonly p50: number | null; readonly p99: number | null; readonly max: number | null }
  /**
   * Starts of a rate-limited type with no rate slot of theirs found as perform began (`reported`:
   * by an attempt that came back fenced or with a lost lease), and whose slot lookup failed.
   */
  readonly startsWithoutRateSlot: { readonly total: number; readonly reported: number; readonly lookupFailed: number }
  /**
   * Per rate slot, successive starts on it (by fencing token), by the Clocks of the workers that
   * made them: the rule holds them more than a period apart. `moved`: slots whose end the attempt
   * moved because perform would have started late. `closestGapMinusPeriodMs`: the smallest gap
   * between two successive starts on one slot, minus the period (Clock ms); `underPeriod`: how
   * many such gaps were a period or less — each a slot that counted a start earlier than perform
   * began. Diagnostic: an overshoot needs such a gap and every other slot started in the window.
   */
  readonly rateSlots: {
    readonly moved: number
    readonly successiveStarts: number
    readonly closestGapMinusPeriodMs: number | null
    readonly underPeriod: number
    readonly closest: ReadonlyArray<
      { readonly slot: string; readonly gapMinusPeriodMs: number; readonly runs: ReadonlyArray<StartSummary> }
    >
  }
  /** Runs whose end is unknown (counted as running until the end of the run). */
  readonly runsWithoutEnd: number
  /** The first twelve windows and moments over a limit, unreported first. */
  readonly details: ReadonlyArray<LimitDetail>
  /** Problems that make the run fail. */
  readonly problems: ReadonlyArray<string>
}

interface LimitedRun {
  readonly row: HistoryRow
  readonly start: number
  readonly end: number
  readonly ended: string
  /** The worker's Clock at perform's start. */
  readonly clock: number
  /** The shared chaos time at perform's start (no skew). */
  readonly shared: number
  readonly outcome: HistoryRow | undefined
  readonly lost: ReadonlyArray<LostLeaseRecord>
}

const pct = (xs: ReadonlyArray<number>, p: number): number | null =>
  xs.length === 0 ? null : xs[Math.min(xs.length - 1, Math.floor(p * xs.length))]!

/** Checks the flow limits of one database's chaos run. */
export const checkLimits = (input: LimitsInput): LimitsResult => {
  const { spec } = input
  const P = spec.periodMs
  const rel = (ms: number) => Math.round((ms - input.startedAt) / 100) / 10
  const limitedNames = new Set<string>([spec.limited.name, spec.rated.name])
  const killsByPid = new Map(input.kills.map((k) => [k.pid, k]))
  const outcomes = new Map<string, HistoryRow>()
  const deferred = { rate: 0, cap: 0, key: 0 }
  for (const o of input.history) {
    if (o.kind !== "outcome" || !limitedNames.has(o.jobName)) continue
    if (o.outcome === "Deferred") {
      const name = o.leaseName ?? ""
      if (name.startsWith("rate:")) deferred.rate++
      else if (name.startsWith("cap:")) deferred.cap++
      else deferred.key++
      continue
    }
    outcomes.set(`${o.jobId}#${o.attempt}`, o)
  }
  const lostByAttempt = new Map<string, Array<LostLeaseRecord>>()
  for (const l of input.lostLeases) {
    const k = `${l.jobId}#${l.attempt}`
    lostByAttempt.set(k, [...(lostByAttempt.get(k) ?? []), l])
  }

  let runsWithoutEnd = 0
  const runs: Array<LimitedRun> = []
  for (const row of input.history) {
    if (row.kind !== "run" || row.startMs === null || !limitedNames.has(row.jobName)) continue
    const kill = killsByPid.get(row.pid)
    const killed = row.endMs === null && kill !== undefined && kill.at >= row.startMs
    if (row.endMs === null && !killed) runsWithoutEnd++
    const shared = chaosTimeOf(input.clock, row.startMs)
    runs.push({
      row,
      start: row.startMs,
      end: row.endMs ?? (killed ? kill!.at : Number.POSITIVE_INFINITY),
      ended: row.endMs !== null ? (row.outcome ?? "unknown") : killed ? "killed" : "unknown",
      clock: row.clockMs ?? shared,
      shared,
      outcome: outcomes.get(`${row.jobId}#${row.attempt}`),
      lost: lostByAttempt.get(`${row.jobId}#${row.attempt}`) ?? []
    })
  }
  // The skewed worker's starts: their Clock is off the shared time by about the skew (never by a
  // rounding of the warp, a few ms).
  const onSkew = (r: LimitedRun) => input.skewMs !== 0 && Math.abs(r.clock - r.shared) > Math.abs(input.skewMs) / 2
  const rateLag = (r: LimitedRun) =>
    r.row.rateExpiresAt === null || r.row.rateExpiresAt === undefined
      ? null
      : r.clock - (r.row.rateExpiresAt - P - RATE_START_ALLOWANCE_MS)

  const faultsOf = (r: LimitedRun): ReadonlyArray<string> => {
    const out: Array<string> = []
    for (const p of input.pauses) {
      if (p.pid === r.row.pid && p.from < r.end && p.to > r.start) out.push(`paused ${rel(p.from)}–${rel(p.to)} s`)
    }
    const kill = killsByPid.get(r.row.pid)
    if (kill !== undefined && kill.at >= r.start && kill.at <= r.end) out.push(`killed at ${rel(kill.at)} s`)
    return out
  }
  const summary = (r: LimitedRun): StartSummary => ({
    job: r.row.jobId,
    attempt: r.row.attempt,
    host: r.row.host,
    key: r.row.concKey ?? null,
    startS: rel(r.start),
    endS: Number.isFinite(r.end) ? rel(r.end) : null,
    clockOffsetMs: r.clock - r.shared,
    ended: r.ended,
    outcome: r.outcome?.outcome ?? null,
    leaseLost: r.outcome?.leaseLost ?? null,
    keySlot: r.row.leaseName,
    capSlot: r.row.capSlot ?? null,
    rateSlot: r.row.rateSlot ?? null,
    rateToken: r.row.rateToken === null || r.row.rateToken === undefined ? null : String(r.row.rateToken),
    rateLagMs: rateLag(r),
    lostLeases: r.lost.map((l) => `${l.leaseName} (${l.detected}; now ${l.holder ?? "nobody"})`),
    faults: faultsOf(r)
  })
  const details: Array<LimitDetail> = []
  const isFenced = (r: LimitedRun) => r.ended === "fenced" || r.outcome?.outcome === "Fenced"
  // A start made with no rate slot left, by an attempt that said it had been superseded.
  const startedWithoutSlot = (r: LimitedRun) =>
    r.row.slotsRead === true &&
    (r.row.rateSlot === null || r.row.rateSlot === undefined ||
      (r.row.rateExpiresAt !== null && r.row.rateExpiresAt !== undefined && r.clock > r.row.rateExpiresAt)) &&
    (isFenced(r) || r.outcome?.leaseLost === true)

  // ---- Rate ----
  const rateGroups = new Map<string, { readonly limit: number; readonly runs: Array<LimitedRun> }>()
  for (const r of runs) {
    const limited = r.row.jobName === spec.limited.name
    const scope = limited ? `rate:key:${r.row.concKey ?? "?"}` : `rate:job:${spec.rated.name}`
    const group = rateGroups.get(scope) ?? { limit: limited ? spec.limited.rate : spec.rated.rate, runs: [] }
    group.runs.push(r)
    rateGroups.set(scope, group)
  }
  let rateWindowsChecked = 0
  let rateOvershoots = 0
  let rateReported = 0
  let maxByClock = 0
  let maxByShared = 0
  let sharedOver = 0
  let sharedOverPlain = 0
  let periodMinusSkewOver = 0
  const skewAbs = Math.abs(input.skewMs)
  for (const [scope, { limit, runs: group }] of rateGroups) {
    const byClock = checkRate(group, (r) => r.clock, P)
    rateWindowsChecked += byClock.windows.length
    for (const w of byClock.windows) {
      maxByClock = Math.max(maxByClock, w.length)
      if (w.length <= limit) continue
      const reported = w.filter(startedWithoutSlot).length >= w.length - limit
      if (reported) rateReported++
      else rateOvershoots++
      details.push({
        kind: "rate",
        scope,
        limit,
        count: w.length,
        reported,
        atS: rel(w[0]!.start),
        runs: w.map(summary)
      })
    }
    for (const w of checkRate(group, (r) => r.shared, P).windows) {
      maxByShared = Math.max(maxByShared, w.length)
      if (w.length <= limit) continue
      sharedOver++
      if (!w.some(onSkew)) sharedOverPlain++
    }
    if (skewAbs > 0 && skewAbs < P) {
      for (const w of checkRate(group, (r) => r.shared, P - skewAbs).windows) {
        if (w.length > limit) periodMinusSkewOver++
      }
    }
  }

  // ---- Cap and key ----
  const reportedLoss = (r: LimitedRun, lostThis: (l: LostLeaseRecord) => boolean) =>
    isFenced(r) || r.lost.some(lostThis) || (r.outcome?.leaseLost === true && r.lost.length === 0)
  const capReported = (r: LimitedRun) => reportedLoss(r, (l) => l.leaseName.startsWith("cap:"))
  const keyReported = (r: LimitedRun) =>
    reportedLoss(r, (l) => l.leaseName === r.row.leaseName || l.leaseName.startsWith(`key:${r.row.concKey}`))
  const limitedRuns = runs.filter((r) => r.row.jobName === spec.limited.name)
  const cap = sweep(limitedRuns, spec.limited.typeCap, capReported, input.endedAt)
  let keyOvershoots = 0
  let keyReportedCount = 0
  let maxKey = 0
  const byKey = new Map<string, Array<LimitedRun>>()
  for (const r of limitedRuns) byKey.set(r.row.concKey ?? "?", [...(byKey.get(r.row.concKey ?? "?") ?? []), r])
  const keyMoments: Array<LimitDetail> = []
  for (const [key, list] of byKey) {
    const k = sweep(list, spec.limited.keyLimit, keyReported, input.endedAt)
    keyOvershoots += k.over.filter((m) => !m.reported).length
    keyReportedCount += k.over.filter((m) => m.reported).length
    maxKey = Math.max(maxKey, k.max)
    for (const m of k.over) {
      keyMoments.push({
        kind: "key",
        scope: `key:${key}`,
        limit: spec.limited.keyLimit,
        count: m.active.length,
        reported: m.reported,
        atS: rel(m.at),
        runs: m.active.map(summary)
      })
    }
  }
  for (const m of cap.over) {
    details.push({
      kind: "cap",
      scope: `cap:${spec.limited.name}`,
      limit: spec.limited.typeCap,
      count: m.active.length,
      reported: m.reported,
      atS: rel(m.at),
      runs: m.active.map(summary)
    })
  }
  details.push(...keyMoments)
  details.sort((a, b) => Number(a.reported) - Number(b.reported) || a.atS - b.atS)

  const capOvershoots = cap.over.filter((m) => !m.reported).length

  // Successive starts on one rate slot.
  const bySlot = new Map<string, Array<LimitedRun>>()
  for (const r of runs) {
    if (r.row.rateSlot === null || r.row.rateSlot === undefined || r.row.rateToken == null) continue
    bySlot.set(r.row.rateSlot, [...(bySlot.get(r.row.rateSlot) ?? []), r])
  }
  const gaps: Array<
    { readonly slot: string; readonly gapMinusPeriodMs: number; readonly a: LimitedRun; readonly b: LimitedRun }
  > = []
  for (const [slot, list] of bySlot) {
    list.sort((a, b) => (a.row.rateToken! < b.row.rateToken! ? -1 : a.row.rateToken! > b.row.rateToken! ? 1 : 0))
    for (let i = 1; i < list.length; i++) {
      gaps.push({ slot, gapMinusPeriodMs: list[i]!.clock - list[i - 1]!.clock - P, a: list[i - 1]!, b: list[i]! })
    }
  }
  gaps.sort((x, y) => x.gapMinusPeriodMs - y.gapMinusPeriodMs)
  const moved = runs.filter((r) =>
    r.row.rateExpiresAt != null && r.row.rateAcquiredAt != null &&
    r.row.rateExpiresAt - P - RATE_START_ALLOWANCE_MS > r.row.rateAcquiredAt
  ).length
  const lags = runs.flatMap((r) => {
    const lag = rateLag(r)
    return lag === null ? [] : [lag]
  }).sort((a, b) => a - b)
  const problems: Array<string> = []
  if (rateOvershoots > 0) problems.push(`${rateOvershoots} rate window(s) over the limit`)
  if (capOvershoots > 0) problems.push(`${capOvershoots} unreported moment(s) over the type cap`)
  if (keyOvershoots > 0) problems.push(`${keyOvershoots} unreported moment(s) over a key's limit`)
  return {
    spec,
    rateWindowsChecked,
    rateOvershoots,
    rateWindowsReported: rateReported,
    capOvershoots,
    keyOvershoots,
    capOverlapsReported: cap.over.length - capOvershoots,
    keyOverlapsReported: keyReportedCount,
    starts: {
      limited: limitedRuns.length,
      rated: runs.length - limitedRuns.length,
      onSkewedClock: runs.filter(onSkew).length
    },
    maxStartsInWindow: { byClock: maxByClock, bySharedTime: maxByShared },
    sharedTimeWindowsOverLimit: { total: sharedOver, withoutSkewedStart: sharedOverPlain },
    periodMinusSkewWindowsOverLimit: skewAbs > 0 && skewAbs < P ? periodMinusSkewOver : null,
    maxConcurrent: { type: cap.max, key: maxKey },
    deferred,
    rateStartLagMs: { p50: pct(lags, 0.5), p99: pct(lags, 0.99), max: pct(lags, 1) },
    startsWithoutRateSlot: {
      total: runs.filter((r) => r.row.slotsRead === true && r.row.rateSlot == null).length,
      reported: runs.filter((r) => r.row.rateSlot == null && startedWithoutSlot(r)).length,
      lookupFailed: runs.filter((r) => r.row.slotsRead !== true).length
    },
    rateSlots: {
      moved,
      successiveStarts: gaps.length,
      closestGapMinusPeriodMs: gaps[0]?.gapMinusPeriodMs ?? null,
      underPeriod: gaps.filter((g) => g.gapMinusPeriodMs <= 0).length,
      closest: gaps.slice(0, 3).map((g) => ({
        slot: g.slot,
        gapMinusPeriodMs: g.gapMinusPeriodMs,
        runs: [summary(g.a), summary(g.b)]
      }))
    },
    runsWithoutEnd,
    details: details.slice(0, 12),
    problems
  }
}

/** leasehold's start allowance of a rate slot (src/core/rate.ts `RATE_START_ALLOWANCE_MS`), for the lag only. */
const RATE_START_ALLOWANCE_MS = 10

/**
 * Every window [t, t + period) anchored at a start (t = that start's time by `at`), with the
 * starts it holds, in order.
 *
 * Why the workers' Clocks: a rate slot taken at Clock reading c (the taker's) is stamped to expire
 * at c + period + 10 ms (src/core/rate.ts) and another worker takes it once its own Clock has
 * passed that; the slot is meant to count from perform's start (within 10 ms of the take, or the
 * slot's end is moved to a period from then). So two starts on one slot, in the order they
 * happened, are to be more than a period apart *by the readings of the Clocks that made them*,
 * whatever each Clock's offset, and a window of a period by those readings holds at most one
 * start per slot: at most N. Conversely, while the skew s is below the period, two starts whose
 * readings are a period or more apart may share a slot, so this is the whole rule, not a loose
 * one. In the shared time the skewed worker's starts sit s earlier than their readings, so the
 * rule there is: at most N in any window of period − s (and 2N in a period), as
 * docs/flow-control.md says. The starts are perform's own, as it began: a slot that counted from
 * an earlier instant (the move is read before its own round trip: repro-rate-late-start.ts) shows
 * here, and in `rateSlots`.
 */
export const checkRate = <R>(
  starts: ReadonlyArray<R>,
  at: (r: R) => number,
  period: number
): { readonly windows: ReadonlyArray<ReadonlyArray<R>> } => {
  const sorted = [...starts].sort((a, b) => at(a) - at(b))
  const windows: Array<ReadonlyArray<R>> = []
  let j = 0
  for (let i = 0; i < sorted.length; i++) {
    if (j < i) j = i
    while (j + 1 < sorted.length && at(sorted[j + 1]!) < at(sorted[i]!) + period) j++
    windows.push(sorted.slice(i, j + 1))
  }
  return { windows }
}

/**
 * Runs in progress over time (half-open [start, end): an end and a start in the same ms are one
 * after the other, as a release comes before the next take); each start after which more than
 * `limit` are in progress is a moment over it, reported when enough of them lost their slot.
 */
const sweep = (
  runs: ReadonlyArray<LimitedRun>,
  limit: number,
  reported: (r: LimitedRun) => boolean,
  endedAt: number
): {
  readonly max: number
  readonly over: ReadonlyArray<
    { readonly at: number; readonly active: ReadonlyArray<LimitedRun>; readonly reported: boolean }
  >
} => {
  const events: Array<{ readonly t: number; readonly d: 1 | -1; readonly run: LimitedRun }> = []
  for (const r of runs) {
    const end = Math.min(r.end, endedAt)
    // A run that ended in the ms it started overlaps nothing, half-open.
    if (end > r.start) events.push({ t: r.start, d: 1, run: r }, { t: end, d: -1, run: r })
  }
  events.sort((a, b) => a.t - b.t || a.d - b.d)
  const active = new Set<LimitedRun>()
  let max = 0
  const over: Array<{ readonly at: number; readonly active: ReadonlyArray<LimitedRun>; readonly reported: boolean }> =
    []
  for (const e of events) {
    if (e.d === -1) {
      active.delete(e.run)
      continue
    }
    active.add(e.run)
    max = Math.max(max, active.size)
    if (active.size > limit) {
      const list = [...active].sort((a, b) => a.start - b.start)
      over.push({ at: e.t, active: list, reported: list.filter(reported).length >= active.size - limit })
    }
  }
  return { max, over }
}
