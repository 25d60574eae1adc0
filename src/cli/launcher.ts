/**
 * A worker started by `npx leasehold worker` or `npm exec -- leasehold worker` runs under npm
 * (through a `sh -c` on POSIX), and npm does not pass SIGTERM on to it: `kill -TERM` on npm's
 * process ends npm (and that shell) and leaves the worker running, its parent gone. This notices
 * that, so the worker can stop as it does on SIGTERM. In production, start the worker with
 * `node_modules/.bin/leasehold worker` (or `exec` it from a shell script) so signals reach it.
 */
import * as Effect from "effect/Effect"
import { readFileSync } from "node:fs"
import type { Env } from "./colour.ts"

/**
 * Whether npm exec (`npx` is the same command) started this process: npm 7 and later set
 * `npm_command=exec` in the environment of what it runs, and `npm_lifecycle_event=npx`.
 */
export const startedByNpmExec = (env: Env): boolean =>
  env["npm_command"] === "exec" || env["npm_lifecycle_event"] === "npx"

/** The shells npm runs a command through (`sh -c`): its parent, not the shell, is npm. */
const SHELLS = new Set(["sh", "dash", "bash", "zsh", "ash", "ksh", "busybox"])

/**
 * A process's name and parent as Linux's /proc/<pid>/stat gives them, or undefined where that
 * cannot be read (another system, a process gone).
 */
const procStat = (pid: number): { readonly name: string; readonly parent: number } | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // "pid (name) state ppid …": the name may hold spaces and parentheses, so it ends at the last ")".
    const close = stat.lastIndexOf(")")
    const parent = Number(stat.slice(close + 2).split(" ")[1])
    return Number.isInteger(parent) ? { name: stat.slice(stat.indexOf("(") + 1, close), parent } : undefined
  } catch {
    return undefined
  }
}

/**
 * Who launched this process: its parent and, when the parent is a shell, the shell's parent
 * (npm, which may die while the shell lives on, waiting for the worker).
 */
export interface Launcher {
  readonly parent: number
  readonly shellParent: number | undefined
}

/** The launcher of this process as it is now. */
export const currentLauncher = (): Launcher => {
  const parent = process.ppid
  const stat = procStat(parent)
  return { parent, shellParent: stat !== undefined && SHELLS.has(stat.name) ? stat.parent : undefined }
}

/** Whether the process that launched this one (`start`) is gone: a new parent, or a shell with a new parent. */
export const launcherGone = (start: Launcher, now: Launcher): boolean =>
  now.parent !== start.parent ||
  (start.shellParent !== undefined && now.shellParent !== undefined && now.shellParent !== start.shellParent)

/**
 * Completes once the process that launched this one (`start`, taken when the command began) is
 * gone, checking every `everyMs` (the worker's poll interval); never while it stays.
 */
export const launcherExit = (start: Launcher, everyMs: number): Effect.Effect<void> => {
  const check: Effect.Effect<void> = Effect.suspend(() =>
    launcherGone(start, currentLauncher()) ? Effect.void : Effect.zipRight(Effect.sleep(everyMs), check)
  )
  return check
}
