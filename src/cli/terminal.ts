/**
 * The Effect `Console` every command, @effect/cli's help and its parse errors write through:
 * without colour where there should be none (./colour.ts), and holding back @effect/cli's own
 * messages for a command line it could not parse. Loaded for every command, so it imports only
 * effect's own modules by their deep paths.
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { Console as NodeConsole } from "node:console"
import { Writable } from "node:stream"
import { colourFor, type Env, stripAnsi } from "./colour.ts"

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

// Whether a command has started running, and the stderr text written before one did.
let started = false
let held = ""

/**
 * Called as a command starts running (src/cli/commands/action.ts): from then on, stderr text
 * goes straight out (anything held back before goes first).
 */
export const commandStarted = (): void => {
  started = true
  if (held !== "") process.stderr.write(held)
  held = ""
}

/** The stderr text written before any command started (@effect/cli's parse errors); forgets it. */
export const takeHeld = (): string => {
  const text = held
  held = ""
  return text
}

/**
 * The console the CLI runs with. Text for a stream that may not have colour (`colourFor`) loses
 * its ANSI codes, which @effect/cli puts in its help and error text unconditionally. Until a
 * command starts running (`commandStarted`), stderr text is held back instead of written: it can
 * only be @effect/cli's own message for a command line it could not parse, which the caller
 * (src/cli/main.ts) turns into the CLI's one line with `takeHeld`.
 */
export const cliConsole = (env: Env = process.env): Console.Console => {
  const outColour = colourFor(process.stdout, env)
  const errColour = colourFor(process.stderr, env)
  started = false
  held = ""
  const stdout = sink((text) => void process.stdout.write(outColour ? text : stripAnsi(text)))
  const stderr = sink((text) => {
    const plain = errColour ? text : stripAnsi(text)
    if (started) process.stderr.write(plain)
    else held += plain
  })
  return consoleOf(new NodeConsole({ stdout, stderr, colorMode: false }))
}
