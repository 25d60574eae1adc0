/**
 * `leasehold [command…] --help` (or `-h`) served from ./helpPages.ts without loading @effect/cli
 * and effect (src/cli/bin.ts). Apart from bin.ts so that the CLI tests (test/support/cli.ts) can
 * ask it for every page in their own process; its only import is ./colour.ts, which has none.
 */
import { colourFor, type Env, stripAnsi } from "./colour.ts"

/** The command path of a plain help request (`jobs list --help` → "jobs list"), or undefined. */
export const helpRequest = (args: ReadonlyArray<string>): string | undefined => {
  const last = args.at(-1)
  if (last !== "--help" && last !== "-h") return undefined
  const path = args.slice(0, -1)
  return path.every((a) => /^[a-z]+$/.test(a)) ? path.join(" ") : undefined
}

/**
 * The text `leasehold <argv>` prints when `argv` asks for a known command's help page: in colour
 * or not as `stdout` and `env` allow (./colour.ts). Undefined for anything else, which the CLI
 * itself runs (./main.ts); ./helpPages.ts is loaded only for a help request.
 */
export const fastHelp = async (
  argv: ReadonlyArray<string>,
  stdout: { readonly isTTY?: boolean },
  env: Env
): Promise<string | undefined> => {
  const page = helpRequest(argv)
  if (page === undefined) return undefined
  const text = (await import("./helpPages.ts")).HELP_PAGES[page]
  return text === undefined ? undefined : colourFor(stdout, env) ? text : stripAnsi(text)
}
