/**
 * CPU time per job, split between the worker's Node process (and of it, its main thread) and the
 * database server (issue 13: "the bench reports Node CPU µs per job for every system"). Linux
 * only: the main thread's and the server's time are read from /proc. For PostgreSQL it is every
 * `postgres` process's user + system time plus what the postmaster collected from backends that
 * already exited (cutime + cstime), so a pool closed before the reading still counts; for MariaDB
 * the one `mariadbd` process. SQLite runs inside Node, so its time is Node's. Other sessions'
 * queries on the same server count too: read the server figure from a quiet machine.
 */
import { readdirSync, readFileSync } from "node:fs"

const TICK_US = 1_000_000 / 100 // USER_HZ is 100 on Linux

// utime, stime, cutime, cstime of /proc/<pid>/stat, in clock ticks (fields 14–17).
const times = (pid: string): { comm: string; self: number; children: number } | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const close = stat.lastIndexOf(")")
    const comm = stat.slice(stat.indexOf("(") + 1, close)
    const f = stat.slice(close + 2).split(" ")
    // After "pid (comm) ", field 3 (state) is index 0, so utime (14) is index 11.
    return { comm, self: Number(f[11]) + Number(f[12]), children: Number(f[13]) + Number(f[14]) }
  } catch {
    return undefined
  }
}

/** Total CPU µs used so far by the database server behind `kind`, or undefined if not local. */
export const serverCpuUs = (kind: "postgres" | "mariadb" | "none"): number | undefined => {
  if (kind === "none") return undefined
  let pids: Array<string>
  try {
    pids = readdirSync("/proc").filter((p) => /^\d+$/.test(p))
  } catch {
    return undefined
  }
  let ticks = 0
  let seen = false
  for (const pid of pids) {
    const t = times(pid)
    if (t === undefined) continue
    if (kind === "postgres" && t.comm === "postgres") {
      seen = true
      ticks += t.self
      // The postmaster's children's times: exited backends (and the other processes it reaped).
      ticks += t.children
    } else if (kind === "mariadb" && (t.comm === "mariadbd" || t.comm === "mysqld")) {
      seen = true
      ticks += t.self
    }
  }
  return seen ? ticks * TICK_US : undefined
}

/**
 * CPU µs used so far by this process's main thread (/proc/self/task/<pid>): Node's time less
 * what its other threads spent, V8's helpers above all (optimizing compilation, parallel and
 * concurrent garbage collection), which `process.cpuUsage` counts too. Undefined off Linux.
 */
export const mainThreadCpuUs = (): number | undefined => {
  const t = times(`self/task/${process.pid}`)
  return t === undefined ? undefined : t.self * TICK_US
}

/** A running measurement of Node and server CPU; `stop(jobs)` gives µs per job. */
export const startCpu = (kind: "postgres" | "mariadb" | "none") => {
  const node = process.cpuUsage()
  const main = mainThreadCpuUs()
  const server = serverCpuUs(kind)
  return (jobs: number): { nodeCpuUsPerJob: number; nodeMainCpuUsPerJob?: number; dbCpuUsPerJob?: number } => {
    const d = process.cpuUsage(node)
    const mainAfter = mainThreadCpuUs()
    const after = serverCpuUs(kind)
    return {
      nodeCpuUsPerJob: (d.user + d.system) / jobs,
      ...(main === undefined || mainAfter === undefined ? {} : { nodeMainCpuUsPerJob: (mainAfter - main) / jobs }),
      ...(server === undefined || after === undefined ? {} : { dbCpuUsPerJob: (after - server) / jobs })
    }
  }
}
