/**
 * Where the command line's text goes, and the Effect `Console` every command, @effect/cli's help
 * and its parse errors write through: without colour where there should be none (./colour.ts),
 * and holding back @effect/cli's own messages for a command line it could not parse. The streams
 * and the environment are a `CliIo`: the process's own for the `leasehold` binary, captured text
 * for `runInProcess` (./main.ts). Loaded for every command, so it imports only effect's own
 * modules by their deep paths.
 */
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { Console as NodeConsole } from "node:console"
import { Writable } from "node:stream"
import { colourFor, type Env, outputWidth, stripAnsi } from "./colour.ts"

/** An output stream as the CLI sees it: text in, and whether (and how wide) it is a terminal. */
export interface Output {
  readonly isTTY?: boolean
  readonly columns?: number
  readonly rows?: number
  readonly write: (text: string) => unknown
}

/** What a run of the CLI reads its surroundings from and writes to, instead of `process`. */
export interface CliIo {
  readonly env: Env
  readonly stdout: Output
  readonly stderr: Output
}

/** The process's own environment and streams: what the `leasehold` binary runs with. */
export const processIo = (): CliIo => ({ env: process.env, stdout: process.stdout, stderr: process.stderr })

/** A Writable that hands each chunk, as text, to `write`. */
const sink = (write: (text: string) => void): Writable =>
  new Writable({
    decodeStrings: false,
    write(chunk: unknown, _encoding, done) {
      write(typeof chunk === "string" ? chunk : String(chunk))
      done()
    }
  })

/** An Effect `Console` whose every method goes to `unsafe` (here a node `Console`). */
const consoleOf = (unsafe: Console.UnsafeConsole): Console.Console => ({
  [Console.TypeId]: Console.TypeId,
  assert: (condition, ...args) => Effect.sync(() => unsafe.assert(condition, ...args)),
  clear: Effect.sync(() => unsafe.clear()),
  count: (label) => Effect.sync(() => unsafe.count(label)),
  countReset: (label) => Effect.sync(() => unsafe.countReset(label)),
  debug: (...args) => Effect.sync(() => unsafe.debug(...args)),
  dir: (item, options) => Effect.sync(() => unsafe.dir(item, options)),
  dirxml: (...args) => Effect.sync(() => unsafe.dirxml(...args)),
  error: (...args) => Effect.sync(() => unsafe.error(...args)),
  group: (options) =>
    Effect.sync(
      () => (options?.collapsed === true ? unsafe.groupCollapsed(options.label) : unsafe.group(options?.label))
    ),
  groupEnd: Effect.sync(() => unsafe.groupEnd()),
  info: (...args) => Effect.sync(() => unsafe.info(...args)),
  log: (...args) => Effect.sync(() => unsafe.log(...args)),
  table: (data, properties) => Effect.sync(() => unsafe.table(data, properties)),
  time: (label) => Effect.sync(() => unsafe.time(label)),
  timeEnd: (label) => Effect.sync(() => unsafe.timeEnd(label)),
  timeLog: (label, ...args) => Effect.sync(() => unsafe.timeLog(label, ...args)),
  trace: (...args) => Effect.sync(() => unsafe.trace(...args)),
  warn: (...args) => Effect.sync(() => unsafe.warn(...args)),
  unsafe
})

/** One run of the CLI: its streams, its console, and the stderr text held back so far. */
export interface Session {
  readonly io: CliIo
  /** The console the run writes through (see `makeSession`). */
  readonly console: Console.Console
  /** From now on, stderr text goes straight out (anything held back before goes first). */
  readonly commandStarted: () => void
  /** The stderr text written before any command started (@effect/cli's parse errors); forgets it. */
  readonly takeHeld: () => string
}

/**
 * A run's session. Its console's text for a stream that may not have colour (`colourFor`) loses
 * its ANSI codes, which @effect/cli puts in its help and error text unconditionally. Until a
 * command starts running (`commandStarted`), stderr text is held back instead of written: it can
 * only be @effect/cli's own message for a command line it could not parse, which the caller
 * (src/cli/main.ts) turns into the CLI's one line with `takeHeld`. The state is the session's,
 * not the module's, so runs in one process (src/cli/main.ts, `runInProcess`) do not share it.
 */
export const makeSession = (io: CliIo): Session => {
  const outColour = colourFor(io.stdout, io.env)
  const errColour = colourFor(io.stderr, io.env)
  let started = false
  let held = ""
  const stdout = sink((text) => void io.stdout.write(outColour ? text : stripAnsi(text)))
  const stderr = sink((text) => {
    const plain = errColour ? text : stripAnsi(text)
    if (started) io.stderr.write(plain)
    else held += plain
  })
  return {
    io,
    console: consoleOf(new NodeConsole({ stdout, stderr, colorMode: false })),
    commandStarted: () => {
      started = true
      if (held !== "") io.stderr.write(held)
      held = ""
    },
    takeHeld: () => {
      const text = held
      held = ""
      return text
    }
  }
}

/**
 * The session of the run at hand, provided by src/cli/main.ts; a run that did not provide one
 * (a command's effect run on its own) gets one on the process's streams.
 */
export class CurrentSession extends Context.Reference<CurrentSession>()("leasehold/cli/CurrentSession", {
  defaultValue: (): Session => makeSession(processIo())
}) {}

/** Run as a command starts running (src/cli/commands/action.ts): see `Session.commandStarted`. */
export const commandStarted: Effect.Effect<void> = Effect.map(CurrentSession, (session) => session.commandStarted())

/** How wide the run's tables may be (`outputWidth` of its stdout and environment). */
export const currentWidth: Effect.Effect<number> = Effect.map(
  CurrentSession,
  (session) => outputWidth(session.io.stdout, session.io.env)
)
