/**
 * The bad-input catalogue (issue 6), on every adapter: what each public entry point (enqueue,
 * processNext / processQueue / tick / drain, the long-running worker, LeaseLock, Job.define)
 * does with input that is odd or bad.
 *
 * - Odd text (quotes, `;`, `--`, backslashes, control characters, emoji, combining marks,
 *   right-to-left) is stored and read back verbatim: every case reads the row, payload or lease
 *   back and compares it.
 * - Bad input (over-long, NaN, negative, infinite, fractional, huge, unstorable text such as NUL
 *   or an unpaired surrogate) is refused with the documented typed error, and the tables are
 *   compared before and after to show nothing was written; or it is clamped as documented.
 *
 * Trailing spaces (refused because MariaDB's PAD SPACE collation ignores them) have their own
 * tests in leaseLock.ts, jobs.ts and the LeaseLock model test. Time is TestClock's.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Deferred, Duration, Effect, Exit, Layer, Option, Ref, Schema, Scope, TestClock } from "effect"
import { createHash, randomUUID } from "node:crypto"
import { JobLeases, type JobRow, JobStore, type NewJob } from "../../src/adapters/JobStore.ts"
import type { LeaseError, LeaseExpiry, LeaseLockApi } from "../../src/adapters/LeaseLock.ts"
import { JobDefinitionError } from "../../src/core/errors.ts"
import { MAX_BACKOFF_SECONDS, MAX_CONCURRENCY, MAX_INT32, MAX_TIMEOUT_SECONDS, MIN_INT32 } from "../../src/core/jobs.ts"
import type { LeaseRow } from "../../src/core/lease.ts"
import { type AnyJobType, define, enqueue, type HeldLease, JobContext } from "../../src/runtime/Job.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { type AdapterName, layerFor, TestDatabase } from "../support/databases.ts"
import { eventually, withJobs } from "../support/jobs.ts"

const T0 = 1_791_039_632_175
const SECOND = 1000
/** The lease window of a 300 s job: 300 + max(60, 300) seconds (docs/behaviour.md §3). */
const WINDOW = 600 * SECOND

/**
 * Odd text: quotes, SQL, comments, backslashes, control characters (no NUL) and unicode. None
 * starts or ends with whitespace, so none is changed by the trimming of concurrency keys, and
 * each fits every field (at most 64 characters, the shortest limit: lease owners).
 */
const ODD: ReadonlyArray<readonly [label: string, value: string]> = [
  ["quotes", `it's "quoted" and \`ticked\``],
  ["SQL injection", "x'); DROP TABLE jobs; --"],
  ["semicolons and comments", "a;b -- c /* d */ e#f"],
  ["backslashes", "back\\slash \\' \\\" \\\\ \\n \\0 end\\"],
  ["a tab", "tab\there"],
  ["newlines", "line\nfeed and carriage\rreturn\r\nx"],
  ["control characters", "ctrl\x01 unit\x1f del\x7f"],
  ["emoji", "rocket 🚀 family 👩‍👩‍👧 flag 🇫🇷"],
  ["combining marks", "e\u0301 n\u0303 a\u0308\u0301 (NFD)"],
  ["right-to-left", "rtl שלום مرحبا \u202eevil\u202c!"],
  ["wildcards and placeholders", "100% _like_ $1 ? :name @p0 %s {}"]
]

/** Text that no database column can hold as written: refused wherever it is an identifier or key. */
const UNSTORABLE: ReadonlyArray<readonly [label: string, value: string]> = [
  ["a NUL character", "a\u0000b"],
  ["an unpaired high surrogate", "a\ud800b"],
  ["an unpaired low surrogate", "\udc00z"]
]

/**
 * A string of exactly `n` UTF-16 code units built from `seed` (never splitting a surrogate pair)
 * and ending in "z", so its last character is not whitespace.
 */
const sized = (n: number, seed = "k'\";-\\é名ß\t"): string => {
  let s = ""
  for (const ch of seed.repeat(n)) {
    if (s.length + ch.length > n - 1) break
    s += ch
  }
  return s.padEnd(n, "z")
}

/** The lease name docs/behaviour.md §3 gives: prefix + key when it fits in 100, else prefix + SHA-256 hex. */
const fittedLease = (prefix: string, key: string) =>
  (prefix + key).length <= 100 ? prefix + key : prefix + createHash("sha256").update(key, "utf8").digest("hex")

const byId = (a: JobRow, b: JobRow) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** Every job row, host row and job lease: compared before and after a refused call. */
const snapshot = Effect.gen(function*() {
  const store = yield* JobStore
  return {
    jobs: [...(yield* store.list({ limit: 100_000 }))].sort(byId),
    hosts: yield* store.listHosts,
    leases: yield* (yield* JobLeases).list
  }
})

const row = (id: string) => Effect.flatMap(JobStore, (s) => Effect.map(s.get(id), Option.getOrThrow))

/** Inserts a row as another version of the app (or a hand-written migration) might have. */
const insertRow = (fields: Pick<NewJob, "name" | "payload"> & Partial<NewJob>) =>
  Effect.flatMap(JobStore, (store) => {
    const id = randomUUID()
    return Effect.as(
      store.insert({ id, queue: "default", priority: 0, maxRetries: 0, claimTimeout: 300, uniqueKey: id, runAt: T0, now: T0, ...fields }),
      id
    )
  })

/** What a synchronous call threw (Job.define throws its JobDefinitionError at definition time). */
const thrown = (f: () => unknown): unknown => {
  try {
    f()
  } catch (e) {
    return e
  }
  return undefined
}

const expectDefinitionError = (f: () => unknown, name: string, reason: RegExp) => {
  const error = thrown(f)
  expect(error).toBeInstanceOf(JobDefinitionError)
  expect(error).toMatchObject({ _tag: "JobDefinitionError", name })
  expect((error as JobDefinitionError).reason).toMatch(reason)
}

interface Seen {
  readonly jobId: string
  readonly name: string
  readonly queue: string
  readonly host: string
  readonly claimToken: string
  readonly payload: unknown
  readonly lease: Option.Option<HeldLease>
  /** The lease's row in the lock table, read during perform. */
  readonly leaseRow: Option.Option<LeaseRow>
}

/** A perform that records what the attempt saw, including its lease row as the database holds it. */
const makeProbe = Effect.gen(function*() {
  const seen = yield* Ref.make<ReadonlyArray<Seen>>([])
  const leases = yield* Deferred.make<LeaseLockApi>()
  const perform = (payload: unknown) =>
    Effect.gen(function*() {
      const ctx = yield* JobContext
      const lease = yield* ctx.lease
      const leaseRow = Option.isNone(lease)
        ? Option.none<LeaseRow>()
        : yield* Effect.flatMap(Deferred.await(leases), (l) => l.read(lease.value.name))
      yield* Ref.update(seen, (s) => [
        ...s,
        { jobId: ctx.jobId, name: ctx.name, queue: ctx.queue, host: ctx.host, claimToken: ctx.claimToken, payload, lease, leaseRow }
      ])
    })
  return {
    perform,
    /** Gives perform the lease table; run it first inside `withJobs`. */
    bind: Effect.flatMap(JobLeases, (l) => Deferred.succeed(leases, l)),
    last: Effect.map(Ref.get(seen), (s) => s[s.length - 1]!),
    all: Ref.get(seen)
  }
})

const Text = Schema.Struct({ s: Schema.String })

export const badInputConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "bi"), { timeout: 120_000 })(`Odd and bad input conformance on ${adapter}`, (it) => {
    // -------------------------------------------------------------------------------------------
    // Payloads

    it.effect("payloads their schema rejects, or that JSON cannot carry, fail enqueue with PayloadError and write nothing", () => {
      const Strict = define({
        name: "strict",
        schema: Schema.Struct({ n: Schema.Number, s: Schema.String.pipe(Schema.maxLength(10)) }),
        perform: () => Effect.void
      })
      const Anything = define({ name: "anything", schema: Schema.Unknown, perform: () => Effect.void })
      const Dated = define({ name: "dated", schema: Schema.Struct({ at: Schema.DateFromSelf }), perform: () => Effect.void })
      const circular: Record<string, unknown> = {}
      circular.self = circular
      const cases: ReadonlyArray<readonly [label: string, type: AnyJobType, payload: unknown, reason: RegExp]> = [
        ["a field of the wrong type", Strict, { n: "1", s: "x" }, /Expected number, actual "1"/],
        ["a missing field", Strict, { s: "x" }, /\["n"\][\s\S]*is missing/],
        ["a refinement (11 characters, at most 10)", Strict, { n: 1, s: "x".repeat(11) }, /at most 10/],
        ["null", Strict, null, /actual null/],
        ["NaN (JSON would store null)", Strict, { n: Number.NaN, s: "x" }, /NaN has no JSON form/],
        ["Infinity", Strict, { n: Number.POSITIVE_INFINITY, s: "x" }, /Infinity has no JSON form/],
        ["-Infinity deep inside an unknown payload", Anything, { a: [1, { b: Number.NEGATIVE_INFINITY }] }, /-Infinity has no JSON form/],
        ["a bigint", Anything, { n: 10n ** 30n }, /not JSON-serialisable/],
        ["a circular object", Anything, circular, /not JSON-serialisable/],
        ["undefined", Anything, undefined, /encodes to nothing/],
        ["a function", Anything, () => 1, /encodes to nothing/],
        ["a Date object that JSON turns into a string", Dated, { at: new Date(T0) }, /does not decode again/]
      ]
      return withJobs([Strict, Anything, Dated], Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        yield* enqueue(Strict, { n: 1, s: "kept" }, { uniqueKey: "already-there" })
        const before = yield* snapshot
        for (const [i, [label, type, payload, reason]] of cases.entries()) {
          const error = yield* Effect.flip(enqueue(type, payload, { uniqueKey: `bad-${i}` }))
          expect(error, label).toMatchObject({ _tag: "PayloadError", jobName: type.name })
          if (error._tag === "PayloadError") {
            expect(error.reason, label).toMatch(reason)
            expect(error.message, label).toContain(`invalid payload for job ${type.name}`)
          }
        }
        expect(yield* snapshot).toEqual(before)
        // the refused enqueues took no unique key
        expect(yield* enqueue(Strict, { n: 2, s: "ok" }, { uniqueKey: "bad-0" })).toMatchObject({ duplicate: false })
      }))
    })

    it.effect("stored payloads that no longer decode fail their attempt with a clear error, retried under the normal rules", () =>
      Effect.gen(function*() {
        const p = yield* makeProbe
        const V2 = define({ name: "v2", schema: Schema.Struct({ n: Schema.Number, s: Schema.String }), perform: p.perform })
        const garbled: ReadonlyArray<readonly [label: string, payload: string, reason: RegExp]> = [
          ["not JSON", "{not json", /JSON/],
          ["empty", "", /JSON/],
          ["a truncated object", `{"n":1,"s":"ab`, /JSON/],
          ["JSON null", "null", /actual null/],
          ["an array", "[]", /actual \[\]/],
          ["a field of the wrong type", `{"n":"one","s":"x"}`, /Expected number/],
          ["written by an older version (a field missing)", `{"n":1}`, /is missing/],
          ["an escaped NUL where a number belongs", `{"n":"\\u0000","s":"x"}`, /Expected number/]
        ]
        yield* withJobs([V2], Effect.gen(function*() {
          yield* p.bind
          yield* TestClock.setTime(T0)
          const ids: Array<string> = []
          for (const [i, [, payload]] of garbled.entries()) {
            ids.push(yield* insertRow({ name: "v2", payload, maxRetries: 1, priority: 100 - i }))
          }
          const good = yield* insertRow({ name: "v2", payload: `{"n":9,"s":"fine"}`, maxRetries: 1, priority: -1 })
          // one pass: every garbled row fails, the good one after them still runs
          const first = yield* Worker.processQueue({ host: "h", limit: 0 })
          expect(first).toMatchObject({ processed: 1, failed: garbled.length, skipped: 0, fenced: 0 })
          for (const [i, [label, , reason]] of garbled.entries()) {
            expect(first.errors[i], label).toMatch(/^PayloadError: invalid payload for job v2: stored payload no longer decodes: /)
            expect(first.errors[i], label).toMatch(reason)
            const r = yield* row(ids[i]!)
            expect(r, label).toMatchObject({ status: "pending", attempts: 1, runAt: T0 + 4 * SECOND, payload: garbled[i]![1] })
            expect(r.lastError, label).toContain("no longer decodes")
          }
          expect((yield* p.all).map((s) => s.payload)).toEqual([{ n: 9, s: "fine" }])
          expect((yield* row(good)).status).toBe("completed")
          // the second run (the last of maxRetries 1) fails too, and the rows are dead
          yield* TestClock.adjust(4 * SECOND)
          expect(yield* Worker.processQueue({ host: "h", limit: 0 })).toMatchObject({ processed: 0, failed: garbled.length })
          for (const id of ids) {
            expect(yield* row(id)).toMatchObject({ status: "failed", attempts: 2, failedAt: T0 + 4 * SECOND })
          }
        }))
      }))

    it.effect("rows naming an unknown job type fail with UnknownJobTypeError, are retried under the normal rules, and end dead", () =>
      Effect.gen(function*() {
        const p = yield* makeProbe
        const Known = define({ name: "café", schema: Text, perform: p.perform })
        const unknown: ReadonlyArray<readonly [label: string, name: string]> = [
          ["a type this worker never heard of", "Retired"],
          ["SQL in the name", "x'); DROP TABLE jobs; --"],
          ["the registered name in capitals", "CAFÉ"],
          ["the registered name in NFD", "cafe\u0301"],
          ["the registered name with a trailing tab", "café\t"],
          ["emoji and right-to-left", "🚀 שלום"]
        ]
        yield* withJobs([Known], Effect.gen(function*() {
          yield* p.bind
          yield* TestClock.setTime(T0)
          const ids: Array<string> = []
          for (const [i, [, name]] of unknown.entries()) {
            ids.push(yield* insertRow({ name, payload: `{"s":"x"}`, maxRetries: 2, priority: 100 - i }))
          }
          const known = yield* enqueue(Known, { s: "known" })
          const message = (name: string) => `UnknownJobTypeError: no job type named ${JSON.stringify(name)} is registered with this worker`
          // retries at the default backoff (4 s, 8 s), then dead after maxRetries + 1 = 3 runs
          for (const [run, wait] of [[1, 4], [2, 8], [3, 0]] as const) {
            const tally = yield* Worker.processQueue({ host: "h", limit: 0 })
            expect(tally).toMatchObject({ processed: run === 1 ? 1 : 0, failed: unknown.length })
            expect(tally.errors).toEqual(unknown.map(([, name]) => message(name)))
            for (const [i, [label, name]] of unknown.entries()) {
              const r = yield* row(ids[i]!)
              expect(r, label).toMatchObject({ name, attempts: run, lastError: message(name) })
              expect(r, label).toMatchObject(run < 3 ? { status: "pending", runAt: T0 + (run === 1 ? 4 : 12) * SECOND } : { status: "failed" })
            }
            yield* TestClock.adjust(wait * SECOND)
          }
          expect(yield* row(known.id)).toMatchObject({ status: "completed", attempts: 1 })
          expect((yield* p.all).map((s) => s.name)).toEqual(["café"])
        }))
      }))

    it.effect("a long-running worker records undecodable and unknown rows as failures and keeps running", () =>
      Effect.gen(function*() {
        const p = yield* makeProbe
        const Known = define({ name: "known", schema: Text, perform: p.perform })
        yield* withJobs([Known], Effect.gen(function*() {
          yield* p.bind
          yield* TestClock.setTime(T0)
          const unknown = yield* insertRow({ name: "unknown; --", payload: `{"s":"x"}`, priority: 2 })
          const garbled = yield* insertRow({ name: "known", payload: "{not json", priority: 1 })
          for (const s of ["a", "b", "c"]) yield* enqueue(Known, { s })
          const scope = yield* Scope.make()
          const context = yield* Layer.buildWithScope(Worker.layer({ host: "lw", concurrency: 1, pollInterval: "20 millis" }), scope)
          const worker = Context.get(context, Worker.WorkerHandle)
          const settled = (n: number) =>
            eventually(Effect.zipRight(TestClock.adjust("20 millis"), Effect.map(worker.stats, (s) => s.processed + s.failed >= n)))
          yield* settled(5)
          const stats = yield* worker.stats
          expect(stats).toMatchObject({ processed: 3, failed: 2 })
          expect(stats.errors).toEqual([
            expect.stringContaining("UnknownJobTypeError"),
            expect.stringContaining("stored payload no longer decodes")
          ])
          // still running: a job enqueued now is picked up
          yield* enqueue(Known, { s: "late" })
          yield* worker.wake
          yield* settled(6)
          yield* Scope.close(scope, Exit.void)
          expect((yield* worker.stats)).toMatchObject({ processed: 4, failed: 2 })
          // a, b and c are due at the same time, so in any order; late comes last
          const ran = (yield* p.all).map((s) => (s.payload as { readonly s: string }).s)
          expect([...ran.slice(0, 3)].sort()).toEqual(["a", "b", "c"])
          expect(ran[3]).toBe("late")
          expect(yield* row(unknown)).toMatchObject({ status: "failed", attempts: 1 })
          expect(yield* row(garbled)).toMatchObject({ status: "failed", attempts: 1 })
        }))
      }))

    it.effect("payload strings with quotes, SQL, control characters (NUL too: JSON escapes it) and unicode reach perform verbatim", () =>
      Effect.gen(function*() {
        const p = yield* makeProbe
        const Strings = define({ name: "strings", schema: Schema.Struct({ s: Schema.String, list: Schema.Array(Schema.String) }), perform: p.perform })
        const cases: ReadonlyArray<readonly [string, string]> = [
          ...ODD,
          ["a NUL character", "a\u0000b"],
          ["an unpaired surrogate (JSON escapes it)", "a\ud800b"],
          ["JSON-looking text", `{"n":1}\\u0000" ]`],
          ["10,000 characters", sized(10_000, "p'\";-\\\t\r\n\x01é🚀")]
        ]
        yield* withJobs([Strings], Effect.gen(function*() {
          yield* p.bind
          for (const [label, s] of cases) {
            const payload = { s, list: [s, "", s] }
            const { id } = yield* enqueue(Strings, payload)
            expect(JSON.parse((yield* row(id)).payload), label).toEqual(payload)
            expect(yield* Worker.processNext({ host: "h" }), label).toMatchObject({ _tag: "Completed", job: { id } })
            const seen = yield* p.last
            expect(seen.jobId, label).toBe(id)
            expect(seen.payload, label).toEqual(payload)
          }
        }))
      }))

    // -------------------------------------------------------------------------------------------
    // Unique keys

    it.effect("unique keys of 100, 101 and 255 characters round-trip and dedupe exactly; 256 and 10,000 are refused and write nothing", () => {
      const Plain = define({ name: "plain", schema: Text, perform: () => Effect.void })
      const seeds: ReadonlyArray<readonly [string, string]> = [
        ["plain", "k"],
        ["odd", `'";--\\\t\r\n\x01\x1f\x7f`],
        ["multi-byte", "é名ß"],
        ["emoji (two code units each)", "🚀👩‍👧"]
      ]
      return withJobs([Plain], Effect.gen(function*() {
        yield* enqueue(Plain, { s: "kept" }, { uniqueKey: "kept" })
        const before = yield* snapshot
        for (const n of [256, 10_000]) {
          for (const [label, seed] of seeds) {
            const error = yield* Effect.flip(enqueue(Plain, { s: label }, { uniqueKey: sized(n, seed) }))
            expect(error, `${n} ${label}`).toMatchObject({ _tag: "EnqueueInputError", field: "uniqueKey", reason: `is ${n} characters; at most 255 fit` })
          }
        }
        expect(yield* snapshot).toEqual(before)
        for (const n of [100, 101, 255]) {
          for (const [label, seed] of seeds) {
            const key = sized(n, seed)
            expect(key).toHaveLength(n)
            const first = yield* enqueue(Plain, { s: label }, { uniqueKey: key })
            expect(first.duplicate, `${n} ${label}`).toBe(false)
            expect((yield* row(first.id)).uniqueKey, `${n} ${label}`).toBe(key)
            expect(yield* enqueue(Plain, { s: "again" }, { uniqueKey: key })).toEqual({ id: first.id, status: "duplicate", duplicate: true })
          }
        }
        expect((yield* snapshot).jobs).toHaveLength(1 + 3 * seeds.length)
      }))
    })

    it.effect("odd unique keys round-trip and dedupe exactly; keys differing by normalisation, case or a trailing control character are distinct", () => {
      const Plain = define({ name: "plain", schema: Text, perform: () => Effect.void })
      const distinct: ReadonlyArray<readonly [label: string, a: string, b: string]> = [
        ["NFC and NFD", "café", "cafe\u0301"],
        ["case", "Key", "key"],
        ["a trailing tab", "k1\t", "k1"],
        ["a trailing newline", "k2\n", "k2"],
        ["a trailing DEL", "k3\x7f", "k3"],
        ["a trailing right-to-left mark", "k4\u200f", "k4"],
        ["a zero-width joiner", "👩‍👧", "👩👧"]
      ]
      return withJobs([Plain], Effect.gen(function*() {
        for (const [label, key] of ODD) {
          const first = yield* enqueue(Plain, { s: label }, { uniqueKey: key })
          expect(first.duplicate, label).toBe(false)
          expect((yield* row(first.id)).uniqueKey, label).toBe(key)
          expect(yield* enqueue(Plain, { s: label }, { uniqueKey: key }), label).toEqual({ id: first.id, status: "duplicate", duplicate: true })
        }
        for (const [label, a, b] of distinct) {
          const x = yield* enqueue(Plain, { s: label }, { uniqueKey: a })
          const y = yield* enqueue(Plain, { s: label }, { uniqueKey: b })
          expect([x.duplicate, y.duplicate], label).toEqual([false, false])
          expect((yield* row(x.id)).uniqueKey, label).toBe(a)
          expect((yield* row(y.id)).uniqueKey, label).toBe(b)
        }
        const before = yield* snapshot
        for (const [label, key] of [...UNSTORABLE, ["empty", ""] as const]) {
          expect(yield* Effect.flip(enqueue(Plain, { s: label }, { uniqueKey: key })), label).toMatchObject({
            _tag: "EnqueueInputError",
            field: "uniqueKey"
          })
        }
        expect(yield* snapshot).toEqual(before)
      }))
    })

    // -------------------------------------------------------------------------------------------
    // Job names, queues, concurrency keys, hosts

    it.effect("odd job names round-trip through enqueue, claim, perform and the exclusive lease; unstorable names are refused by define", () =>
      Effect.gen(function*() {
        const p = yield* makeProbe
        const plain = [...ODD.map(([, name]) => name), sized(255, "n'名\t🚀")].map((name) => define({ name, schema: Text, perform: p.perform }))
        const exclusive = [...ODD.map(([, name]) => `x ${name}`), sized(255, "e'名\t🚀")]
          .map((name) => define({ name, exclusive: true, schema: Text, perform: p.perform }))
        const refused: ReadonlyArray<readonly [string, RegExp]> = [
          ["", /1 to 255 characters/],
          [" \t\n", /1 to 255 characters/],
          [sized(256), /1 to 255 characters/],
          [sized(10_000), /1 to 255 characters/],
          ...UNSTORABLE.map(([, name]) => [name, /^the name contains/] as const),
          // PAD SPACE: on MariaDB `x ` is `x`, and the lease `job:x ` could never be taken
          ["x ", /^the name ends with a space/]
        ]
        for (const [name, reason] of refused) {
          expectDefinitionError(() => define({ name, schema: Text, perform: () => Effect.void }), name, reason)
        }
        yield* withJobs([...plain, ...exclusive], Effect.gen(function*() {
          yield* p.bind
          yield* TestClock.setTime(T0)
          for (const type of [...plain, ...exclusive]) {
            const { id } = yield* enqueue(type, { s: "x" })
            expect((yield* row(id)).name).toBe(type.name)
            expect(yield* Worker.processNext({ host: "h" })).toMatchObject({ _tag: "Completed", job: { id, name: type.name } })
            expect(yield* row(id)).toMatchObject({ name: type.name, status: "completed" })
            const seen = yield* p.last
            expect(seen).toMatchObject({ jobId: id, name: type.name })
            if (type.lease.exclusive) {
              const lease = fittedLease("job:", type.name)
              expect(seen.lease).toEqual(Option.some({ name: lease, owner: seen.claimToken, expiresAt: T0 + WINDOW }))
              expect(seen.leaseRow).toEqual(Option.some({ name: lease, owner: seen.claimToken, host: "h", acquiredAt: T0, expiresAt: T0 + WINDOW }))
              expect(yield* Effect.flatMap(JobLeases, (l) => l.read(lease))).toEqual(Option.none())
            } else {
              expect(seen.lease).toEqual(Option.none())
            }
          }
          // the last one ran was the 255-character exclusive name: its lease is hashed to 68 characters
          expect(Option.map((yield* p.last).lease, (l) => l.name)).toEqual(Option.some(expect.stringMatching(/^job:[0-9a-f]{64}$/)))
        }))
      }))

    it.effect("odd queues are stored verbatim and claimed only under exactly that name; unstorable queues are refused", () =>
      Effect.gen(function*() {
        const p = yield* makeProbe
        const queues = [...ODD.map(([, q]) => q), sized(255, "q'名\t🚀")]
        const byDefault = queues.map((queue, i) => define({ name: `queued-${i}`, queue, schema: Text, perform: p.perform }))
        const Plain = define({ name: "plain", schema: Text, perform: p.perform })
        const refusedQueues: ReadonlyArray<readonly [string, RegExp]> = [
          ["", /^queue must be 1 to 255/],
          [sized(256), /^queue must be 1 to 255/],
          ...UNSTORABLE.map(([, q]) => [q, /^queue contains/] as const),
          // PAD SPACE: on MariaDB a worker for `mail` would claim the jobs of `mail `
          ["mail ", /^queue ends with a space/]
        ]
        for (const [queue, reason] of refusedQueues) {
          expectDefinitionError(() => define({ name: "q", queue, schema: Text, perform: () => Effect.void }), "q", reason)
        }
        yield* withJobs([...byDefault, Plain], Effect.gen(function*() {
          yield* p.bind
          yield* TestClock.setTime(T0)
          // near misses of "café" claim nothing; the exact name does
          const cafe = yield* enqueue(Plain, { s: "café" }, { queue: "café" })
          for (const near of ["cafe\u0301", "CAFÉ", "café\t", "caf", "café%"]) {
            expect(yield* Worker.processNext({ host: "h", queues: [near] }), near).toEqual(Worker.ProcessResult.Idle())
          }
          expect(yield* Worker.processNext({ host: "h", queues: ["café"] })).toMatchObject({ _tag: "Completed", job: { id: cafe.id, queue: "café" } })
          for (const [i, queue] of queues.entries()) {
            const a = yield* enqueue(byDefault[i]!, { s: "default" })
            const b = yield* enqueue(Plain, { s: "option" }, { queue })
            expect((yield* row(a.id)).queue).toBe(queue)
            expect((yield* row(b.id)).queue).toBe(queue)
          }
          for (const queue of queues) {
            const ran = [yield* Worker.processNext({ host: "h", queues: [queue] }), yield* Worker.processNext({ host: "h", queues: [queue] })]
            expect(ran.map((r) => r._tag)).toEqual(["Completed", "Completed"])
            expect((yield* p.all).slice(-2).map((s) => s.queue)).toEqual([queue, queue])
            expect(yield* Worker.processNext({ host: "h", queues: [queue] })).toEqual(Worker.ProcessResult.Idle())
          }
          const counts = yield* Effect.flatMap(JobStore, (s) => s.counts)
          for (const queue of queues) expect(counts).toContainEqual({ queue, status: "completed", count: 2 })
          const before = yield* snapshot
          for (const [label, queue] of [["empty", ""], ["256 characters", sized(256)], ["10,000 characters", sized(10_000)], ["a trailing space", "mail "], ...UNSTORABLE]) {
            expect(yield* Effect.flip(enqueue(Plain, { s: "x" }, { queue: queue! })), label).toMatchObject({ _tag: "EnqueueInputError", field: "queue" })
          }
          expect(yield* snapshot).toEqual(before)
        }))
      }))

    it.effect("concurrency keys, odd or 96 to 10,000 characters long, name the lease exactly (hashed past 100); unstorable keys are refused", () =>
      Effect.gen(function*() {
        const p = yield* makeProbe
        const Keyed = define({ name: "keyed", schema: Schema.Struct({ key: Schema.String }), concurrencyKeyFor: (x) => x.key, perform: p.perform })
        const long = sized(10_000, "c'\";-\\é名\t🚀")
        const cases: ReadonlyArray<readonly [label: string, key: string, lease: string | undefined]> = [
          ...ODD.map(([label, key]) => [label, key, `key:${key}`] as const),
          ...[96, 97, 100, 101, 255, 256, 10_000].map((n) => [`${n} characters`, sized(n), fittedLease("key:", sized(n))] as const),
          ["10,000 characters, differing only in the last one", long.slice(0, -1) + "y", fittedLease("key:", long.slice(0, -1) + "y")],
          ["10,000 characters, the other", long, fittedLease("key:", long)],
          ["surrounding whitespace (trimmed)", " \t k \r\n", "key:k"],
          ["blank (no lease)", " \t\r\n", undefined]
        ]
        const statics = [ODD[1]![1], ODD[7]![1], long].map((key, i) =>
          [define({ name: `static-${i}`, schema: Schema.Struct({ key: Schema.String }), concurrencyKey: key, perform: p.perform }), fittedLease("key:", key)] as const
        )
        for (const [, key] of UNSTORABLE) {
          expectDefinitionError(() => define({ name: "s", schema: Text, concurrencyKey: key, perform: () => Effect.void }), "s", /^concurrencyKey contains/)
        }
        const Throws = define({
          name: "throws",
          schema: Text,
          concurrencyKeyFor: () => {
            throw new Error("no key for you")
          },
          perform: p.perform
        })
        yield* withJobs([Keyed, Throws, ...statics.map(([type]) => type)], Effect.gen(function*() {
          yield* p.bind
          yield* TestClock.setTime(T0)
          const run = (type: AnyJobType, payload: { readonly key: string }, lease: string | undefined, label: string) =>
            Effect.gen(function*() {
              const { id } = yield* enqueue(type, payload)
              expect(JSON.parse((yield* row(id)).payload), label).toEqual(payload)
              expect(yield* Worker.processNext({ host: "h" }), label).toMatchObject({ _tag: "Completed", job: { id } })
              const seen = yield* p.last
              expect(seen.jobId, label).toBe(id)
              if (lease === undefined) return expect(seen.lease, label).toEqual(Option.none())
              expect(lease.length, label).toBeLessThanOrEqual(100)
              expect(Option.map(seen.lease, (l) => l.name), label).toEqual(Option.some(lease))
              expect(seen.leaseRow, label).toEqual(Option.some({ name: lease, owner: seen.claimToken, host: "h", acquiredAt: T0, expiresAt: T0 + WINDOW }))
              // released afterwards
              expect(yield* Effect.flatMap(JobLeases, (l) => l.read(lease)), label).toEqual(Option.none())
            })
          for (const [label, key, lease] of cases) yield* run(Keyed, { key }, lease, label)
          for (const [type, lease] of statics) yield* run(type, { key: "ignored" }, lease, type.name)
          // keys that differ name different leases, however long
          const leases = new Set(cases.flatMap(([, , lease]) => (lease === undefined ? [] : [lease])))
          expect(leases.size).toBe(cases.length - 1)
          const before = yield* snapshot
          for (const [label, key] of UNSTORABLE) {
            const error = yield* Effect.flip(enqueue(Keyed, { key }))
            expect(error, label).toMatchObject({ _tag: "EnqueueInputError", field: "concurrencyKey" })
          }
          const threw = yield* Effect.flip(enqueue(Throws, { s: "x" }))
          expect(threw).toMatchObject({ _tag: "EnqueueInputError", field: "concurrencyKey", reason: "concurrencyKeyFor threw: Error: no key for you" })
          expect(yield* snapshot).toEqual(before)
        }))
      }))

    it.effect("odd hosts are stored verbatim on the job row, the hosts table and the lease; unstorable hosts fail with WorkerConfigError and write nothing", () =>
      Effect.gen(function*() {
        const p = yield* makeProbe
        const Excl = define({ name: "excl", exclusive: true, schema: Text, perform: p.perform })
        const hosts = [...ODD.map(([, h]) => h), sized(255, "h'\";-\\é名\t🚀"), "名".repeat(255)]
        yield* withJobs([Excl], Effect.gen(function*() {
          yield* p.bind
          yield* TestClock.setTime(T0)
          const store = yield* JobStore
          for (const host of hosts) {
            const { id } = yield* enqueue(Excl, { s: host })
            expect(yield* Worker.processNext({ host }), host).toMatchObject({ _tag: "Completed", job: { id } })
            expect(yield* row(id), host).toMatchObject({ status: "completed", claimedBy: host })
            const seen = yield* p.last
            expect(seen.host, host).toBe(host)
            expect(Option.map(seen.leaseRow, (l) => l.host), host).toEqual(Option.some(host))
            expect(yield* Worker.tick({ host, maxJobs: 0 }), host).toMatchObject({ host, processed: 0 })
            expect(Option.map(yield* store.getHost(host), (h) => [h.host, h.draining]), host).toEqual(Option.some([host, false]))
            yield* Worker.drain({ host })
            expect(Option.map(yield* store.getHost(host), (h) => h.draining), host).toEqual(Option.some(true))
            yield* Worker.resume({ host })
            expect(Option.map(yield* store.getHost(host), (h) => h.draining), host).toEqual(Option.some(false))
          }
          expect((yield* store.listHosts).map((h) => h.host).sort()).toEqual([...hosts].sort())
          const { id } = yield* enqueue(Excl, { s: "waiting" })
          const before = yield* snapshot
          for (const [label, host] of [["empty", ""], ["256 characters", sized(256)], ["10,000 characters", sized(10_000)], ...UNSTORABLE]) {
            const calls: ReadonlyArray<Effect.Effect<unknown, { readonly _tag: string }, Worker.WorkerServices>> = [
              Worker.processNext({ host: host! }),
              Worker.processQueue({ host: host! }),
              Worker.tick({ host: host! }),
              Worker.drain({ host: host! }),
              Worker.resume({ host: host! }),
              Effect.scoped(Worker.make({ host: host! }))
            ]
            for (const call of calls) {
              expect(yield* Effect.flip(call), label).toMatchObject({ _tag: "WorkerConfigError", field: "host" })
            }
          }
          expect(yield* snapshot).toEqual(before)
          expect(yield* row(id)).toMatchObject({ status: "pending", attempts: 0 })
        }))
      }))

    // -------------------------------------------------------------------------------------------
    // LeaseLock

    it.effect("LeaseLock: odd names, owners and hosts round-trip through acquire, renew, read and release; over-long or unstorable ones are refused", () =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const lock = yield* db.leaseLock(db.table("locks"))
        yield* lock.ensureTable
        const MINUTE = 60_000
        const accepted: ReadonlyArray<readonly [label: string, name: string, owner: string, host: string | null]> = [
          ...ODD.map(([label, v]) => [label, v, v, v] as const),
          ["longest name, owner and host", sized(100), sized(64, "o'\";é🚀\t"), sized(255, "h'\";é🚀\t")],
          ["multi-byte at the limits", "名".repeat(100), "ü".repeat(64), "ħ".repeat(255)],
          ["no host", "hostless", "o", null]
        ]
        for (const [label, name, owner, host] of accepted) {
          expect(yield* lock.tryAcquire({ name, owner, host, now: T0, ttlMs: MINUTE }), label).toBe(true)
          expect(yield* lock.read(name), label).toEqual(Option.some({ name, owner, host, acquiredAt: T0, expiresAt: T0 + MINUTE }))
          expect(yield* lock.ownerOf(name), label).toEqual(Option.some(owner))
          // an owner that differs only by normalisation or a trailing control character is someone else
          const others = [owner.length < 64 ? `${owner}\t` : `${owner.slice(0, 63)}\t`, owner.normalize("NFC"), owner.normalize("NFD")]
          for (const other of others.filter((o) => o !== owner && o.length <= 64)) {
            expect(yield* lock.renew({ name, owner: other, expiresAt: T0 + 9 * MINUTE }), label).toBe(false)
            expect(yield* lock.release({ name, owner: other }), label).toBe(false)
          }
          expect(yield* lock.renew({ name, owner, expiresAt: T0 + 2 * MINUTE }), label).toBe(true)
          expect(Option.map(yield* lock.read(name), (r) => r.expiresAt), label).toEqual(Option.some(T0 + 2 * MINUTE))
        }
        expect((yield* lock.list).map((r) => r.name).sort()).toEqual(accepted.map(([, name]) => name).sort())
        for (const [label, name, owner] of accepted) {
          expect(yield* lock.release({ name, owner }), label).toBe(true)
          expect(yield* lock.read(name), label).toEqual(Option.none())
        }
        // refused: every operation, nothing written
        yield* lock.tryAcquire({ name: "kept", owner: "o", now: T0, ttlMs: MINUTE })
        const before = yield* lock.list
        const refused: ReadonlyArray<readonly [label: string, field: "name" | "owner" | "host", name: string, owner: string, host: string, reason: RegExp]> = [
          ...[101, 255, 256, 10_000].map((n) => [`a ${n}-character name`, "name", sized(n), "o", "h", new RegExp(`is ${n} characters; at most 100 fit`)] as const),
          ...[65, 100, 10_000].map((n) => [`a ${n}-character owner`, "owner", "n", sized(n), "h", new RegExp(`is ${n} characters; at most 64 fit`)] as const),
          ...[256, 10_000].map((n) => [`a ${n}-character host`, "host", "n", "o", sized(n), new RegExp(`is ${n} characters; at most 255 fit`)] as const),
          ["an empty name", "name", "", "o", "h", /is empty/],
          ["an empty owner", "owner", "n", "", "h", /is empty/],
          ...UNSTORABLE.flatMap(([label, v]) => [
            [`${label} in the name`, "name", v, "o", "h", /contains/] as const,
            [`${label} in the owner`, "owner", "n", v, "h", /contains/] as const,
            [`${label} in the host`, "host", "n", "o", v, /contains/] as const
          ])
        ]
        for (const [label, field, name, owner, host, reason] of refused) {
          const calls: ReadonlyArray<Effect.Effect<unknown, LeaseError>> = [
            lock.tryAcquire({ name, owner, host, now: T0, ttlMs: MINUTE }),
            ...(field === "host" ? [] : [lock.renew({ name, owner, expiresAt: T0 + MINUTE }), lock.release({ name, owner })]),
            ...(field === "name" ? [lock.read(name), lock.ownerOf(name)] : [])
          ]
          for (const call of calls) {
            const error = yield* Effect.flip(call)
            expect(error, label).toMatchObject({ _tag: "LeaseInputError", field })
            if (error._tag === "LeaseInputError") expect(error.reason, label).toMatch(reason)
          }
        }
        expect(yield* lock.list).toEqual(before)
      }))

    it.effect("LeaseLock: NaN, infinite, fractional and huge expiresAt or ttlMs are refused with LeaseInputError and change nothing", () =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const lock = yield* db.leaseLock(db.table("locks"))
        yield* lock.ensureTable
        const bad = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1.5, 2 ** 53, 2 ** 53 + 2, 1e308, -1e308]
        const expiries = [...bad.map((expiresAt) => ({ expiresAt })), ...bad.map((ttlMs) => ({ ttlMs }))]
        for (const expiry of expiries) {
          const error = yield* Effect.flip(lock.tryAcquire({ name: "n", owner: "a", now: T0, ...expiry }))
          expect(error, JSON.stringify(expiry)).toMatchObject({ _tag: "LeaseInputError", field: "expiresAt" })
        }
        expect(yield* lock.list).toEqual([])
        expect(yield* lock.tryAcquire({ name: "n", owner: "a", host: "h", now: T0, ttlMs: 0 })).toBe(true)
        const held = { name: "n", owner: "a", host: "h", acquiredAt: T0, expiresAt: T0 }
        expect(yield* lock.read("n")).toEqual(Option.some(held))
        for (const expiry of expiries) {
          const error = yield* Effect.flip(lock.renew({ name: "n", owner: "a", now: T0, ...expiry }))
          expect(error, JSON.stringify(expiry)).toMatchObject({ _tag: "LeaseInputError", field: "expiresAt" })
        }
        expect(yield* lock.list).toEqual([held])
        // the largest exact value is stored exactly
        expect(yield* lock.renew({ name: "n", owner: "a", expiresAt: Number.MAX_SAFE_INTEGER })).toBe(true)
        expect(Option.map(yield* lock.read("n"), (r) => r.expiresAt)).toEqual(Option.some(Number.MAX_SAFE_INTEGER))
      }))

    // -------------------------------------------------------------------------------------------
    // Numbers

    it.effect("Job.define: NaN, negative, infinite, fractional and huge numbers are refused with JobDefinitionError; the edges are stored exactly", () => {
      const base = { name: "n", schema: Text, perform: () => Effect.void }
      const bad: ReadonlyArray<readonly [field: string, options: Record<string, unknown>]> = [
        ...[Number.NaN, -1, 0, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY, 2 ** 53, 1e308, (MAX_TIMEOUT_SECONDS + 1) * 1000]
          .map((timeout) => ["timeout", { timeout }] as const),
        ...["NaN seconds", "-5 seconds", "1e308 seconds", "Infinity", "forever", `${MAX_TIMEOUT_SECONDS + 1} seconds`]
          .map((timeout) => ["timeout", { timeout }] as const),
        ...[[Number.NaN, 0], [-1, 0], [0, -1], [1e308, 0], [0, 0]].map((timeout) => ["timeout", { timeout }] as const),
        ...[-5n, 0n, 10n ** 40n].map((timeout) => ["timeout", { timeout }] as const),
        ...[Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1.5, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, 1e308, -1e308]
          .map((priority) => ["priority", { priority }] as const),
        ...[Number.NaN, -1, Number.POSITIVE_INFINITY, 1.5, 2 ** 31, 2 ** 53, 1e308].map((maxRetries) => ["maxRetries", { maxRetries }] as const),
        ...[
          { baseSeconds: Number.NaN },
          { baseSeconds: 0 },
          { baseSeconds: -1 },
          { baseSeconds: Number.POSITIVE_INFINITY },
          { baseSeconds: 10, maxSeconds: 5 },
          { maxSeconds: Number.NaN },
          { maxSeconds: Number.POSITIVE_INFINITY },
          { maxSeconds: 2 ** 53 },
          { maxSeconds: 1e308 },
          { kind: "fibonacci" }
        ].map((backoff) => ["backoff", { backoff }] as const),
        ["backoff", { backoff: "quadratic" }],
        ["onLeaseLost", { onLeaseLost: "explode" }]
      ]
      for (const [field, options] of bad) {
        expectDefinitionError(() => define({ ...base, ...options } as never), "n", new RegExp(`^${field} `))
      }
      const edges = [
        define({ ...base, name: "sub-second timeout", timeout: 0.5 }),
        define({ ...base, name: "tuple timeout", timeout: [1, 500_000_000] }),
        define({ ...base, name: "longest timeout", timeout: `${MAX_TIMEOUT_SECONDS} seconds` }),
        define({ ...base, name: "lowest priority", priority: MIN_INT32, maxRetries: 0 }),
        define({ ...base, name: "highest priority", priority: MAX_INT32, maxRetries: MAX_INT32 })
      ]
      expect(edges.map((t) => [t.timeoutSeconds, t.priority, t.maxRetries])).toEqual([
        [1, 0, 3],
        [2, 0, 3],
        [MAX_TIMEOUT_SECONDS, 0, 3],
        [300, MIN_INT32, 0],
        [300, MAX_INT32, MAX_INT32]
      ])
      return withJobs(edges, Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        const ids: Array<string> = []
        for (const type of edges) ids.push((yield* enqueue(type, { s: type.name })).id)
        for (const [i, type] of edges.entries()) {
          expect(yield* row(ids[i]!), type.name).toMatchObject({ name: type.name, claimTimeout: type.timeoutSeconds, priority: type.priority, maxRetries: type.maxRetries })
        }
        // the highest priority runs first, the lowest last
        const order: Array<string> = []
        for (let i = 0; i < edges.length; i++) {
          const r = yield* Worker.processNext({ host: "h" })
          if (r._tag === "Completed") order.push(r.job.name)
        }
        expect(order[0]).toBe("highest priority")
        expect(order[order.length - 1]).toBe("lowest priority")
      }))
    })

    it.effect("enqueue: NaN, negative, infinite, fractional and huge runAt, delay and priority are refused with EnqueueInputError; the edges are stored exactly", () => {
      const Plain = define({ name: "plain", schema: Text, perform: () => Effect.void })
      const bad: ReadonlyArray<readonly [field: string, options: Record<string, unknown>]> = [
        ...[Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1.5, -1, -T0, 2 ** 53, 1e308, -1e308].map((runAt) => ["runAt", { runAt }] as const),
        ...[Number.NaN, -1, -0.5, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY, 2 ** 53, 1e308, Number.MAX_SAFE_INTEGER - T0 + 1].map((delay) => ["delay", { delay }] as const),
        ...["NaN seconds", "-5 seconds", "-0.5 millis", "Infinity", "soon", "1e308 seconds"].map((delay) => ["delay", { delay }] as const),
        ...[[Number.NaN, 0], [-1, 0], [0, -1], [1e308, 0], [Number.POSITIVE_INFINITY, 0]].map((delay) => ["delay", { delay }] as const),
        ...[-5n, 10n ** 40n].map((delay) => ["delay", { delay }] as const),
        ...[Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1.5, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, 1e308, -1e308]
          .map((priority) => ["priority", { priority }] as const)
      ]
      return withJobs([Plain], Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        yield* enqueue(Plain, { s: "kept" })
        const before = yield* snapshot
        for (const [field, options] of bad) {
          const error = yield* Effect.flip(enqueue(Plain, { s: "bad" }, options as never))
          expect(error, `${field} ${String(Object.values(options)[0])}`).toMatchObject({ _tag: "EnqueueInputError", field })
        }
        expect(yield* snapshot).toEqual(before)
        const edges: ReadonlyArray<readonly [label: string, options: Record<string, unknown>, expected: Partial<JobRow>]> = [
          ["runAt 0 (the epoch)", { runAt: 0 }, { runAt: 0 }],
          ["runAt at the largest exact value", { runAt: Number.MAX_SAFE_INTEGER }, { runAt: Number.MAX_SAFE_INTEGER }],
          ["delay 0", { delay: 0 }, { runAt: T0 }],
          ["a sub-millisecond delay (rounded up)", { delay: 0.4 }, { runAt: T0 + 1 }],
          ["a delay as a tuple", { delay: [1, 500_000] }, { runAt: T0 + 1001 }],
          ["a delay in nanoseconds", { delay: 1_500_000n }, { runAt: T0 + 2 }],
          ["a delay up to the largest exact value", { delay: Number.MAX_SAFE_INTEGER - T0 }, { runAt: Number.MAX_SAFE_INTEGER }],
          ["the lowest priority", { priority: MIN_INT32 }, { priority: MIN_INT32 }],
          ["the highest priority", { priority: MAX_INT32 }, { priority: MAX_INT32 }]
        ]
        const ids: Array<string> = []
        for (const [label, options, expected] of edges) {
          const { id } = yield* enqueue(Plain, { s: label }, options)
          ids.push(id)
          expect(yield* row(id), label).toMatchObject(expected)
        }
        // due now: the kept job, runAt 0, delay 0 and both priorities; then the short delays; the
        // largest runAt never, even a century on
        expect(yield* Worker.processQueue({ host: "h", limit: 0 })).toMatchObject({ processed: 5, failed: 0 })
        yield* TestClock.adjust("36500 days")
        expect(yield* Worker.processQueue({ host: "h", limit: 0 })).toMatchObject({ processed: 3, failed: 0 })
        for (const i of [1, 6]) expect((yield* row(ids[i]!)).status).toBe("pending")
      }))
    })

    it.effect("backoff: a fractional base gives whole-millisecond retry times, and the longest backoff is stored exactly", () => {
      const fail = () => Effect.fail("no")
      const Tiny = define({ name: "tiny", schema: Text, maxRetries: 5, backoff: { baseSeconds: 0.0004 }, perform: fail })
      const TinyLinear = define({ name: "tiny-linear", schema: Text, maxRetries: 5, backoff: { kind: "linear", baseSeconds: 0.0001 }, perform: fail })
      const Longest = define({ name: "longest", schema: Text, maxRetries: 1, backoff: { baseSeconds: MAX_BACKOFF_SECONDS, maxSeconds: MAX_BACKOFF_SECONDS }, perform: fail })
      return withJobs([Tiny, TinyLinear, Longest], Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        const expectRetry = (id: string, retryAt: number) =>
          Effect.gen(function*() {
            expect(yield* Worker.processNext({ host: "h" })).toMatchObject({ _tag: "Failed", job: { id }, willRetry: true, retryAt })
            expect(yield* row(id)).toMatchObject({ status: "pending", runAt: retryAt })
          })
        const tiny = yield* enqueue(Tiny, { s: "x" })
        // 0.0004 s × 2^1 = 0.8 ms → 1 ms; then × 2^2 = 1.6 ms → 2 ms
        yield* expectRetry(tiny.id, T0 + 1)
        yield* TestClock.adjust(1)
        yield* expectRetry(tiny.id, T0 + 1 + 2)
        yield* TestClock.adjust(2)
        // linear 0.0001 s × 1 = 0.1 ms: at least 1 ms
        const linear = yield* enqueue(TinyLinear, { s: "x" }, { priority: 1 })
        yield* expectRetry(linear.id, T0 + 3 + 1)
        const longest = yield* enqueue(Longest, { s: "x" }, { priority: 2 })
        yield* expectRetry(longest.id, T0 + 3 + MAX_BACKOFF_SECONDS * 1000)
      }))
    })

    it.effect("worker options: NaN, negative, infinite, fractional and huge values fail with WorkerConfigError and write nothing; a huge timeout cap is clamped", () => {
      const Plain = define({ name: "plain", schema: Text, perform: () => Effect.void })
      const Longest = define({ name: "longest", schema: Text, timeout: `${MAX_TIMEOUT_SECONDS} seconds`, perform: () => Effect.void })
      const durations = [Number.NaN, -1, 0, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY, "NaN seconds", "-5 seconds", "soon", [Number.NaN, 0], [-1, 0]]
      const counts = [Number.NaN, -1, 1.5, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY, 2 ** 53, 1e308]
      const bad: ReadonlyArray<readonly [field: string, run: Effect.Effect<unknown, { readonly _tag: string }, Worker.WorkerServices>]> = [
        ...durations.map((d) => ["timeoutCap", Worker.processNext({ host: "h", timeoutCap: d as never })] as const),
        ...durations.map((d) => ["timeoutCap", Worker.tick({ host: "h", timeoutCap: d as never })] as const),
        ...counts.map((n) => ["hostCap", Worker.processNext({ host: "h", hostCap: n })] as const),
        ...counts.map((n) => ["hostCap", Worker.processQueue({ host: "h", hostCap: n })] as const),
        ...[0, ...counts].map((n) => ["reapLimit", Worker.processNext({ host: "h", reapLimit: n })] as const),
        ...[0, ...counts].map((n) => ["concurrency", Effect.scoped(Worker.make({ host: "h", concurrency: n }))] as const),
        ...durations.map((d) => ["pollInterval", Effect.scoped(Worker.make({ host: "h", pollInterval: d as never }))] as const),
        ...durations.map((d) => ["reapInterval", Effect.scoped(Worker.make({ host: "h", reapInterval: d as never }))] as const),
        ...durations.map((d) => ["gracePeriod", Effect.scoped(Worker.make({ host: "h", gracePeriod: d as never }))] as const),
        ...durations.map((d) => ["timeoutCap", Effect.scoped(Worker.make({ host: "h", timeoutCap: d as never }))] as const)
      ]
      return withJobs([Plain, Longest], Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        const { id } = yield* enqueue(Plain, { s: "x" })
        const before = yield* snapshot
        for (const [i, [field, run]] of bad.entries()) {
          expect(yield* Effect.flip(run), `${i} ${field}`).toMatchObject({ _tag: "WorkerConfigError", field })
        }
        expect(yield* snapshot).toEqual(before)
        expect(yield* row(id)).toMatchObject({ status: "pending", attempts: 0, claimedBy: null })
        // clamped: a cap beyond the longest timeout is the longest timeout; below a second, a second
        for (const cap of [1e308, 2 ** 53]) {
          const longest = yield* enqueue(Longest, { s: String(cap) }, { priority: 1 })
          expect(yield* Worker.processNext({ host: "h", timeoutCap: cap }), String(cap)).toMatchObject({ _tag: "Completed", job: { id: longest.id } })
          expect((yield* row(longest.id)).claimTimeout, String(cap)).toBe(MAX_TIMEOUT_SECONDS)
        }
        expect(yield* Worker.processNext({ host: "h", timeoutCap: 0.5, hostCap: MAX_INT32 })).toMatchObject({ _tag: "Completed", job: { id } })
        expect((yield* row(id)).claimTimeout).toBe(1)
      }))
    })

    it.effect("processQueue limit and tick maxJobs: NaN, negative, infinite, fractional and huge counts fail with WorkerConfigError and write nothing", () => {
      const Plain = define({ name: "plain", schema: Text, perform: () => Effect.void })
      // before: NaN and -1 processed nothing, 1.5 processed 2, and tick wrote its host row first
      const counts = [Number.NaN, -1, -0.5, 0.5, 1.5, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY, 2 ** 53, 1e308]
      return withJobs([Plain], Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        for (let i = 0; i < 5; i++) yield* enqueue(Plain, { s: String(i) })
        const before = yield* snapshot
        for (const n of counts) {
          expect(yield* Effect.flip(Worker.processQueue({ host: "h", limit: n })), `limit ${n}`).toMatchObject({ _tag: "WorkerConfigError", field: "limit" })
          expect(yield* Effect.flip(Worker.tick({ host: "h", maxJobs: n })), `maxJobs ${n}`).toMatchObject({ _tag: "WorkerConfigError", field: "maxJobs" })
        }
        expect(yield* snapshot).toEqual(before)
        // whole numbers run exactly that many; a limit of 0 means no limit, maxJobs 0 runs none
        expect(yield* Worker.processQueue({ host: "h", limit: 1 })).toMatchObject({ processed: 1 })
        expect(yield* Worker.tick({ host: "h", maxJobs: 0 })).toMatchObject({ processed: 0 })
        expect(yield* Worker.tick({ host: "h", maxJobs: 2 })).toMatchObject({ processed: 2 })
        expect(yield* Worker.processQueue({ host: "h", limit: 0 })).toMatchObject({ processed: 2 })
      }))
    })

    it.effect("processQueue timeout: NaN, negative and undecodable durations fail with WorkerConfigError and write nothing; 0 starts nothing, an infinite one is no limit", () => {
      const Plain = define({ name: "plain", schema: Text, perform: () => Effect.void })
      // before: NaN and negatives processed nothing (or everything), and "NaN seconds" died untyped
      const bad = [
        Number.NaN, -1, -0.5, Number.NEGATIVE_INFINITY,
        "NaN seconds", "-5 seconds", "-0.5 millis", "soon", "Infinity", "1e308 seconds",
        [Number.NaN, 0], [0, Number.NaN], [-1, 0], [0, -1], [-1, Number.POSITIVE_INFINITY],
        -5n
      ]
      return withJobs([Plain], Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        for (let i = 0; i < 4; i++) yield* enqueue(Plain, { s: String(i) })
        const before = yield* snapshot
        for (const timeout of bad) {
          expect(yield* Effect.flip(Worker.processQueue({ host: "h", limit: 0, timeout: timeout as never })), String(timeout))
            .toMatchObject({ _tag: "WorkerConfigError", field: "timeout" })
        }
        expect(yield* snapshot).toEqual(before)
        expect(yield* Worker.processQueue({ host: "h", limit: 0, timeout: 0 })).toMatchObject({ processed: 0 })
        expect(yield* Worker.processQueue({ host: "h", limit: 1, timeout: "1 minute" })).toMatchObject({ processed: 1 })
        expect(yield* Worker.processQueue({ host: "h", limit: 1, timeout: Number.POSITIVE_INFINITY })).toMatchObject({ processed: 1 })
        expect(yield* Worker.processQueue({ host: "h", limit: 1, timeout: Duration.infinity })).toMatchObject({ processed: 1 })
        expect(yield* Worker.processQueue({ host: "h", limit: 0, timeout: [1, 0] })).toMatchObject({ processed: 1 })
      }))
    })

    it.effect("drain expiresIn: NaN, undecodable and too-large durations fail with WorkerConfigError and write nothing; the edges are stored exactly and read back", () => {
      // before: NaN drained forever, "NaN seconds" died untyped, and 1e308 wrote now + 1e308
      // (an SqlError on PostgreSQL and MySQL; on SQLite stored, and every host read then threw)
      const bad = [
        Number.NaN, "NaN seconds", "soon", "Infinity", "1e308 seconds", [Number.NaN, 0], [0, Number.NaN],
        1e308, 2 ** 53, Number.MAX_SAFE_INTEGER - T0 + 1, [1e300, 0], 10n ** 40n
      ]
      return withJobs([], Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        const store = yield* JobStore
        yield* Worker.tick({ host: "kept", maxJobs: 0 })
        const before = yield* snapshot
        for (const expiresIn of bad) {
          for (const host of ["kept", "new"]) {
            expect(yield* Effect.flip(Worker.drain({ host, expiresIn: expiresIn as never })), `${host} ${String(expiresIn)}`)
              .toMatchObject({ _tag: "WorkerConfigError", field: "expiresIn" })
          }
        }
        expect(yield* snapshot).toEqual(before)
        // ≤ 0 and infinite: no expiry (as documented); sub-millisecond: rounded up
        const edges: ReadonlyArray<readonly [expiresIn: unknown, until: number | null]> = [
          [undefined, null],
          [0, null],
          [-1, null],
          ["-5 seconds", null],
          [Number.POSITIVE_INFINITY, null],
          [Duration.infinity, null],
          ["1 minute", T0 + 60 * SECOND],
          [0.4, T0 + 1],
          [[1, 500_000], T0 + 1001],
          [Number.MAX_SAFE_INTEGER - T0, Number.MAX_SAFE_INTEGER]
        ]
        for (const [i, [expiresIn, until]] of edges.entries()) {
          yield* Worker.drain({ host: `d${i}`, expiresIn: expiresIn as never })
          expect(Option.map(yield* store.getHost(`d${i}`), (h) => [h.draining, h.drainExpiresAt]), String(expiresIn)).toEqual(Option.some([true, until]))
        }
        expect((yield* store.listHosts).map((h) => h.host).sort()).toEqual(["kept", ...edges.map((_, i) => `d${i}`)].sort())
        expect(yield* Worker.processNext({ host: `d${edges.length - 1}` })).toEqual(Worker.ProcessResult.Draining({ until: Number.MAX_SAFE_INTEGER }))
      }))
    })

    it.effect("hostCap above 2^31 − 1 (the max_concurrent INT column) fails with WorkerConfigError and writes nothing; 2^31 − 1 is stored exactly", () => {
      const Plain = define({ name: "plain", schema: Text, perform: () => Effect.void })
      const huge = [MAX_INT32 + 1, 2 ** 32, Number.MAX_SAFE_INTEGER]
      return withJobs([Plain], Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        const { id } = yield* enqueue(Plain, { s: "x" })
        const before = yield* snapshot
        for (const hostCap of huge) {
          const calls: ReadonlyArray<Effect.Effect<unknown, { readonly _tag: string }, Worker.WorkerServices>> = [
            Worker.processNext({ host: "h", hostCap }),
            Worker.processQueue({ host: "h", hostCap }),
            Worker.tick({ host: "h", hostCap }),
            Worker.claimAndRun({ host: "h", hostCap }),
            Effect.scoped(Worker.make({ host: "h", hostCap, concurrency: 1 }))
          ]
          for (const call of calls) {
            expect(yield* Effect.flip(call), String(hostCap)).toMatchObject({ _tag: "WorkerConfigError", field: "hostCap" })
          }
        }
        expect(yield* snapshot).toEqual(before)
        expect(yield* Worker.tick({ host: "h", hostCap: MAX_INT32 })).toMatchObject({ processed: 1, capped: false })
        expect(yield* row(id)).toMatchObject({ status: "completed", claimedBy: "h" })
        expect(Option.map(yield* Effect.flatMap(JobStore, (s) => s.getHost("h")), (h) => h.maxConcurrent)).toEqual(Option.some(MAX_INT32))
      }))
    })

    it.effect("a host ending in a space fails with WorkerConfigError and writes nothing (MariaDB would take it for the host without it)", () => {
      const Excl = define({ name: "excl", exclusive: true, schema: Text, perform: () => Effect.void })
      return withJobs([Excl], Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        const store = yield* JobStore
        yield* Worker.tick({ host: "th", maxJobs: 0 })
        const { id } = yield* enqueue(Excl, { s: "x" })
        const before = yield* snapshot
        for (const host of ["th ", "th  ", " ", "   ", `${sized(254)} `, "tab\t "]) {
          const calls: ReadonlyArray<Effect.Effect<unknown, { readonly _tag: string }, Worker.WorkerServices>> = [
            Worker.processNext({ host }),
            Worker.processQueue({ host }),
            Worker.tick({ host }),
            Worker.claimAndRun({ host }),
            Worker.reap({ host }),
            Worker.drain({ host }),
            Worker.resume({ host }),
            Effect.scoped(Worker.make({ host, concurrency: 1 }))
          ]
          for (const call of calls) {
            const error = yield* Effect.flip(call)
            expect(error, JSON.stringify(host)).toMatchObject({ _tag: "WorkerConfigError", field: "host", reason: expect.stringMatching(/ends with a space/) })
          }
        }
        expect(yield* snapshot).toEqual(before)
        // a host ending in another whitespace character is its own host everywhere
        expect(yield* Worker.processNext({ host: "th\t" })).toMatchObject({ _tag: "Completed", job: { id } })
        expect(yield* row(id)).toMatchObject({ claimedBy: "th\t" })
        expect((yield* store.listHosts).map((h) => h.host)).toEqual(["th"])
      }))
    })

    it.effect("concurrency above the documented maximum (1,000) fails with WorkerConfigError and writes nothing", () =>
      withJobs([], Effect.gen(function*() {
        expect(MAX_CONCURRENCY).toBe(1000)
        const before = yield* snapshot
        for (const concurrency of [MAX_CONCURRENCY + 1, 10_000, MAX_INT32, 2 ** 53]) {
          const error = yield* Effect.flip(Effect.scoped(Worker.make({ host: "h", concurrency })))
          expect(error, String(concurrency)).toMatchObject({ _tag: "WorkerConfigError", field: "concurrency" })
          if (error._tag === "WorkerConfigError") expect(error.reason).toMatch(/1 to 1000/)
        }
        expect(yield* snapshot).toEqual(before)
      })))

    it.effect("a stored payload whose concurrencyKeyFor now throws fails its attempt with a clear error, retried under the normal rules; the worker carries on", () =>
      Effect.gen(function*() {
        const p = yield* makeProbe
        // The key function as another version of the app might have it: it passed at enqueue
        // and throws on the stored payload now.
        let mode: "ok" | "throw" | "nul" = "ok"
        const Keyed = define({
          name: "keyed",
          schema: Text,
          maxRetries: 1,
          concurrencyKeyFor: ({ s }) => {
            if (mode === "throw") throw new Error(`no key for ${s}`)
            return mode === "nul" ? `k-${s}\u0000` : `k-${s}`
          },
          perform: p.perform
        })
        yield* withJobs([Keyed], Effect.gen(function*() {
          yield* p.bind
          yield* TestClock.setTime(T0)
          const leases = yield* JobLeases
          const a = yield* enqueue(Keyed, { s: "a" })
          mode = "throw"
          const thrown = "concurrencyKeyFor threw: Error: no key for a"
          expect(yield* Worker.processNext({ host: "h" })).toEqual(Worker.ProcessResult.Failed({
            job: { id: a.id, name: "keyed", queue: "default", attempt: 1 },
            error: thrown,
            willRetry: true,
            retryAt: T0 + 4 * SECOND,
            leaseLost: false
          }))
          expect(yield* row(a.id)).toMatchObject({ status: "pending", attempts: 1, runAt: T0 + 4 * SECOND, lastError: thrown, claimToken: null })
          expect(yield* leases.list).toEqual([])
          // the last run (maxRetries 1): a key the lock table cannot hold fails it too, and it is dead
          mode = "nul"
          yield* TestClock.adjust(4 * SECOND)
          const tally = yield* Worker.processQueue({ host: "h", limit: 0 })
          expect(tally).toMatchObject({ processed: 0, failed: 1, skipped: 0, fenced: 0 })
          expect(tally.errors).toEqual([expect.stringMatching(/^LeaseInputError: .*NUL/)])
          expect(yield* row(a.id)).toMatchObject({ status: "failed", attempts: 2, failedAt: T0 + 4 * SECOND })
          expect(yield* p.all).toEqual([])

          // the long-running worker records the failure (the row is not left processing) and carries on
          mode = "ok"
          const b = yield* enqueue(Keyed, { s: "b" })
          mode = "throw"
          const scope = yield* Scope.make()
          const context = yield* Layer.buildWithScope(Worker.layer({ host: "lw", concurrency: 1, pollInterval: "20 millis" }), scope)
          const worker = Context.get(context, Worker.WorkerHandle)
          const settled = (f: (s: Worker.WorkerStats) => boolean) =>
            eventually(Effect.zipRight(TestClock.adjust("20 millis"), Effect.map(worker.stats, f)))
          yield* settled((s) => s.failed >= 1)
          expect(yield* worker.stats).toMatchObject({ processed: 0, failed: 1, errors: ["concurrencyKeyFor threw: Error: no key for b"] })
          expect(yield* row(b.id)).toMatchObject({ status: "pending", attempts: 1, lastError: "concurrencyKeyFor threw: Error: no key for b" })
          mode = "ok"
          yield* TestClock.adjust(4 * SECOND)
          yield* worker.wake
          yield* settled((s) => s.processed >= 1)
          yield* Scope.close(scope, Exit.void)
          expect(yield* row(b.id)).toMatchObject({ status: "completed", attempts: 2 })
          expect((yield* p.all).map((s) => [s.jobId, Option.map(s.lease, (l) => l.name)])).toEqual([[b.id, Option.some("key:k-b")]])
          expect(yield* leases.list).toEqual([])
        }))
      }))

    it.effect("LeaseLock: a NaN, infinite, fractional or huge now is refused with LeaseInputError (field now) and changes nothing", () =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const lock = yield* db.leaseLock(db.table("locks"))
        yield* lock.ensureTable
        const MINUTE = 60_000
        expect(yield* lock.tryAcquire({ name: "held", owner: "a", host: "h", now: T0, ttlMs: MINUTE })).toBe(true)
        expect(yield* lock.tryAcquire({ name: "stale", owner: "a", host: "h", now: T0 - 2 * MINUTE, ttlMs: MINUTE })).toBe(true)
        const before = yield* lock.list
        // before: each database did something different (NaN rows, SqlErrors, take-overs)
        for (const now of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1.5, T0 + 0.5, 2 ** 53, 1e308, -1e308]) {
          const calls: ReadonlyArray<Effect.Effect<unknown, LeaseError>> = [
            lock.tryAcquire({ name: "free", owner: "b", now, ttlMs: MINUTE }),
            lock.tryAcquire({ name: "free", owner: "b", now, expiresAt: T0 + MINUTE }),
            lock.tryAcquire({ name: "held", owner: "a", now, ttlMs: MINUTE }),
            lock.tryAcquire({ name: "stale", owner: "b", now, expiresAt: T0 + MINUTE }),
            lock.renew({ name: "held", owner: "a", now, ttlMs: MINUTE }),
            lock.renew({ name: "held", owner: "a", now, expiresAt: T0 + 2 * MINUTE })
          ]
          for (const call of calls) {
            expect(yield* Effect.flip(call), String(now)).toMatchObject({ _tag: "LeaseInputError", field: "now" })
          }
        }
        expect(yield* lock.list).toEqual(before)
        // whole values, including 0, are times like any other
        expect(yield* lock.tryAcquire({ name: "stale", owner: "b", host: "h", now: T0, ttlMs: MINUTE })).toBe(true)
        expect(yield* lock.tryAcquire({ name: "zero", owner: "z", host: null, now: 0, ttlMs: 0 })).toBe(true)
        expect(yield* lock.read("zero")).toEqual(Option.some({ name: "zero", owner: "z", host: null, acquiredAt: 0, expiresAt: 0 }))
      }))

    it.effect("LeaseLock: release with a NaN, infinite, fractional or huge expiredBefore is refused with LeaseInputError and changes nothing", () =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const lock = yield* db.leaseLock(db.table("locks"))
        yield* lock.ensureTable
        const MINUTE = 60_000
        expect(yield* lock.tryAcquire({ name: "n", owner: "a", host: "h", now: T0, ttlMs: MINUTE })).toBe(true)
        const before = yield* lock.list
        // before: Infinity removed a live lease on some stores, NaN failed with an SqlError on others
        for (const expiredBefore of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1.5, T0 + MINUTE + 0.5, 2 ** 53, 1e308, -1e308]) {
          const error = yield* Effect.flip(lock.release({ name: "n", owner: "a", expiredBefore }))
          expect(error, String(expiredBefore)).toMatchObject({ _tag: "LeaseInputError", field: "expiredBefore" })
        }
        expect(yield* lock.list).toEqual(before)
        expect(yield* lock.release({ name: "n", owner: "a", expiredBefore: T0 + MINUTE })).toBe(false)
        expect(yield* lock.release({ name: "n", owner: "a", expiredBefore: T0 + MINUTE + 1 })).toBe(true)
        expect(yield* lock.list).toEqual([])
      }))

    it.effect("LeaseLock: a negative ttlMs or an expiresAt before now (an already expired lease) is refused with LeaseInputError and changes nothing; ttlMs 0 is allowed", () =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const lock = yield* db.leaseLock(db.table("locks"))
        yield* lock.ensureTable
        yield* TestClock.setTime(T0)
        const MINUTE = 60_000
        expect(yield* lock.tryAcquire({ name: "held", owner: "a", host: "h", now: T0, ttlMs: MINUTE })).toBe(true)
        expect(yield* lock.tryAcquire({ name: "stale", owner: "a", host: "h", now: T0 - 2 * MINUTE, ttlMs: MINUTE })).toBe(true)
        const before = yield* lock.list
        const expired: ReadonlyArray<LeaseExpiry> = [
          { ttlMs: -1 },
          { ttlMs: -MINUTE },
          { ttlMs: -0.5 },
          { ttlMs: -T0 },
          { expiresAt: T0 - 1 },
          { expiresAt: T0 - MINUTE },
          { expiresAt: 0 },
          { expiresAt: -1 }
        ]
        for (const expiry of expired) {
          const label = JSON.stringify(expiry)
          const calls: ReadonlyArray<Effect.Effect<unknown, LeaseError>> = [
            lock.tryAcquire({ name: "free", owner: "b", now: T0, ...expiry }),
            lock.tryAcquire({ name: "held", owner: "a", now: T0, ...expiry }),
            lock.tryAcquire({ name: "stale", owner: "b", now: T0, ...expiry }),
            lock.renew({ name: "held", owner: "a", now: T0, ...expiry }),
            // now from the Clock
            lock.tryAcquire({ name: "free", owner: "b", ...expiry }),
            lock.renew({ name: "held", owner: "a", ...expiry })
          ]
          for (const call of calls) {
            const error = yield* Effect.flip(call)
            expect(error, label).toMatchObject({ _tag: "LeaseInputError", field: "expiresAt" })
            if (error._tag === "LeaseInputError") expect(error.reason, label).toMatch(/expired already/)
          }
        }
        expect(yield* lock.list).toEqual(before)
        // a lease that expires exactly now is allowed: it is live until now has passed
        expect(yield* lock.tryAcquire({ name: "free", owner: "b", host: "h", now: T0, ttlMs: 0 })).toBe(true)
        expect(yield* lock.renew({ name: "held", owner: "a", now: T0 + 5, expiresAt: T0 + 5 })).toBe(true)
        expect(yield* lock.renew({ name: "held", owner: "a", ttlMs: 0 })).toBe(true)
        expect(yield* lock.list).toEqual([
          { name: "free", owner: "b", host: "h", acquiredAt: T0, expiresAt: T0 },
          { name: "held", owner: "a", host: "h", acquiredAt: T0, expiresAt: T0 },
          before[1]
        ])
      }))
  })
