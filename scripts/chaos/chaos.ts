/**
 * The chaos controller: for each database, K worker processes (worker.ts) on a fresh table
 * prefix, a stream of plain and keyed jobs, and faults — kill -9 (then a replacement), SIGSTOP
 * past the lease window (then SIGCONT), one server restart (optional), one worker with a skewed
 * Clock — then a bounded drain and the exclusivity check (check.ts). Databases run side by side.
 *
 * Time, and why the clock is warped. The lease window and the reaper grace are t + max(60, t)
 * seconds of the Clock (t: the claim timeout), so they never drop below 61 s however small the
 * job timeout or the worker's timeoutCap; a pause "longer than the window" and the reaping and
 * retry behind it need well over a minute each, and a 20-second smoke run could not have one.
 * So every process runs on the chaos clock (clock.ts): readings advance `speed`× (default 6)
 * faster than the wall clock from one shared anchor — consistent across processes, like hosts on
 * NTP — while sleeps stay real. The job timeout is 5 s, and the workers' timeoutCap too, so the
 * window is 5 + 60 = 65 s of Clock time = 10.8 s of wall time at speed 6, and a run can last at
 * most 5 s of wall time = 30 s of Clock time, inside its window as the library intends. Runs
 * longer than 0.8 s heartbeat every 250 ms of wall time (1.5 s of Clock time, 2% of the window):
 * only a fault makes a live run outlive its lease. The reaper runs every 15 s / speed (the
 * library's default, scaled). The skewed worker's Clock is 8 s (Clock time) ahead: it stamps rows
 * and leases 8 s in the future and sees other leases expire 8 s early. `speed: 1` is plain wall
 * time (then give it `seconds` ≥ 90: pauses last over a minute).
 *
 * Faults per database: kill -9 every 20 s (at least two), each followed by a replacement from a
 * warm spare process (loading a worker takes seconds on a busy machine); pauses one after another
 * from 3 s on, 3–7 s apart (see `pauses`); the restart at 40% (PostgreSQL) or 55% (MariaDB) of the
 * chaos phase. A pause or kill never takes the last active worker, so someone keeps reaping.
 * The drain then waits up to max(45 s, 3 windows + 20 s) for every job to finish.
 *
 * Flow limits (`limits`; on in `npm run chaos`): through the same faults, storms of jobs of two limited
 * types (jobs.ts `limitedJobs`: a keyed type with a per-key limit, a cap over the type and a rate
 * limit per key; an unkeyed type with a rate limit) that fill every limit at once, and a trickle
 * between them; limits.ts checks every recorded start and end against the limits.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { closeSync, mkdirSync, mkdtempSync, openSync, rmdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import { Fences, Job, JobStore, Migrator } from "../../src/index.ts"
import * as SqlJobStore from "../../src/adapters/sql/JobStore.ts"
import {
  type CheckResult,
  check,
  type EnqueuedJob,
  type KillEvent,
  type PauseEvent,
  type RestartEvent
} from "./check.ts"
import { chaosClock, type ChaosClockConfig } from "./clock.ts"
import {
  controllerSqlLayer,
  type DbKind,
  dropPrefixed,
  isolateGaleraNode,
  killGaleraNode,
  quoteIdent,
  type RestartReport,
  restartServer,
  retryFor,
  urlFor
} from "./db.ts"
import {
  ChaosKeyed,
  ChaosOnce,
  type ChaosPayload,
  ChaosPlain,
  fencesTable,
  historyDdl,
  historyTable,
  JOB_TIMEOUT_SECONDS,
  limitedJobs,
  limitsSpec,
  readHistory
} from "./jobs.ts"
import { checkLimits, type LimitsResult, type LostLeaseRecord } from "./limits.ts"

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..")
const WORKER_ENTRY = join(ROOT, "scripts/chaos/worker.ts")

/**
 * The worker process's script: worker.ts and the code it imports from this repository, compiled
 * into one file by esbuild (which tsx brings), so each of the dozen or so
 * worker processes of a run starts on plain node instead of loading TypeScript through tsx (about
 * 1.3 s against 2.4 s each on a busy machine). Packages stay in node_modules, so the file is
 * written under node_modules/.cache, from where node finds them.
 */
let workerScript = ""
const buildWorker = async (): Promise<string> => {
  const { build } = await import("esbuild")
  const outfile = join(ROOT, "node_modules", ".cache", "leasehold-chaos", `worker-${process.pid}-${Date.now()}.mjs`)
  await build({
    entryPoints: [WORKER_ENTRY],
    outfile,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    packages: "external",
    sourcemap: "inline",
    logLevel: "warning",
    // Packages resolve from the repository, as they did for the TypeScript entry.
    absWorkingDir: ROOT
  })
  return outfile
}

/**
 * How long the drain waits after the last SIGCONT before it may stop the workers (wall ms): the
 * resumed worker's attempt times out or finishes and records its end well within it.
 */
const RESUMED_SETTLE_MS = 5_000

/** What a chaos run does. */
export interface ChaosOptions {
  readonly dbs: ReadonlyArray<DbKind>
  /** Length of the chaos phase per database (wall-clock seconds); the drain comes after. */
  readonly seconds: number
  /** Worker processes per database (at least 2: one of them has the skewed Clock). */
  readonly workers: number
  /** Restart the PostgreSQL / MariaDB server once, mid-run. */
  readonly restart: boolean
  /** Kill -9 and SIGSTOP workers (off: only the skewed clock and, with `restart`, the restart). */
  readonly faults: boolean
  /**
   * Pause lengths. "long": past the lease window + the skew + two reaper intervals + 2 s, so a
   * live worker has reaped the paused attempt before it resumes (it comes back fenced). "mixed":
   * alternately 1.05–1.5 lease windows (the paused attempt may resume before any reaper took it
   * back, after another run took its lease over) and long.
   */
  readonly pauses: "mixed" | "long"
  /** Chaos clock speed (clock.ts). */
  readonly speed: number
  /** The skewed worker's Clock offset, in Clock ms (positive: ahead). */
  readonly skewMs: number
  /** Attempts at once per worker. */
  readonly concurrency: number
  /** Jobs enqueued per second per database. */
  readonly rate: number
  /** Seeds the job mix and the fault plan. */
  readonly seed: number
  /**
   * Also run the flow-limited job types (rate limit, per-key limit, type cap) and check them. On
   * in `npm run chaos` (run.ts); off by default here, so a caller (the smoke test) asks for it.
   */
  readonly limits: boolean
  /** Keep tables and worker logs afterwards. */
  readonly keep: boolean
  /** Keep them when a database's check fails (for a post-mortem); off in tests, which must clean up. */
  readonly keepOnFailure: boolean
  /** Progress lines (default: stderr). */
  readonly log: (line: string) => void
}

/**
 * The defaults of `npm run chaos` (which also turns `limits` on): all three databases, with the
 * restart, within 3 minutes.
 */
export const defaultOptions: ChaosOptions = {
  dbs: ["pg", "mysql", "sqlite"],
  seconds: 90,
  workers: 3,
  restart: true,
  faults: true,
  pauses: "mixed",
  speed: 6,
  skewMs: 8000,
  concurrency: 3,
  rate: 5,
  seed: 1,
  limits: false,
  keep: false,
  keepOnFailure: true,
  log: (line) => process.stderr.write(`${line}\n`)
}

/** One database's summary. */
export interface DbReport extends CheckResult {
  readonly db: DbKind
  readonly ok: boolean
  readonly prefix: string
  readonly wallSeconds: {
    readonly setup: number
    readonly chaos: number
    readonly drain: number
    readonly total: number
  }
  readonly drained: boolean
  /** The flow limits' check (limits.ts); null with `limits` off or when the run did not get that far. */
  readonly limits: LimitsResult | null
  readonly config: {
    readonly workers: number
    readonly concurrency: number
    readonly speed: number
    readonly jobTimeoutSeconds: number
    readonly leaseWindowClockSeconds: number
    readonly leaseWindowWallSeconds: number
    readonly reapIntervalWallSeconds: number
    readonly skewMs: number
  }
  readonly faults: {
    readonly kills: number
    readonly pauses: number
    readonly pauseWallSeconds: ReadonlyArray<number>
    readonly restarts: ReadonlyArray<{ readonly ok: boolean; readonly downSeconds: number; readonly detail: string }>
    readonly unexpectedExits: ReadonlyArray<string>
    readonly notes: ReadonlyArray<string>
  }
  /** Worker logs and (SQLite) the database file, when kept. */
  readonly logs: string | null
  readonly error?: string
}

/** The whole run's summary. */
export interface ChaosReport {
  readonly ok: boolean
  readonly seed: number
  readonly wallSeconds: number
  readonly databases: Readonly<Partial<Record<DbKind, DbReport>>>
}

// ---------------------------------------------------------------------------------------------
// Child processes: every one is tracked, and killed when the run ends, fails, or this process exits.

const children = new Set<ChildProcess>()

const alive = (p: ChildProcess) => p.exitCode === null && p.signalCode === null

/** SIGCONT then SIGKILL to every worker process this module started that is still running. */
export const killAllChildren = (): void => {
  for (const p of children) {
    if (!alive(p)) continue
    try {
      p.kill("SIGCONT")
      p.kill("SIGKILL")
    } catch {
      // already gone
    }
  }
}
process.once("exit", killAllChildren)

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)))
/** Like sleep, for the losing side of a race: its timer does not keep the process alive. */
const deadline = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)).unref())

/** A small seeded PRNG (mulberry32), so a seed reproduces the job mix and the fault plan. */
const prng = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface WorkerProc {
  readonly slot: number
  readonly host: string
  readonly proc: ChildProcess
  readonly pid: number
  readonly ready: Promise<boolean>
  readonly exited: Promise<void>
  paused: boolean
  expectedExit: boolean
  /** READY seen: the worker runs. */
  running: boolean
}

/** A worker process before it is given a slot. */
interface Spare {
  readonly proc: ChildProcess
  readonly pid: number
  /** Modules loaded; waiting for START. False if it exited first. */
  readonly loaded: Promise<boolean>
  /** Worker running (after START). */
  readonly ready: Promise<boolean>
  readonly exited: Promise<void>
}

type Phase = "setup" | "chaos" | "drain" | "stopping"

const HOT_KEYS = 3

/** One job of the flow-limits workload, planned ahead: when (ms into the chaos phase) and what. */
interface LimitedJob {
  readonly at: number
  readonly type: "ChaosLimited" | "ChaosRated"
  readonly payload: ChaosPayload
}

/**
 * The flow-limits workload: every `LIMIT_STORM_EVERY_MS`, a storm that fills every limit at once —
 * `LIMIT_STORM_HOT` keyed jobs on one key (more than its rate limit: its starts fill two periods;
 * more than its per-key limit), `LIMIT_STORM_SPREAD` on the other keys (with them, more than the
 * cap) and `LIMIT_STORM_RATED` unkeyed ones (more than their rate limit) — and between storms a
 * trickle, one job a second 40 % of the time. No heavier: the slots of paused, killed and
 * timed-out runs stay taken for a lease window, and a backlog would outlast the drain.
 */
const LIMIT_STORM_EVERY_MS = 12_000
const LIMIT_STORM_HOT = 8
const LIMIT_STORM_SPREAD = 6
const LIMIT_STORM_RATED = 5

/** One database's run. */
class Scenario {
  readonly prefix: string
  readonly dir: string
  readonly url: string
  readonly clock: ChaosClockConfig
  readonly rng: () => number
  readonly windowWallMs: number
  readonly reapMs: number
  /**
   * How long an enqueue is retried (wall ms): a server restart, or on SQLite a worker paused
   * while it held the write lock (the lock comes back with the SIGCONT), so longer than the
   * longest pause.
   */
  readonly enqueueLimitMs: number
  readonly rt: ManagedRuntime.ManagedRuntime<JobStore.JobStore | JobStore.JobLeases | SqlClient.SqlClient, unknown>
  readonly slots: Array<WorkerProc | undefined> = []
  spare: Spare | undefined
  processes = 0
  readonly generations: Array<number> = []
  readonly enqueued: Array<EnqueuedJob> = []
  /** The limits workload's own generator, so the main job mix stays what a seed made it before. */
  readonly limitsRng: () => number
  readonly limitedTypes: ReturnType<typeof limitedJobs>
  readonly kills: Array<KillEvent> = []
  readonly pauses: Array<PauseEvent> = []
  readonly restarts: Array<RestartEvent> = []
  readonly unexpectedExits: Array<string> = []
  readonly notes: Array<string> = []
  phase: Phase = "setup"
  phaseStart = 0

  constructor(readonly kind: DbKind, readonly o: ChaosOptions, anchorMs: number, runDir: string, index: number) {
    this.prefix = `chaos_${kind}_${randomBytes(4).toString("hex")}_`
    this.dir = join(runDir, kind)
    mkdirSync(this.dir, { recursive: true })
    this.url = urlFor(kind, join(this.dir, "chaos.db"))
    this.clock = { speed: o.speed, anchorMs, skewMs: 0 }
    this.rng = prng(o.seed * 7919 + index)
    this.limitsRng = prng(o.seed * 104_729 + index + 17)
    this.limitedTypes = limitedJobs(o.speed)
    this.windowWallMs = ((JOB_TIMEOUT_SECONDS + Math.max(60, JOB_TIMEOUT_SECONDS)) * 1000) / o.speed
    this.reapMs = Math.max(250, Math.round(15_000 / o.speed))
    this.enqueueLimitMs = Math.max(20_000, this.longPauseMs(1) + 10_000)
    // The controller logs (the migrator's, say) go to stderr: stdout carries only the summary.
    this.rt = ManagedRuntime.make(
      SqlJobStore.layer({ prefix: this.prefix }).pipe(
        // On SQLite a short busy timeout: this process must never block on a paused worker's lock.
        Layer.provideMerge(controllerSqlLayer(this.url, 4)),
        Layer.provideMerge(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))),
        Layer.provideMerge(Logger.minimumLogLevel(LogLevel.Warning))
      )
    )
  }

  log(line: string) {
    const t = this.phaseStart === 0 ? "setup" : `${((Date.now() - this.phaseStart) / 1000).toFixed(1)}s`
    this.o.log(`[${this.kind} ${t}] ${line}`)
  }

  /** Runs an effect on this database under the (unskewed) chaos clock. */
  db<A, E>(effect: Effect.Effect<A, E, JobStore.JobStore | JobStore.JobLeases | SqlClient.SqlClient>): Promise<A> {
    return this.rt.runPromise(Effect.withClock(effect, chaosClock(this.clock)))
  }

  skewOf(slot: number) {
    return this.o.workers >= 2 && slot === this.o.workers - 1 ? this.o.skewMs : 0
  }

  /**
   * Starts a worker process that loads everything and then waits, as a warm spare, for the START
   * line that gives it a host name and a skew (worker.ts). Loading takes seconds on a busy
   * machine; a spare makes a replacement after a kill -9 start at once.
   */
  spawnProcess(): Spare {
    const n = this.processes++
    const logFd = openSync(join(this.dir, `process-${n}.log`), "a")
    const proc = spawn(process.execPath, ["--enable-source-maps", workerScript], {
      cwd: ROOT,
      env: {
        ...process.env,
        CHAOS_DB_URL: this.url,
        CHAOS_PREFIX: this.prefix,
        CHAOS_HOST: "",
        CHAOS_CONCURRENCY: String(this.o.concurrency),
        CHAOS_POLL_MS: "200",
        CHAOS_REAP_MS: String(this.reapMs),
        CHAOS_SPEED: String(this.clock.speed),
        CHAOS_ANCHOR_MS: String(this.clock.anchorMs),
        CHAOS_SKEW_MS: "0"
      },
      stdio: ["pipe", "pipe", logFd]
    })
    closeSync(logFd)
    children.add(proc)
    proc.stdin?.on("error", () => undefined)
    let onReady: (ok: boolean) => void = () => undefined
    const ready = new Promise<boolean>((r) => (onReady = r))
    const loaded = new Promise<boolean>((resolveLoaded) => {
      createInterface({ input: proc.stdout! }).on("line", (line) => {
        if (line.startsWith("LOADED ")) resolveLoaded(true)
        if (line.startsWith("READY ")) onReady(true)
      })
      proc.once("exit", () => {
        resolveLoaded(false)
        onReady(false)
      })
    })
    const exited = new Promise<void>((r) => proc.once("exit", () => r()))
    proc.once("exit", () => children.delete(proc))
    return { proc, pid: proc.pid ?? -1, loaded, ready, exited }
  }

  /** Makes a worker of `slot` out of the warm spare (starting a new spare), or out of a new process. */
  async startWorker(slot: number, tries = 3): Promise<WorkerProc> {
    const gen = this.generations[slot] ?? 0
    this.generations[slot] = gen + 1
    const skew = this.skewOf(slot)
    const host = `chaos-${this.kind}-w${slot}${gen > 0 ? `r${gen}` : ""}${skew !== 0 ? "-skew" : ""}`
    let p = this.spare
    this.spare = this.phase === "stopping" ? undefined : this.spawnProcess()
    if (p === undefined || !alive(p.proc)) p = this.spawnProcess()
    const w: WorkerProc = {
      slot,
      host,
      proc: p.proc,
      pid: p.pid,
      ready: p.ready,
      exited: p.exited,
      paused: false,
      expectedExit: false,
      running: false
    }
    void p.ready.then((ok) => (w.running = ok))
    this.slots[slot] = w
    p.proc.once("exit", (code, signal) => {
      if (w.expectedExit || this.phase === "stopping") return
      this.unexpectedExits.push(`${host} (pid ${w.pid}) exited on its own: code ${code}, signal ${signal}`)
      this.log(`${host} exited unexpectedly (code ${code}, signal ${signal}); replacing it`)
      if (this.slots[slot] === w && (this.phase === "chaos" || this.phase === "drain")) void this.startWorker(slot)
    })
    if (!(await p.loaded)) {
      // The process died while loading: try another (a few times), unless the run is stopping.
      this.notes.push(`worker process ${p.pid} exited before it had loaded`)
      if (tries > 1 && this.phase !== "stopping" && this.slots[slot] === w) return this.startWorker(slot, tries - 1)
      return w
    }
    p.proc.stdin?.write(`START ${host} ${skew}\n`)
    return w
  }

  /** Workers that run (READY seen) and are not paused. */
  active(): Array<WorkerProc> {
    return this.slots.filter((w): w is WorkerProc =>
      w !== undefined && w.running && alive(w.proc) && !w.paused && !w.expectedExit
    )
  }

  /** Hosts with a run in flight (keyed ones first when `keyed`), best effort. */
  async busyHosts(keyed: boolean): Promise<Array<string>> {
    const since = Date.now() - 5000
    try {
      const rows = await this.db(
        Effect.gen(this, function*() {
          const sql = (yield* SqlClient.SqlClient).withoutTransforms()
          const t = quoteIdent(sql, historyTable(this.prefix))
          // A hot key's or a limited key's run: its slots expire under the pause.
          const keyFilter = keyed ? " AND (lease_name LIKE 'key:hot-%' OR lease_name LIKE 'key:lim-%')" : ""
          return yield* sql.unsafe<{ host: string }>(
            `SELECT host FROM ${t} WHERE kind = 'run' AND end_ms IS NULL AND start_ms > ${since}${keyFilter}`
          )
        }).pipe(Effect.timeout("3 seconds"))
      )
      return rows.map((r) => String(r.host))
    } catch {
      return []
    }
  }

  /** A worker to pause or kill; never the last active one, so some worker keeps reaping. */
  async pickTarget(keyed: boolean): Promise<WorkerProc | undefined> {
    const candidates = this.active()
    if (candidates.length <= 1) return undefined
    const busy = new Set(await this.busyHosts(keyed))
    const preferred = candidates.filter((w) => busy.has(w.host))
    const pool = preferred.length > 0 ? preferred : candidates
    return pool[Math.floor(this.rng() * pool.length)]
  }

  async pause(durationMs: number) {
    const w = await this.pickTarget(true)
    if (w === undefined) return this.notes.push("a pause was skipped: it would have left no active worker")
    const from = Date.now()
    w.paused = true
    w.proc.kill("SIGSTOP")
    this.log(
      `SIGSTOP ${w.host} (pid ${w.pid}) for ${(durationMs / 1000).toFixed(1)} s (lease window ${
        (this.windowWallMs / 1000).toFixed(1)
      } s)`
    )
    try {
      await sleep(durationMs)
    } finally {
      if (alive(w.proc)) w.proc.kill("SIGCONT")
      w.paused = false
      const to = Date.now()
      this.pauses.push({ host: w.host, pid: w.pid, from, to })
      this.log(`SIGCONT ${w.host} after ${((to - from) / 1000).toFixed(1)} s`)
    }
  }

  async kill() {
    const w = await this.pickTarget(false)
    if (w === undefined) return this.notes.push("a kill was skipped: it would have left no active worker")
    w.expectedExit = true
    const at = Date.now()
    w.proc.kill("SIGKILL")
    this.kills.push({ host: w.host, pid: w.pid, at })
    this.log(`kill -9 ${w.host} (pid ${w.pid})`)
    await Promise.race([w.exited, deadline(5000)])
    await sleep(500)
    if (this.phase === "chaos" || this.phase === "drain") {
      // Not awaited: if the spare is still loading, the replacement comes when it has loaded.
      void this.startWorker(w.slot).then((r) =>
        r.ready.then((ok) => this.log(`replacement ${r.host} (pid ${r.pid}) ${ok ? "running" : "failed to start"}`))
      )
    }
  }

  /** A fault of one Galera node, reported with the server restarts (same summary field). */
  async nodeFault(fault: Effect.Effect<RestartReport>) {
    const from = Date.now()
    const r = await Effect.runPromise(fault)
    const to = Date.now()
    this.restarts.push({ from, to, ok: r.ok, detail: r.detail })
    this.log(`galera node fault ${r.ok ? "done" : "FAILED"} in ${((to - from) / 1000).toFixed(1)} s: ${r.detail}`)
  }

  async restart() {
    this.log(`restarting the ${this.kind} server`)
    const from = Date.now()
    const r = await Effect.runPromise(restartServer(this.kind))
    const to = Date.now()
    this.restarts.push({ from, to, ok: r.ok, detail: r.detail })
    this.log(`server restart ${r.ok ? "done" : "FAILED"} in ${((to - from) / 1000).toFixed(1)} s: ${r.detail}`)
  }

  payload(
    seq: number
  ): { readonly type: typeof ChaosPlain | typeof ChaosKeyed | typeof ChaosOnce; readonly payload: ChaosPayload } {
    const r = this.rng
    const kindRoll = r()
    const durationRoll = r()
    const failRoll = r()
    const type = kindRoll < 0.05 ? ChaosOnce : kindRoll < 0.45 ? ChaosPlain : ChaosKeyed
    const key = type !== ChaosKeyed ? undefined : kindRoll < 0.75 ? `hot-${Math.floor(r() * HOT_KEYS)}` : `k-${seq}`
    const ms = durationRoll < 0.84 ? 20 + Math.floor(r() * 230) : 1000 + Math.floor(r() * 1500)
    const overrunUntil = type !== ChaosOnce && durationRoll > 0.98 ? 1 : 0
    const failUntil = failRoll < 0.1 ? 1 : failRoll < 0.13 ? 2 : failRoll < 0.14 ? 99 : 0
    return { type, payload: { seq, ...(key === undefined ? {} : { key }), ms, failUntil, overrunUntil } }
  }

  async enqueueLoop(endAt: number) {
    let seq = 0
    while (Date.now() < endAt) {
      const due = Math.floor(((Date.now() - this.phaseStart) / 1000) * this.o.rate)
      while (seq < due && Date.now() < endAt) {
        const { payload, type } = this.payload(seq)
        const at = Date.now()
        let id: string | null = null
        try {
          // The unique key makes a retry after a lost reply find the job instead of adding one.
          const r = await this.db(
            retryFor(Job.enqueue(type, payload, { uniqueKey: `${this.prefix}${seq}` }), this.enqueueLimitMs, 500)
          )
          id = r.id
        } catch (e) {
          this.log(`enqueue #${seq} never came back: ${String(e).slice(0, 200)}`)
        }
        this.enqueued.push({
          seq,
          id,
          name: type.name,
          leaseName: payload.key === undefined ? null : `key:${payload.key}`,
          at
        })
        seq++
      }
      await sleep(100)
    }
  }

  /** The flow-limits workload of the chaos phase (see `LimitedJob`), planned from the seed. */
  limitsPlan(): Array<LimitedJob> {
    const r = this.limitsRng
    const total = this.o.seconds * 1000
    const spec = limitsSpec(this.o.speed)
    const out: Array<LimitedJob> = []
    let seq = 0
    const job = (at: number, type: LimitedJob["type"], key: string | undefined) => {
      const roll = r()
      const ms = roll < 0.7 ? 30 + Math.floor(r() * 170) : 600 + Math.floor(r() * 800)
      // A timed-out run's slots are left to expire, not released.
      const overrunUntil = roll > 0.985 ? 1 : 0
      const failUntil = r() < 0.08 ? 1 : 0
      out.push({
        at,
        type,
        payload: { seq: seq++, ...(key === undefined ? {} : { key }), ms, failUntil, overrunUntil }
      })
    }
    const spread = () => `lim-${1 + Math.floor(r() * (spec.limited.keys - 1))}`
    // Storms not too close to the end: their backlog is what the drain waits for.
    for (let at = 2000; at < total - 5000; at += LIMIT_STORM_EVERY_MS) {
      for (let i = 0; i < LIMIT_STORM_HOT; i++) job(at, "ChaosLimited", "lim-0")
      for (let i = 0; i < LIMIT_STORM_SPREAD; i++) job(at, "ChaosLimited", spread())
      for (let i = 0; i < LIMIT_STORM_RATED; i++) job(at, "ChaosRated", undefined)
    }
    for (let at = 1000; at < total; at += 1000) {
      if (r() < 0.4) {
        if (r() < 0.7) job(at, "ChaosLimited", r() < 0.4 ? "lim-0" : spread())
        else job(at, "ChaosRated", undefined)
      }
    }
    return out.sort((a, b) => a.at - b.at)
  }

  async limitsLoop(endAt: number) {
    const plan = this.limitsPlan()
    for (const j of plan) {
      await sleep(this.phaseStart + j.at - Date.now())
      if (Date.now() >= endAt) break
      const type = this.limitedTypes[j.type]
      const at = Date.now()
      let id: string | null = null
      try {
        const r = await this.db(
          retryFor(
            Job.enqueue(type, j.payload, { uniqueKey: `${this.prefix}L${j.payload.seq}` }),
            this.enqueueLimitMs,
            500
          )
        )
        id = r.id
      } catch (e) {
        this.log(`enqueue of limited #${j.payload.seq} never came back: ${String(e).slice(0, 200)}`)
      }
      // No lease name: the key-idle measure is for the unlimited keys (a limited key idles by design).
      this.enqueued.push({ seq: 1_000_000 + j.payload.seq, id, name: type.name, leaseName: null, at })
    }
  }

  /** leasehold's record of lost leases for this prefix (the lost_leases table). */
  async lostLeases(): Promise<Array<LostLeaseRecord>> {
    return this.db(
      Effect.gen(this, function*() {
        const sql = (yield* SqlClient.SqlClient).withoutTransforms()
        const rows = yield* sql.unsafe<Record<string, unknown>>(
          `SELECT lease_name, job_id, attempt, holder, detected FROM ${quoteIdent(sql, `${this.prefix}lost_leases`)}`
        )
        return rows.map((r) => ({
          leaseName: String(r.lease_name),
          jobId: String(r.job_id),
          attempt: Number(r.attempt),
          holder: r.holder === null || r.holder === undefined ? null : String(r.holder),
          detected: String(r.detected)
        }))
      })
    )
  }

  /** A long pause (wall ms) for a roll `r` in [0, 1]: past the window, the skew and two reaper intervals. */
  longPauseMs(r: number): number {
    return this.windowWallMs + Math.abs(this.o.skewMs) / this.o.speed + 2 * this.reapMs + 2000 + r * 1000
  }

  /** How long the next pause lasts (wall ms): see `ChaosOptions.pauses`. */
  pauseLength(index: number): number {
    const long = this.o.pauses === "long" || index % 2 === 1
    return long ? this.longPauseMs(this.rng()) : this.windowWallMs * (1.05 + this.rng() * 0.45)
  }

  /** The fault plan, in ms after the chaos phase starts. */
  plan(): Array<{ readonly at: number; readonly run: () => Promise<unknown> }> {
    const total = this.o.seconds * 1000
    const out: Array<{ readonly at: number; readonly run: () => Promise<unknown> }> = []
    if (this.o.faults) {
      let t = 3000
      for (let i = 0; i < 50; i++) {
        const d = this.pauseLength(i)
        // Pauses may not run past the chaos phase, except the first (a short run still gets one).
        if (i > 0 ? t + d > total : t > total - 2000) break
        const start = t
        out.push({ at: start, run: () => this.pause(d) })
        t = start + d + 3000 + this.rng() * 4000
      }
      if (out.length === 0) this.notes.push(`no pause: the chaos phase (${this.o.seconds} s) is too short`)
      const kills = Math.max(2, Math.floor(this.o.seconds / 20))
      for (let i = 0; i < kills; i++) out.push({ at: ((i + 0.5) / kills) * total, run: () => this.kill() })
    }
    if (this.o.restart && this.kind !== "sqlite" && this.kind !== "galera") {
      out.push({ at: (this.kind === "pg" ? 0.4 : 0.55) * total, run: () => this.restart() })
    }
    if (this.kind === "galera" && (this.o.faults || this.o.restart)) {
      // Two different nodes: one killed (-9) and restarted (it rejoins), one cut off from the group.
      const killed = 1 + Math.floor(this.rng() * 3)
      const cut = 1 + ((killed - 1 + 1 + Math.floor(this.rng() * 2)) % 3)
      out.push({ at: 0.25 * total, run: () => this.nodeFault(killGaleraNode(killed, 5000)) })
      out.push({ at: 0.6 * total, run: () => this.nodeFault(isolateGaleraNode(cut, 8000)) })
    }
    return out
  }

  async statusCounts(): Promise<Record<string, number>> {
    const rows = await this.db(Effect.flatMap(JobStore.JobStore, (s) => s.counts).pipe(Effect.timeout("10 seconds")))
    const out: Record<string, number> = {}
    for (const r of rows) out[r.status] = (out[r.status] ?? 0) + r.count
    return out
  }

  async stopWorkers() {
    this.phase = "stopping"
    if (this.spare !== undefined && alive(this.spare.proc)) this.spare.proc.kill("SIGKILL")
    const ws = this.slots.filter((w): w is WorkerProc => w !== undefined && alive(w.proc))
    for (const w of ws) {
      w.expectedExit = true
      w.proc.kill("SIGCONT")
      w.proc.kill("SIGTERM")
    }
    await Promise.race([Promise.all(ws.map((w) => w.exited)), deadline(10_000)])
    for (const w of ws) if (alive(w.proc)) w.proc.kill("SIGKILL")
    await Promise.race([Promise.all(ws.map((w) => w.exited)), deadline(5_000)])
  }

  async run(): Promise<DbReport> {
    const t0 = Date.now()
    let chaosMs = 0
    let drainMs = 0
    let drained = false
    let result: CheckResult | undefined
    let limits: LimitsResult | null = null
    let error: string | undefined
    try {
      await this.db(
        Effect.gen(this, function*() {
          yield* (yield* Migrator.make({ prefix: this.prefix })).run
          const sql = (yield* SqlClient.SqlClient).withoutTransforms()
          yield* sql.unsafe(historyDdl(quoteIdent(sql, historyTable(this.prefix))))
          yield* (yield* Fences.make({ table: fencesTable(this.prefix) })).ensureTable
        })
      )
      const ready = await Promise.race([
        Promise.all(Array.from({ length: this.o.workers }, (_, i) => this.startWorker(i).then((w) => w.ready))),
        deadline(180_000).then(() => [false])
      ])
      if (ready.some((r) => !r)) throw new Error(`workers did not all start within 180 s (see ${this.dir})`)

      // Chaos phase.
      this.phase = "chaos"
      this.phaseStart = Date.now()
      this.log(`${this.o.workers} workers up (prefix ${this.prefix}); chaos for ${this.o.seconds} s`)
      const endAt = this.phaseStart + this.o.seconds * 1000
      const faults = this.plan().map(async (f) => {
        await sleep(this.phaseStart + f.at - Date.now())
        if (Date.now() < endAt) await f.run() // a pause started in time may end after endAt
      })
      await Promise.all([this.enqueueLoop(endAt), ...(this.o.limits ? [this.limitsLoop(endAt)] : []), ...faults])
      chaosMs = Date.now() - this.phaseStart

      // Drain: every job completed, dead or interrupted, within a bound.
      this.phase = "drain"
      const drainStart = Date.now()
      const limit = Math.max(45_000, 3 * this.windowWallMs + 20_000)
      this.log(`${this.enqueued.length} enqueued; draining (at most ${(limit / 1000).toFixed(0)} s)`)
      let last: Record<string, number> = {}
      while (Date.now() - drainStart < limit) {
        try {
          last = await this.statusCounts()
          // A worker resumed just before the drain still has to end the attempt it was paused in
          // and record it (a fenced outcome, a lost lease): stopped at once, its run's end would
          // be missing, and an overlap it ran in would look unreported.
          const settled = this.pauses.every((p) => Date.now() - p.to >= RESUMED_SETTLE_MS)
          if ((last.pending ?? 0) + (last.processing ?? 0) === 0 && settled) {
            drained = true
            break
          }
        } catch {
          // the database may still be coming back
        }
        await sleep(1000)
      }
      drainMs = Date.now() - drainStart
      this.log(
        drained
          ? `drained in ${(drainMs / 1000).toFixed(1)} s`
          : `NOT drained after ${(drainMs / 1000).toFixed(0)} s: ${JSON.stringify(last)}`
      )
      await this.stopWorkers()

      const endedAt = Date.now()
      const [jobs, history] = await this.db(
        Effect.all([Effect.flatMap(JobStore.JobStore, (s) => s.list({ limit: 1_000_000 })), readHistory(this.prefix)])
      )
      const skewSlot = this.o.workers >= 2 ? this.o.workers - 1 : -1
      const skewedHost = history.find((h) =>
        h.kind === "run" && h.host.startsWith(`chaos-${this.kind}-w${skewSlot}`)
      )?.host ??
        `chaos-${this.kind}-w${skewSlot}-skew`
      result = check({
        clock: this.clock,
        startedAt: this.phaseStart,
        endedAt,
        enqueued: this.enqueued,
        jobs,
        history,
        kills: this.kills,
        pauses: this.pauses,
        restarts: this.restarts,
        skewed: skewSlot < 0 || this.o.skewMs === 0 ? null : { host: skewedHost, skewMs: this.o.skewMs }
      })
      if (this.o.limits) {
        limits = checkLimits({
          spec: limitsSpec(this.o.speed),
          clock: this.clock,
          startedAt: this.phaseStart,
          endedAt,
          history,
          lostLeases: await this.lostLeases(),
          kills: this.kills,
          pauses: this.pauses,
          skewMs: skewSlot < 0 ? 0 : this.o.skewMs
        })
        result = { ...result, problems: [...result.problems, ...limits.problems] }
      }
    } catch (e) {
      error = e instanceof Error ? e.message : String(e)
      this.log(`failed: ${error}`)
    } finally {
      await this.stopWorkers()
    }
    const ok = error === undefined && result !== undefined && result.problems.length === 0 && drained
    const keepHere = this.o.keep || (!ok && this.o.keepOnFailure)
    try {
      if (!keepHere) await this.db(dropPrefixed(this.prefix))
    } catch (e) {
      this.notes.push(`dropping the tables failed: ${String(e).slice(0, 200)}`)
    }
    await this.rt.dispose().catch(() => undefined)
    if (!keepHere) rmSync(this.dir, { recursive: true, force: true })
    const empty: CheckResult = {
      jobs: {
        enqueued: this.enqueued.length,
        enqueueUnconfirmed: 0,
        completed: 0,
        failed: 0,
        interrupted: 0,
        pending: 0,
        processing: 0
      },
      attempts: {
        runs: 0,
        outcomes: {},
        leasesLost: 0,
        runsWithoutOutcome: 0,
        runsWithoutOutcomeKilled: 0,
        runsWithoutEnd: 0,
        leaseMismatches: 0
      },
      queueLatencyMs: { p50: null, p95: null, max: null },
      overlaps: { total: 0, reported: 0, unreported: 0, details: [] },
      fencing: { guardedWrites: 0, staleWritesRefused: 0, staleWritesApplied: 0, guardErrors: 0 },
      lost: { count: 0, details: [] },
      overRun: { count: 0, details: [] },
      keyIdle: {
        longestMs: 0,
        key: null,
        fromS: null,
        toS: null,
        cause: null,
        longestUnexplainedBlockedMs: 0,
        longestUnexplainedBlocked: null
      },
      skew: null,
      problems: [error ?? "not checked"]
    }
    return {
      db: this.kind,
      ok,
      prefix: this.prefix,
      ...(result ?? empty),
      ...(error === undefined ? {} : { error }),
      drained,
      limits,
      wallSeconds: {
        setup: Math.round((this.phaseStart === 0 ? Date.now() - t0 : this.phaseStart - t0) / 100) / 10,
        chaos: Math.round(chaosMs / 100) / 10,
        drain: Math.round(drainMs / 100) / 10,
        total: Math.round((Date.now() - t0) / 100) / 10
      },
      config: {
        workers: this.o.workers,
        concurrency: this.o.concurrency,
        speed: this.o.speed,
        jobTimeoutSeconds: JOB_TIMEOUT_SECONDS,
        leaseWindowClockSeconds: JOB_TIMEOUT_SECONDS + Math.max(60, JOB_TIMEOUT_SECONDS),
        leaseWindowWallSeconds: Math.round(this.windowWallMs / 100) / 10,
        reapIntervalWallSeconds: this.reapMs / 1000,
        skewMs: this.o.workers >= 2 ? this.o.skewMs : 0
      },
      faults: {
        kills: this.kills.length,
        pauses: this.pauses.length,
        pauseWallSeconds: this.pauses.map((p) => Math.round((p.to - p.from) / 100) / 10),
        restarts: this.restarts.map((r) => ({
          ok: r.ok,
          downSeconds: Math.round((r.to - r.from) / 100) / 10,
          detail: r.detail
        })),
        unexpectedExits: this.unexpectedExits,
        notes: this.notes
      },
      logs: keepHere ? this.dir : null
    }
  }
}

/**
 * Runs the chaos scenario on each database in `options.dbs`, side by side, and returns the
 * summary. Every worker process it started is dead when it returns (or throws).
 */
export const runChaos = async (partial: Partial<ChaosOptions> = {}): Promise<ChaosReport> => {
  const o: ChaosOptions = { ...defaultOptions, ...partial }
  if (!(o.seconds > 0) || !(o.workers >= 1) || !(o.speed >= 1) || !(o.rate > 0) || !(o.concurrency >= 1)) {
    throw new Error(`bad chaos options: ${JSON.stringify({ ...o, log: undefined })}`)
  }
  const started = Date.now()
  const runDir = mkdtempSync(join(tmpdir(), "leasehold-chaos-"))
  const anchorMs = Date.now()
  try {
    workerScript = await buildWorker()
    const scenarios = o.dbs.map((kind, i) => new Scenario(kind, o, anchorMs, runDir, i))
    const reports = await Promise.all(scenarios.map((s) => s.run()))
    const databases: Partial<Record<DbKind, DbReport>> = {}
    for (const r of reports) databases[r.db] = r
    return {
      ok: reports.every((r) => r.ok),
      seed: o.seed,
      wallSeconds: Math.round((Date.now() - started) / 100) / 10,
      databases
    }
  } finally {
    killAllChildren()
    if (workerScript !== "") rmSync(workerScript, { force: true })
    // Only the run's own directory, and only when empty: a failed database's logs stay.
    try {
      rmdirSync(runDir)
    } catch {
      // not empty: logs kept
    }
  }
}
