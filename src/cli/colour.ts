/**
 * How the command line's text should look where it goes: colour only for a terminal (or when
 * forced), tables as wide as the terminal. Plain functions with no imports: src/cli/bin.ts uses
 * them before anything else is loaded.
 */

/**
 * The environment the decisions below read: the process's for the `leasehold` binary, the one a
 * caller gives for `runInProcess` (src/cli/main.ts). Always passed in, never read from `process`
 * here, so that a run in a process of its own and a run inside another one decide alike.
 */
export type Env = Readonly<Record<string, string | undefined>>

/**
 * Whether text for `stream` may carry ANSI colour codes. `FORCE_COLOR` (anything but `0` or
 * `false`) forces colour, `FORCE_COLOR=0` forbids it; otherwise `NO_COLOR` (set and not empty,
 * https://no-color.org) forbids it; otherwise only a terminal that is not `TERM=dumb` gets colour,
 * never a pipe or a file.
 */
export const colourFor = (stream: { readonly isTTY?: boolean }, env: Env): boolean => {
  const force = env.FORCE_COLOR
  if (force !== undefined) return !(force === "0" || force.toLowerCase() === "false")
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false
  return stream.isTTY === true && env.TERM !== "dumb"
}

const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g

/** `text` without ANSI escape sequences. */
export const stripAnsi = (text: string): string => text.replace(ANSI, "")

/**
 * How wide a table may be: `COLUMNS` when set to a positive whole number, else the terminal's
 * width when stdout is one, else unlimited. Piped or redirected output is never cut: it is read
 * by grep, awk or a file, where a cut value is a lost value (and `--json` is there for scripts).
 */
export const outputWidth = (stdout: { readonly isTTY?: boolean; readonly columns?: number }, env: Env): number => {
  const columns = Number(env.COLUMNS)
  if (env.COLUMNS !== undefined && Number.isInteger(columns) && columns > 0) return columns
  if (stdout.isTTY === true && typeof stdout.columns === "number" && stdout.columns > 0) return stdout.columns
  return Number.POSITIVE_INFINITY
}
