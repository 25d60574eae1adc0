/**
 * Wake-ups within one process: an enqueue rings the workers of the same process that claim from
 * the same tables, at once, on every database (PostgreSQL's LISTEN/NOTIFY also reaches other
 * processes; MySQL/MariaDB and SQLite have no such signal, and their workers otherwise wait out
 * their poll interval: about half a second on average at the default 1 s, issue 13).
 *
 * A ring is only a hint: a worker woken for a job another process took, or for the same job
 * twice, finds nothing and goes back to sleep.
 */
import { Effect, Stream } from "effect"

const listeners = new Map<string, Set<() => void>>()

/** Rings every listener on `channel` in this process. */
export const ring = (channel: string): Effect.Effect<void> =>
  Effect.sync(() => {
    for (const wake of listeners.get(channel) ?? []) wake()
  })

/** A signal each time `channel` rings in this process, for as long as the stream runs. */
export const listen = (channel: string): Stream.Stream<void> =>
  Stream.async<void>((emit) => {
    const wake = () => void emit.single(undefined)
    const set = listeners.get(channel) ?? new Set()
    set.add(wake)
    listeners.set(channel, set)
    return Effect.sync(() => {
      set.delete(wake)
      if (set.size === 0) listeners.delete(channel)
    })
  }, { bufferSize: 1, strategy: "sliding" })
