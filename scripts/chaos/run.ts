/**
 * `npm run chaos` (tsx scripts/chaos/run.ts): crash, pause, restart and clock-skew chaos against
 * leasehold workers, with an exclusivity checker. See chaos.ts for what it does and why.
 *
 *   tsx scripts/chaos/run.ts [--db pg|mysql|sqlite|galera|all]… [--seconds N] [--workers K]
 *                            [--restart | --no-restart] [--no-faults] [--long-pauses] [--speed S] [--skew-ms MS]
 *                            [--rate R] [--concurrency C] [--seed N] [--no-limits] [--keep]
 *
 * Defaults: all three databases side by side, 90 s of chaos each, 3 workers, speed 6, the server
 * restart on, the flow-limited job types on (`--no-limits`: without them) — the whole run ends
 * within 3 minutes. The restart is on by default only for the full run (no --db, --seconds or
 * --workers); otherwise ask for it with --restart.
 * Prints the JSON summary on stdout, progress on stderr. Exit code 1 when a database shows an
 * unreported overlap, a lost job, an over-run job, a stale write applied through the guard, a rate
 * window over its limit, an unreported moment over the type cap or a key's limit, or did not
 * drain; 2 on bad arguments.
 */
import { type ChaosOptions, defaultOptions, killAllChildren, runChaos } from "./chaos.ts"
import { DB_KINDS, type DbKind } from "./db.ts"

/** Parses the command line into chaos options; throws on anything it does not know. */
export const parseArgs = (argv: ReadonlyArray<string>): ChaosOptions => {
  const dbs: Array<DbKind> = []
  let restart: boolean | undefined
  let custom = false
  const o: { -readonly [K in keyof ChaosOptions]: ChaosOptions[K] } = { ...defaultOptions, limits: true }
  const numberAfter = (i: number, name: string): number => {
    const raw = argv[i + 1]
    const n = Number(raw)
    if (raw === undefined || raw === "" || !Number.isFinite(n)) throw new Error(`${name} needs a number`)
    return n
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    switch (arg) {
      case "--db": {
        const v = argv[++i]
        if (v === "all") dbs.push(...DB_KINDS)
        else if (v === "pg" || v === "postgres") dbs.push("pg")
        else if (v === "mysql" || v === "mariadb") dbs.push("mysql")
        else if (v === "sqlite") dbs.push("sqlite")
        else if (v === "galera") dbs.push("galera")
        else throw new Error(`--db: pg, mysql, sqlite, galera or all, not ${v}`)
        custom = true
        break
      }
      case "--seconds":
        o.seconds = numberAfter(i++, arg)
        custom = true
        break
      case "--workers":
        o.workers = Math.floor(numberAfter(i++, arg))
        custom = true
        break
      case "--speed":
        o.speed = numberAfter(i++, arg)
        break
      case "--skew-ms":
        o.skewMs = Math.round(numberAfter(i++, arg))
        break
      case "--rate":
        o.rate = numberAfter(i++, arg)
        break
      case "--concurrency":
        o.concurrency = Math.floor(numberAfter(i++, arg))
        break
      case "--seed":
        o.seed = Math.floor(numberAfter(i++, arg))
        break
      case "--restart":
        restart = true
        break
      case "--no-restart":
        restart = false
        break
      case "--long-pauses":
        o.pauses = "long"
        break
      case "--no-faults":
        o.faults = false
        break
      case "--keep":
        o.keep = true
        break
      case "--no-limits":
        o.limits = false
        break
      default:
        throw new Error(`unknown argument ${arg}`)
    }
  }
  if (dbs.length > 0) o.dbs = [...new Set(dbs)]
  o.restart = restart ?? !custom
  if (!(o.seconds >= 1 && o.seconds <= 3600)) throw new Error("--seconds: 1 to 3600")
  if (!(o.workers >= 1 && o.workers <= 16)) throw new Error("--workers: 1 to 16")
  if (!(o.speed >= 1 && o.speed <= 60)) throw new Error("--speed: 1 to 60")
  if (!(o.rate > 0 && o.rate <= 200)) throw new Error("--rate: more than 0, at most 200")
  if (!(o.concurrency >= 1 && o.concurrency <= 32)) throw new Error("--concurrency: 1 to 32")
  return o
}

const main = async () => {
  let options: ChaosOptions
  try {
    options = parseArgs(process.argv.slice(2))
  } catch (e) {
    process.stderr.write(`chaos: ${e instanceof Error ? e.message : String(e)}\n`)
    process.exit(2)
  }
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      killAllChildren()
      process.stderr.write(`chaos: ${signal}; workers killed\n`)
      process.exit(130)
    })
  }
  try {
    const report = await runChaos(options)
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`)
    process.exitCode = report.ok ? 0 : 1
  } catch (e) {
    killAllChildren()
    process.stderr.write(`chaos: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`)
    process.exitCode = 1
  }
}

await main()
