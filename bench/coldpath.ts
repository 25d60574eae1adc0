/**
 * The floor the Effect runtime sets under an idle worker's latency (issue 13, scenario 4b): from
 * a LISTEN notification to a job handler's start, through one statement, with nothing of
 * leasehold's in between, in three shapes:
 *
 * - `plain`: node-postgres callbacks and one promise continuation (graphile-worker's shape);
 * - `effect`: the fiber hops an idle leasehold worker makes on that path: the notification
 *   resumes a waiting claimer fiber, the statement runs under `Effect.async`, its rows resume a
 *   waiting runner fiber, which forks an attempt fiber, which forks the perform fiber;
 * - `fork1`: callbacks up to the rows, then one fiber started for the handler: the least an
 *   Effect-run handler costs on that path (any worker whose jobs are effects starts one).
 *
 * Notifications come 150–450 ms apart (as in scenario 4b), so each cycle runs on code an idle
 * process runs cold. Prints the medians of each segment per shape, shapes alternated:
 *
 *   npx tsx bench/coldpath.ts [cycles per run = 150] [runs per shape = 2]
 *
 * on the bench's PostgreSQL (`LEASEHOLD_PG_URL`, database `test` by default).
 */
import { Effect, Fiber } from "effect"
import { performance } from "node:perf_hooks"
import pg from "pg"

const URL = process.env.LEASEHOLD_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const STATEMENT = { name: "coldpath", text: "SELECT $1::text AS id, now() AS at" }
const CHANNEL = "leasehold_coldpath"

type Shape = "plain" | "effect" | "fork1"

/** One cycle's times: notification to statement sent, its round trip, reply to handler (ms). */
type Cycle = readonly [number, number, number]

const median = (xs: ReadonlyArray<number>): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const runShape = async (shape: Shape, cycles: number): Promise<ReadonlyArray<Cycle>> => {
  const pool = new pg.Pool({ connectionString: URL, max: 2 })
  const listener = new pg.Client({ connectionString: URL })
  const notifier = new pg.Client({ connectionString: URL })
  await listener.connect()
  await notifier.connect()
  const out: Array<Cycle> = []
  let notifiedAt = 0
  let sentAt = 0
  let repliedAt = 0
  let allDone: () => void = () => {}
  const finished = new Promise<void>((resolve) => (allDone = resolve))
  const handler = () => {
    const at = performance.now()
    out.push([sentAt - notifiedAt, repliedAt - sentAt, at - repliedAt])
    if (out.length === cycles) allDone()
  }
  // Sends the statement on a pooled connection; `then` gets its rows.
  const send = (then: (rows: ReadonlyArray<unknown>) => void) =>
    pool.connect((_, client, release) => {
      sentAt = performance.now()
      client!.query({ ...STATEMENT, values: [String(Date.now())] }, (error, result) => {
        release()
        // A bench tool: a failed statement ends the run.
        if (error) throw error
        repliedAt = performance.now()
        then(result.rows)
      })
    })

  let onNotification: () => void
  const fibers: Array<Fiber.RuntimeFiber<unknown, unknown>> = []
  if (shape === "plain") {
    onNotification = () => send((rows) => void Promise.resolve(rows[0]).then(handler))
  } else if (shape === "fork1") {
    onNotification = () => send(() => void Effect.runFork(Effect.sync(handler)))
  } else {
    let wake: ((e: Effect.Effect<void>) => void) | undefined
    let hand: ((e: Effect.Effect<unknown>) => void) | undefined
    const bell = Effect.async<void>((resume) => void (wake = resume))
    const nextJob = Effect.async<unknown>((resume) => void (hand = resume))
    const claimer = Effect.gen(function*() {
      while (true) {
        yield* bell
        const rows = yield* Effect.async<ReadonlyArray<unknown>>((resume) => send((r) => resume(Effect.succeed(r))))
        const take = hand
        hand = undefined
        take?.(Effect.succeed(rows[0]))
      }
    })
    const attempt = Effect.gen(function*() {
      const perform = yield* Effect.forkDaemon(Effect.sync(handler))
      yield* Fiber.await(perform)
    })
    const runner = Effect.gen(function*() {
      while (true) {
        yield* nextJob
        yield* Effect.forkDaemon(attempt)
      }
    })
    fibers.push(Effect.runFork(runner), Effect.runFork(claimer))
    onNotification = () => {
      const resume = wake
      wake = undefined
      resume?.(Effect.void)
    }
  }
  listener.on("notification", () => {
    notifiedAt = performance.now()
    onNotification()
  })
  await listener.query(`LISTEN ${CHANNEL}`)
  for (let i = 0; i < cycles; i++) {
    await new Promise((resolve) => setTimeout(resolve, 150 + Math.random() * 300))
    await notifier.query(`SELECT pg_notify('${CHANNEL}', $1)`, [String(i)])
  }
  await finished
  for (const f of fibers) Effect.runFork(Fiber.interrupt(f))
  await Promise.all([listener.end(), notifier.end(), pool.end()])
  return out
}

const cycles = Number(process.argv[2] ?? 150)
const runs = Number(process.argv[3] ?? 2)
const shapes: ReadonlyArray<Shape> = ["plain", "effect", "fork1"]
const results = Object.fromEntries(shapes.map((shape) => [shape, [] as Array<Cycle>])) as Record<Shape, Array<Cycle>>
for (let r = 0; r < runs; r++) {
  for (const shape of r % 2 === 0 ? shapes : [...shapes].reverse()) {
    // The first tenth of each run warms the connections up and is not counted.
    results[shape].push(...(await runShape(shape, cycles)).slice(Math.floor(cycles / 10)))
  }
}
for (const shape of shapes) {
  const c = results[shape]
  const [toSend, roundTrip, toStart] = [0, 1, 2].map((i) => median(c.map((x) => x[i]!)))
  console.log(
    `${shape.padEnd(6)} ${c.length} cycles: notification to statement sent ${toSend!.toFixed(3)} ms, ` +
      `round trip ${roundTrip!.toFixed(3)} ms, reply to handler ${toStart!.toFixed(3)} ms; ` +
      `Node's part ${(toSend! + toStart!).toFixed(3)} ms`
  )
}
