/**
 * A command's handler that loads what it does only when it runs: the declarations in this folder
 * (options, arguments, help) are all `--help` and the parser need, and they stay light; the
 * database, the runtime and the drivers come with the action module (src/cli/actions/).
 */
import * as Effect from "effect/Effect"
import { commandStarted } from "../terminal.ts"

/** A handler for `Command.make` that imports `load()` and runs `pick(module)` with the parsed values. */
export const action = <M, C, E>(
  load: () => Promise<M>,
  pick: (module: M) => (config: C) => Effect.Effect<void, E>
) =>
(config: C): Effect.Effect<void, E> =>
  Effect.zipRight(commandStarted, Effect.flatMap(Effect.promise(load), (module) => pick(module)(config)))
