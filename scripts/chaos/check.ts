/**
 * The exclusivity checker: pure functions from what a chaos run recorded (the jobs table, the
 * history of runs and outcomes, the faults it injected) to its summary.
 *
 * - Overlap: two runs of one lease (concurrency key) whose wall-clock intervals [start, end]
 *   intersect. A run's end is its recorded end, else the moment its worker was killed, else
 *   (unknown) the end of the run. An overlap is *reported* when the earlier run's attempt (the
 *   one whose lease was taken over) came back `Fenced` or with `leaseLost`, or stopped on a fenced
 *   heartbeat; *unreported* otherwise.
 * - Lost: enqueued (the controller got its id) but no row, or still `processing` after the drain.
 * - Over-run: more distinct claim tokens reached perform than max_retries + 1.
 * - Key idle: the longest stretch in which a key had unfinished work and no run in progress.
 */
import type { JobRow } from "../../src/JobStore.ts"
import { type ChaosClockConfig, chaosTimeOf, wallTimeOf } from "./clock.ts"
import type { HistoryRow } from "./jobs.ts"

/** One job the controller enqueued. */
export interface EnqueuedJob {
  readonly seq: number
  /** Null when no enqueue attempt ever came back (the server was down throughout). */
  readonly id: string | null
  readonly name: string
  /** The lease it takes (`key:…`), or null. */
  readonly leaseName: string | null
  /** Wall clock. */
  readonly at: number
}

/** A SIGKILL the controller sent. */
export interface KillEvent {
  readonly host: string
  readonly pid: number
  readonly at: number
}

/** A SIGSTOP … SIGCONT the controller applied. */
export interface PauseEvent {
  readonly host: string
  readonly pid: number
  readonly from: number
  readonly to: number
}

/** A server restart: wall-clock stop command … answering again. */
export interface RestartEvent {
  readonly from: number
  readonly to: number
  readonly ok: boolean
  readonly detail: string
}

/** Everything the checker reads. */
export interface CheckInput {
  readonly clock: Pick<ChaosClockConfig, "speed" | "anchorMs">
  /** Wall clock of the chaos phase's start and of the checker's snapshot. */
  readonly startedAt: number
  readonly endedAt: number
  readonly enqueued: ReadonlyArray<EnqueuedJob>
  readonly jobs: ReadonlyArray<JobRow>
  readonly history: ReadonlyArray<HistoryRow>
  readonly kills: ReadonlyArray<KillEvent>
  readonly pauses: ReadonlyArray<PauseEvent>
  readonly restarts: ReadonlyArray<RestartEvent>
  /** The worker host whose Clock was skewed, and by how much (chaos ms). */
  readonly skewed: { readonly host: string; readonly skewMs: number } | null
}

/** One overlap, for the report. Times are seconds since the chaos phase started. */
export interface OverlapDetail {
  readonly lease: string
  readonly reported: boolean
  /** For an unreported overlap: what the record suggests happened. */
  readonly note?: string
  readonly overlapMs: number
  readonly first: RunSummary
  readonly second: RunSummary
}

/** A run as the report shows it. */
export interface RunSummary {
  readonly job: string
  readonly attempt: number
  readonly token: string
  readonly host: string
  readonly startS: number
  readonly endS: number | null
  /** How perform ended: ok | error | fenced | interrupted | killed | unknown. */
  readonly ended: string
  /** What the worker reported for the attempt (Completed, Failed:retry, Fenced, …), or none. */
  readonly outcome: string | null
  readonly leaseLost: boolean | null
  /** Faults that touched this run's worker while it ran. */
  readonly faults: ReadonlyArray<string>
}

/** The checker's verdict. */
export interface CheckResult {
  readonly jobs: {
    readonly enqueued: number
    readonly enqueueUnconfirmed: number
    readonly completed: number
    readonly failed: number
    readonly interrupted: number
    readonly pending: number
    readonly processing: number
  }
  readonly attempts: {
    readonly runs: number
    readonly outcomes: Readonly<Record<string, number>>
    readonly leasesLost: number
    /** Runs with no outcome row: their worker was killed, or recording the outcome failed. */
    readonly runsWithoutOutcome: number
    readonly runsWithoutOutcomeKilled: number
    /** Runs whose end was never recorded and whose worker was not killed. */
    readonly runsWithoutEnd: number
    /** Keyed runs whose JobContext.lease was missing or not owned by their claim token. */
    readonly leaseMismatches: number
  }
  /** From enqueue to the first sign of a claim (a run's start or a deferral), wall ms. */
  readonly queueLatencyMs: { readonly p50: number | null; readonly p95: number | null; readonly max: number | null }
  readonly overlaps: {
    readonly total: number
    readonly reported: number
    readonly unreported: number
    readonly details: ReadonlyArray<OverlapDetail>
  }
  /**
   * Keyed runs' ends written through `Fences.guard` (jobs.ts): how many went through it, how many
   * it refused (a newer holder of the lease had written), and how many it applied although a
   * newer token had been applied before them (must be 0); guardErrors: guarded writes that failed
   * otherwise (a server restart), recorded without the guard.
   */
  readonly fencing: {
    readonly guardedWrites: number
    readonly staleWritesRefused: number
    readonly staleWritesApplied: number
    readonly guardErrors: number
  }
  readonly lost: { readonly count: number; readonly details: ReadonlyArray<string> }
  readonly overRun: { readonly count: number; readonly details: ReadonlyArray<string> }
  readonly keyIdle: {
    readonly longestMs: number
    readonly key: string | null
    readonly fromS: number | null
    readonly toS: number | null
    readonly cause: string | null
    /**
     * The longest gap in which the key's jobs were deferred (lease busy) and no fault, timeout,
     * backoff or restart explains it: a hand-off that did not happen would show here.
     */
    readonly longestUnexplainedBlockedMs: number
    readonly longestUnexplainedBlocked: string | null
  }
  readonly skew: { readonly host: string; readonly configuredMs: number; readonly observedMs: number | null } | null
  /** Problems that make the run fail (unreported overlaps, lost jobs, over-runs). */
  readonly problems: ReadonlyArray<string>
}

const median = (xs: ReadonlyArray<number>): number | null => {
  if (xs.length === 0) return null
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}

interface Run {
  readonly row: HistoryRow
  readonly start: number
  /** Best known end; Infinity when unknown. */
  readonly end: number
  readonly ended: string
  readonly outcome: HistoryRow | undefined
}

/** Checks one database's chaos run. */
export const check = (input: CheckInput): CheckResult => {
  const rel = (ms: number) => Math.round((ms - input.startedAt) / 100) / 10
  const killsByPid = new Map(input.kills.map((k) => [k.pid, k]))
  const outcomesByAttempt = new Map<string, HistoryRow>()
  const outcomeCounts: Record<string, number> = {}
  let leasesLost = 0
  for (const o of input.history) {
    if (o.kind !== "outcome") continue
    outcomeCounts[o.outcome ?? "?"] = (outcomeCounts[o.outcome ?? "?"] ?? 0) + 1
    if (o.leaseLost === true) leasesLost++
    if (o.outcome !== "Deferred") outcomesByAttempt.set(`${o.jobId}#${o.attempt}`, o)
  }

  let runsWithoutEnd = 0
  let runsWithoutOutcome = 0
  let runsWithoutOutcomeKilled = 0
  let leaseMismatches = 0
  const runs: Array<Run> = []
  for (const row of input.history) {
    if (row.kind !== "run" || row.startMs === null) continue
    const kill = killsByPid.get(row.pid)
    const killed = row.endMs === null && kill !== undefined && kill.at >= row.startMs
    if (row.endMs === null && !killed) runsWithoutEnd++
    const outcome = outcomesByAttempt.get(`${row.jobId}#${row.attempt}`)
    if (outcome === undefined) {
      runsWithoutOutcome++
      if (kill !== undefined && kill.at >= row.startMs) runsWithoutOutcomeKilled++
    }
    if (
      (row.jobName === "ChaosKeyed" || row.jobName === "ChaosLimited") &&
      (row.leaseOwner === null || row.leaseOwner !== row.claimToken)
    ) {
      leaseMismatches++
    }
    runs.push({
      row,
      start: row.startMs,
      end: row.endMs ?? (killed ? kill!.at : Number.POSITIVE_INFINITY),
      ended: row.endMs !== null ? (row.outcome ?? "unknown") : killed ? "killed" : "unknown",
      outcome
    })
  }

  const faultsOf = (run: Run): ReadonlyArray<string> => {
    const out: Array<string> = []
    for (const p of input.pauses) {
      if (p.pid === run.row.pid && p.from < run.end && p.to > run.start) {
        out.push(`paused ${rel(p.from)}–${rel(p.to)} s`)
      }
    }
    const kill = killsByPid.get(run.row.pid)
    if (kill !== undefined && kill.at >= run.start && kill.at <= run.end) out.push(`killed at ${rel(kill.at)} s`)
    for (const r of input.restarts) {
      if (r.from < run.end && r.to > run.start) out.push(`server restart ${rel(r.from)}–${rel(r.to)} s`)
    }
    return out
  }
  const summary = (run: Run): RunSummary => ({
    job: run.row.jobId,
    attempt: run.row.attempt,
    token: run.row.id,
    host: run.row.host,
    startS: rel(run.start),
    endS: Number.isFinite(run.end) ? rel(run.end) : null,
    ended: run.ended,
    outcome: run.outcome?.outcome ?? null,
    leaseLost: run.outcome?.leaseLost ?? null,
    faults: faultsOf(run)
  })
  const reports = (run: Run) =>
    run.ended === "fenced" || run.outcome?.outcome === "Fenced" || run.outcome?.leaseLost === true

  // Overlaps per lease.
  const byLease = new Map<string, Array<Run>>()
  for (const run of runs) {
    if (run.row.leaseName === null) continue
    const list = byLease.get(run.row.leaseName) ?? []
    list.push(run)
    byLease.set(run.row.leaseName, list)
  }
  const overlapDetails: Array<OverlapDetail> = []
  let overlapsTotal = 0
  let overlapsReported = 0
  for (const [lease, list] of byLease) {
    list.sort((a, b) => a.start - b.start)
    for (let i = 0; i < list.length; i++) {
      const a = list[i]!
      for (let j = i + 1; j < list.length && list[j]!.start < a.end; j++) {
        const b = list[j]!
        overlapsTotal++
        // The first run is the one whose lease was taken over (renewals are owner-fenced, so it
        // cannot take the lease back): its attempt is the one that must say so.
        const reported = reports(a)
        if (reported) overlapsReported++
        overlapDetails.push({
          lease,
          reported,
          ...(reported ? {} : { note: diagnose(a, summary(a)) }),
          overlapMs: Math.round(Math.min(a.end, b.end) - b.start),
          first: summary(a),
          second: summary(b)
        })
      }
    }
  }
  overlapDetails.sort((x, y) => Number(x.reported) - Number(y.reported))

  // Jobs: statuses, lost, over-run.
  const rowsById = new Map(input.jobs.map((j) => [j.id, j]))
  const statusCount = { completed: 0, failed: 0, interrupted: 0, pending: 0, processing: 0, cancelled: 0 }
  const lost: Array<string> = []
  let unconfirmed = 0
  for (const e of input.enqueued) {
    if (e.id === null) {
      unconfirmed++
      continue
    }
    const row = rowsById.get(e.id)
    if (row === undefined) {
      lost.push(`#${e.seq} ${e.name} ${e.id}: enqueued, no row`)
      continue
    }
    statusCount[row.status]++
    if (row.status === "processing") {
      lost.push(
        `#${e.seq} ${e.name} ${e.id}: still processing after the drain (claimed by ${
          row.claimedBy ?? "?"
        }, attempts ${row.attempts})`
      )
    }
  }
  const runsByJob = new Map<string, Set<string>>()
  for (const run of runs) {
    const set = runsByJob.get(run.row.jobId) ?? new Set<string>()
    set.add(run.row.id)
    runsByJob.set(run.row.jobId, set)
  }
  const overRun: Array<string> = []
  for (const [id, tokens] of runsByJob) {
    const row = rowsById.get(id)
    const max = (row?.maxRetries ?? 3) + 1
    if (tokens.size > max) {
      overRun.push(`${id}: ${tokens.size} runs reached perform, at most ${max} allowed (status ${row?.status ?? "?"})`)
    }
  }

  // Key idle while work waited.
  const finalAt = new Map<string, number>()
  const outcomesByJob = new Map<string, Array<HistoryRow>>()
  const deferralsByLease = new Map<string, Array<number>>()
  for (const o of input.history) {
    if (o.kind !== "outcome" || o.endMs === null) continue
    if (o.outcome === "Completed" || o.outcome === "Failed:dead") {
      finalAt.set(o.jobId, Math.max(finalAt.get(o.jobId) ?? 0, o.endMs))
    }
    const list = outcomesByJob.get(o.jobId) ?? []
    list.push(o)
    outcomesByJob.set(o.jobId, list)
    if (o.outcome === "Deferred" && o.leaseName !== null) {
      const d = deferralsByLease.get(o.leaseName) ?? []
      d.push(o.endMs)
      deferralsByLease.set(o.leaseName, d)
    }
  }
  const toWall = (chaosMs: number) => wallTimeOf(input.clock, chaosMs)
  let idle = { ms: 0, key: null as string | null, from: 0, to: 0, cause: null as string | null }
  let blocked = { ms: 0, text: null as string | null }
  const enqueuedByLease = new Map<string, Array<EnqueuedJob>>()
  for (const e of input.enqueued) {
    if (e.leaseName === null || e.id === null) continue
    const list = enqueuedByLease.get(e.leaseName) ?? []
    list.push(e)
    enqueuedByLease.set(e.leaseName, list)
  }
  for (const [lease, jobs] of enqueuedByLease) {
    const events: Array<
      { readonly t: number; readonly job: string | null; readonly waiting: number; readonly busy: number }
    > = []
    for (const e of jobs) {
      const row = rowsById.get(e.id!)
      const done = finalAt.get(e.id!) ??
        (row !== undefined && row.status !== "pending" && row.status !== "processing"
          ? toWall(row.updatedAt)
          : input.endedAt)
      if (done > e.at) {
        events.push({ t: e.at, job: e.id, waiting: 1, busy: 0 }, { t: done, job: e.id, waiting: -1, busy: 0 })
      }
    }
    const leaseRuns = byLease.get(lease) ?? []
    for (const r of leaseRuns) {
      events.push({ t: r.start, job: null, waiting: 0, busy: 1 }, {
        t: Math.min(r.end, input.endedAt),
        job: null,
        waiting: 0,
        busy: -1
      })
    }
    events.sort((a, b) => a.t - b.t || b.busy - a.busy)
    const waitingJobs = new Set<string>()
    let busy = 0
    let gapStart: number | null = null
    let gapJobs: ReadonlyArray<string> = []
    for (const ev of events) {
      const before = waitingJobs.size > 0 && busy === 0
      if (ev.job !== null) {
        if (ev.waiting > 0) waitingJobs.add(ev.job)
        else waitingJobs.delete(ev.job)
      }
      busy += ev.busy
      const after = waitingJobs.size > 0 && busy === 0
      if (!before && after) {
        gapStart = ev.t
        gapJobs = [...waitingJobs]
      }
      if (before && !after && gapStart !== null) {
        const ms = ev.t - gapStart
        const deferred = (deferralsByLease.get(lease) ?? []).some((t) => t >= gapStart! && t <= ev.t)
        const gap = explainGap({
          lease,
          from: gapStart,
          to: ev.t,
          runs: leaseRuns,
          waiting: gapJobs,
          deferred,
          outcomesByJob,
          input
        })
        if (ms > idle.ms) idle = { ms, key: lease, from: gapStart, to: ev.t, cause: gap.cause }
        if (gap.suspicious && ms > blocked.ms) blocked = { ms, text: `${lease} ${rel(gapStart)}–${rel(ev.t)} s` }
        gapStart = null
      }
    }
  }

  // Queue latency: enqueue to first claim (a run's start, or a deferral's report).
  const firstClaim = new Map<string, number>()
  const seen = (job: string, t: number | null) => {
    if (t !== null && t < (firstClaim.get(job) ?? Number.POSITIVE_INFINITY)) firstClaim.set(job, t)
  }
  for (const h of input.history) seen(h.jobId, h.kind === "run" ? h.startMs : h.endMs)
  const latencies = input.enqueued
    .flatMap((e) => (e.id === null || !firstClaim.has(e.id) ? [] : [Math.max(0, firstClaim.get(e.id)! - e.at)]))
    .sort((a, b) => a - b)
  const pct = (
    p: number
  ) => (latencies.length === 0
    ? null
    : Math.round(latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!))

  // Skew as observed in the runs of the skewed worker: its Clock minus the shared chaos time.
  const skew = input.skewed === null ? null : (() => {
    const s = input.skewed
    const offsets = input.history
      .filter((r) => r.kind === "run" && r.host === s.host && r.clockMs !== null && r.startMs !== null)
      .map((r) => r.clockMs! - chaosTimeOf(input.clock, r.startMs!))
    return { host: s.host, configuredMs: s.skewMs, observedMs: median(offsets) }
  })()

  // Guarded writes per lease name in the order they were applied (the guard serialises them on
  // the fence row, and fence_ms is read after it is locked); a token below one applied earlier
  // is a stale write the guard let through.
  const fenced = input.history.filter((r) => r.kind === "run" && r.fence !== null && r.fence !== undefined)
  const appliedByLease = new Map<string, Array<HistoryRow>>()
  for (const r of fenced) {
    if (r.fence !== "applied" || r.leaseName === null) continue
    appliedByLease.set(r.leaseName, [...(appliedByLease.get(r.leaseName) ?? []), r])
  }
  let staleWritesApplied = 0
  for (const writes of appliedByLease.values()) {
    writes.sort((a, b) => (a.fenceMs! - b.fenceMs!) || (a.fenceToken! < b.fenceToken! ? -1 : 1))
    let highest = -1n
    for (const w of writes) {
      if (w.fenceToken! < highest) staleWritesApplied++
      if (w.fenceToken! > highest) highest = w.fenceToken!
    }
  }
  const fencing = {
    guardedWrites: fenced.length,
    staleWritesRefused: fenced.filter((r) => r.fence === "refused").length,
    staleWritesApplied,
    guardErrors: fenced.filter((r) => r.fence === "error").length
  }

  const unreported = overlapsTotal - overlapsReported
  const problems: Array<string> = []
  if (staleWritesApplied > 0) problems.push(`${staleWritesApplied} stale write(s) applied through the guard`)
  if (unreported > 0) problems.push(`${unreported} unreported overlap(s)`)
  if (lost.length > 0) problems.push(`${lost.length} lost job(s)`)
  if (overRun.length > 0) problems.push(`${overRun.length} over-run job(s)`)

  return {
    jobs: { enqueued: input.enqueued.length, enqueueUnconfirmed: unconfirmed, ...statusCount },
    attempts: {
      runs: runs.length,
      outcomes: outcomeCounts,
      leasesLost,
      runsWithoutOutcome,
      runsWithoutOutcomeKilled,
      runsWithoutEnd,
      leaseMismatches
    },
    queueLatencyMs: { p50: pct(0.5), p95: pct(0.95), max: pct(1) },
    overlaps: { total: overlapsTotal, reported: overlapsReported, unreported, details: overlapDetails.slice(0, 12) },
    fencing,
    lost: { count: lost.length, details: lost.slice(0, 12) },
    overRun: { count: overRun.length, details: overRun.slice(0, 12) },
    keyIdle: {
      longestMs: Math.round(idle.ms),
      key: idle.key,
      fromS: idle.key === null ? null : rel(idle.from),
      toS: idle.key === null ? null : rel(idle.to),
      cause: idle.key === null ? null : idle.cause,
      longestUnexplainedBlockedMs: Math.round(blocked.ms),
      longestUnexplainedBlocked: blocked.text
    },
    skew,
    problems
  }
}

/** A reading of an unreported overlap whose first run is `a`. */
const diagnose = (a: Run, s: RunSummary): string => {
  if (a.ended === "interrupted" && a.outcome?.outcome?.startsWith("Failed") === true) {
    return "the first run timed out after its lease had expired and been taken over" +
      (s.faults.some((f) => f.startsWith("paused"))
        ? " (its worker was paused past the lease window and resumed before a reaper took the job back)"
        : "") +
      "; after a timeout leasehold neither releases nor reads the lease, so the attempt was recorded as a plain failure with leaseLost false"
  }
  if (a.outcome === undefined && a.ended === "killed") {
    return "the first run's worker was killed (after its lease ran out) before it could report"
  }
  if (a.outcome === undefined) return "the first run's outcome was never recorded"
  return "neither attempt reported a lost lease or was fenced"
}

/** What explainGap looks at. */
interface Gap {
  readonly lease: string
  readonly from: number
  readonly to: number
  readonly runs: ReadonlyArray<Run>
  /** Jobs waiting when the gap began. */
  readonly waiting: ReadonlyArray<string>
  /** Whether a job of this key was deferred (lease busy) during the gap. */
  readonly deferred: boolean
  readonly outcomesByJob: ReadonlyMap<string, ReadonlyArray<HistoryRow>>
  readonly input: CheckInput
}

/**
 * Why a key sat idle while work waited. Explained: the run before still held the lease (it timed
 * out, was killed or paused, or never reported) and it had to expire; every waiting job was in
 * its retry backoff; the server restarted; the job was claimed by a worker that was then paused;
 * or no worker had claimed the waiting job yet (queue latency, workers busy or down). Suspicious: jobs were deferred on a busy lease and none of the
 * above applies.
 */
const explainGap = (g: Gap): { readonly cause: string; readonly suspicious: boolean } => {
  const before = g.runs.filter((r) => r.end <= g.from + 1).sort((a, b) => b.end - a.end)[0]
  const explained = (cause: string) => ({ cause, suspicious: false })
  if (before !== undefined) {
    if (before.ended === "interrupted") return explained("the run before timed out: its lease is left to expire")
    if (before.ended === "killed") {
      return explained("the run before was killed (kill -9): its lease expires after the window")
    }
    if (g.input.pauses.some((p) => p.pid === before.row.pid && p.from < before.end && p.to > before.start)) {
      return explained("the run before was paused (SIGSTOP) past its lease window")
    }
    if (before.outcome === undefined) {
      return explained("the run before never reported: its lease expires after the window")
    }
  }
  const inBackoff = g.waiting.length > 0 && g.waiting.every((job) => {
    // The outcome row lands a moment after the run's end: allow 2 s.
    const last = (g.outcomesByJob.get(job) ?? [])
      .filter((o) => o.endMs !== null && o.endMs <= g.from + 2000 && o.outcome !== "Deferred")
      .sort((a, b) => b.endMs! - a.endMs!)[0]
    return last !== undefined && last.outcome === "Failed:retry"
  })
  if (inBackoff) return explained("every waiting job was in its retry backoff")
  if (g.input.restarts.some((r) => r.from < g.to && r.to > g.from - 2000)) return explained("database server restart")
  const next = g.runs.filter((r) => r.start >= g.to - 1).sort((a, b) => a.start - b.start)[0]
  if (next !== undefined && g.input.pauses.some((p) => p.pid === next.row.pid && p.from < g.to && p.to > g.from)) {
    return explained("the waiting job was claimed by a worker that was then paused (SIGSTOP); it ran after SIGCONT")
  }
  if (!g.deferred) return explained("queue latency: no worker had claimed the waiting job yet")
  if (
    g.input.pauses.some((p) => p.from < g.to && p.to > g.from) ||
    g.input.kills.some((k) => k.at < g.to && k.at > g.from - 15_000)
  ) {
    return explained("deferred while a paused or killed worker's lease ran out")
  }
  return { cause: "deferred on a busy lease, no fault explains it", suspicious: true }
}
