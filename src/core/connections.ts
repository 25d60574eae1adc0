/**
 * How a store shares its client's connections between the app's enqueues and the worker
 * (docs/behaviour.md §16).
 *
 * An app that enqueues from the process that runs its worker shares one pool with it. A pool
 * hands out connections in the order they were asked for, so a burst of enqueues that outruns the
 * database (a slow disk, a lock other clients queue on) would put every claim and completion
 * behind all of them, and the worker would start jobs more slowly the longer the queue grew. So
 * enqueues made outside a transaction take a connection only through a gate with room for part of
 * the pool; the rest is the worker's, and a worker statement waits behind at most that many
 * enqueues, however many the app has asked for.
 */

/** The pool size assumed when a client does not say (node-postgres's and mysql2's default). */
export const DEFAULT_POOL_SIZE = 10

/**
 * How many enqueues may hold or wait for a connection of a pool of `poolSize` at once: half of
 * it, rounded down, and at least one (a pool of one, SQLite's, lets one enqueue through at a time,
 * so a claim waits behind one insert at most).
 */
export const enqueueConnections = (poolSize: number): number =>
  Number.isFinite(poolSize) && poolSize >= 2 ? Math.floor(poolSize / 2) : 1
