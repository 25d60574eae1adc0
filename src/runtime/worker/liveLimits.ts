/**
 * The limits table as attempts see it (src/core/limits.ts; docs/behaviour.md §19): read at most
 * once per `LIMITS_FRESH_MS` per store in this process, shared by its workers, so a change made
 * anywhere applies to every attempt that starts a second later, for one statement a second. A
 * read that fails (the table not migrated yet, the database away) keeps the last rows read, or
 * none: the job types' own declarations.
 */
import { Effect } from "effect"
import { indexLimits, type LimitIndex } from "../../core/limits.ts"
import type { JobStoreApi } from "../../ports/JobStore.ts"
import { warnFailure } from "./explain.ts"

/** How old the rows an attempt goes by may be: the default poll interval. */
export const LIMITS_FRESH_MS = 1000

interface Cached {
  index: LimitIndex
  readAt: number
  reading: boolean
  warned: boolean
}

const NONE = indexLimits([])
const cache = new WeakMap<JobStoreApi, Cached>()

/**
 * The rows as last read here, read in place (no step of the Effect runtime: this is on every
 * attempt's path), and whether they are due to be read again; undefined when they have never
 * been read by this process. An attempt goes on with these rows and reads them again behind
 * itself, so no attempt waits for a read and none overtakes another meanwhile.
 */
export const limitsSnapshot = (
  store: JobStoreApi,
  now: number
): { readonly index: LimitIndex; readonly stale: boolean } | undefined => {
  const c = cache.get(store)
  if (c === undefined || c.readAt === -Infinity) return undefined
  return { index: c.index, stale: !c.reading && !(now - c.readAt < LIMITS_FRESH_MS && now >= c.readAt) }
}

/**
 * The limits rows indexed, as of at most `LIMITS_FRESH_MS` before `now` (`fresh`: read now). One
 * read at a time per store; attempts that start while it runs use the rows read before.
 */
export const liveLimits = (store: JobStoreApi, now: number, fresh = false): Effect.Effect<LimitIndex> => {
  let cached = cache.get(store)
  if (cached === undefined) cache.set(store, cached = { index: NONE, readAt: -Infinity, reading: false, warned: false })
  const c = cached
  if (!fresh && ((now - c.readAt < LIMITS_FRESH_MS && now >= c.readAt) || (c.reading && c.readAt !== -Infinity))) {
    return Effect.succeed(c.index)
  }
  c.reading = true
  return store.limits.pipe(
    Effect.map((rows) => {
      c.index = indexLimits(rows)
      c.warned = false
      return c.index
    }),
    Effect.catchAll((e) =>
      c.warned ? Effect.succeed(c.index) : Effect.as(
        Effect.zipRight(
          Effect.sync(() => {
            c.warned = true
          }),
          warnFailure((reason) => `limits could not be read (${reason}); the job types' own limits apply`, e)
        ),
        c.index
      )
    ),
    Effect.ensuring(Effect.sync(() => {
      c.readAt = now
      c.reading = false
    }))
  )
}
