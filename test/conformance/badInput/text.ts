/**
 * Bad-input catalogue, odd text (issue 6): quotes, SQL, control characters, emoji, combining
 * marks and right-to-left text in payloads, unique keys, job names, queues, concurrency keys and
 * hosts are stored and read back verbatim; every case reads the row, payload or lease back and
 * compares it. The refusals of unstorable text that happen before any store call (Job.define,
 * enqueue's and the worker's option checks) run once, in test/unit/.
 */
import { expect } from "@effect/vitest"
import { Effect, Option, Schema, TestClock } from "effect"
import { JobLeases, JobStore } from "../../../src/JobStore.ts"
import { type AnyJobType, define, enqueue, enqueueMany } from "../../../src/runtime/Job.ts"
import * as Worker from "../../../src/runtime/Worker.ts"
import { withJobs } from "../../support/jobs.ts"
import { type BadInputArea, makeProbe, row, snapshot, Text } from "./helpers.ts"
import { fittedLease, ODD, sized, T0, WINDOW } from "./inputs.ts"

/** A job type whose payload is a string and a list of strings, performed by `perform`. */
const stringsType = (perform: Parameters<typeof define>[0]["perform"]) =>
  define({ name: "strings", schema: Schema.Struct({ s: Schema.String, list: Schema.Array(Schema.String) }), perform })

/** The odd-text area of the catalogue. */
export const textArea: BadInputArea = (it) => {
  it.effect("payload strings with quotes, SQL, control characters (NUL too: JSON escapes it) and unicode reach perform verbatim", () =>
    Effect.gen(function*() {
      const p = yield* makeProbe
      const Strings = stringsType(p.perform)
      const cases: ReadonlyArray<readonly [string, string]> = [
        ...ODD,
        ["a NUL character", "a\u0000b"],
        ["an unpaired surrogate (JSON escapes it)", "a\ud800b"],
        ["JSON-looking text", `{"n":1}\\u0000" ]`],
        ["10,000 characters", sized(10_000, "p'\";-\\\t\r\n\x01é🚀")]
      ]
      yield* withJobs(
        [Strings],
        Effect.gen(function*() {
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
        })
      )
    }))

  // A batch takes another path to the database than a single job (on PostgreSQL, its rows as
  // one JSON parameter, src/adapters/postgres/dialect.ts): the same text, read back the same.
  it.effect("a batch (enqueueMany) stores odd payloads, unique keys and a queue verbatim, and dedupes its keys", () =>
    Effect.gen(function*() {
      const p = yield* makeProbe
      const Strings = stringsType(p.perform)
      const texts = [...ODD.map(([, s]) => s), "a\u0000b", "a\ud800b", `{"n":1}\\u0000" ]`, sized(255, "p'\";-\\é🚀")]
      const queue = `q ${ODD[0]![1]}`
      yield* withJobs(
        [Strings],
        Effect.gen(function*() {
          yield* p.bind
          const payloads = texts.map((s) => ({ s, list: [s, "", s] }))
          // Keys of 255 characters, each a different odd text (NUL and lone surrogates are refused in keys).
          const keyOf = (_: unknown, i: number) => `${i}:` + sized(250, ODD[i % ODD.length]![1])
          const batch = yield* enqueueMany(Strings, payloads, { queue, uniqueKey: keyOf })
          expect(batch.inserted).toBe(texts.length)
          for (const [i, payload] of payloads.entries()) {
            const stored = yield* row(batch.jobs[i]!.id)
            expect(JSON.parse(stored.payload), texts[i]).toEqual(payload)
            expect(stored.uniqueKey, texts[i]).toBe(keyOf(payload, i))
            expect(stored.queue, texts[i]).toBe(queue)
          }
          // The same keys again, in one batch: every one a duplicate of its row.
          const again = yield* enqueueMany(Strings, payloads, { queue, uniqueKey: keyOf })
          expect(again.inserted).toBe(0)
          expect(again.jobs.map((j) => j.id)).toEqual(batch.jobs.map((j) => j.id))
          const seen: Array<unknown> = []
          for (const _ of payloads) {
            expect(yield* Worker.processNext({ host: "h", queues: [queue] })).toMatchObject({ _tag: "Completed" })
            seen.push((yield* p.last).payload)
          }
          // Each payload reached perform once, as it was given.
          expect(seen).toHaveLength(payloads.length)
          expect(seen).toEqual(expect.arrayContaining(payloads))
        })
      )
    }))

  // The refusals of 256 and 10,000 characters: test/unit/enqueue.test.ts.
  it.effect("unique keys of 100, 101 and 255 characters round-trip and dedupe exactly", () => {
    const Plain = define({ name: "plain", schema: Text, perform: () => Effect.void })
    const seeds: ReadonlyArray<readonly [string, string]> = [
      ["plain", "k"],
      ["odd", `'";--\\\t\r\n\x01\x1f\x7f`],
      ["multi-byte", "é名ß"],
      ["emoji (two code units each)", "🚀👩‍👧"]
    ]
    return withJobs(
      [Plain],
      Effect.gen(function*() {
        for (const n of [100, 101, 255]) {
          for (const [label, seed] of seeds) {
            const key = sized(n, seed)
            expect(key).toHaveLength(n)
            const first = yield* enqueue(Plain, { s: label }, { uniqueKey: key })
            expect(first.duplicate, `${n} ${label}`).toBe(false)
            expect((yield* row(first.id)).uniqueKey, `${n} ${label}`).toBe(key)
            expect(yield* enqueue(Plain, { s: "again" }, { uniqueKey: key })).toEqual({
              id: first.id,
              status: "duplicate",
              duplicate: true
            })
          }
        }
        expect((yield* snapshot).jobs).toHaveLength(3 * seeds.length)
      })
    )
  })

  // The refusals of unstorable and empty keys: test/unit/enqueue.test.ts.
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
    return withJobs(
      [Plain],
      Effect.gen(function*() {
        for (const [label, key] of ODD) {
          const first = yield* enqueue(Plain, { s: label }, { uniqueKey: key })
          expect(first.duplicate, label).toBe(false)
          expect((yield* row(first.id)).uniqueKey, label).toBe(key)
          expect(yield* enqueue(Plain, { s: label }, { uniqueKey: key }), label).toEqual({
            id: first.id,
            status: "duplicate",
            duplicate: true
          })
        }
        for (const [label, a, b] of distinct) {
          const x = yield* enqueue(Plain, { s: label }, { uniqueKey: a })
          const y = yield* enqueue(Plain, { s: label }, { uniqueKey: b })
          expect([x.duplicate, y.duplicate], label).toEqual([false, false])
          expect((yield* row(x.id)).uniqueKey, label).toBe(a)
          expect((yield* row(y.id)).uniqueKey, label).toBe(b)
        }
      })
    )
  })

  // The names Job.define refuses: test/unit/define.test.ts.
  it.effect("odd job names round-trip through enqueue, claim, perform and the exclusive lease", () =>
    Effect.gen(function*() {
      const p = yield* makeProbe
      const plain = [...ODD.map(([, name]) => name), sized(255, "n'名\t🚀")].map((name) =>
        define({ name, schema: Text, perform: p.perform })
      )
      const exclusive = [...ODD.map(([, name]) => `x ${name}`), sized(255, "e'名\t🚀")]
        .map((name) => define({ name, exclusive: true, schema: Text, perform: p.perform }))
      yield* withJobs(
        [...plain, ...exclusive],
        Effect.gen(function*() {
          yield* p.bind
          yield* TestClock.setTime(T0)
          for (const type of [...plain, ...exclusive]) {
            const { id } = yield* enqueue(type, { s: "x" })
            expect((yield* row(id)).name).toBe(type.name)
            expect(yield* Worker.processNext({ host: "h" })).toMatchObject({
              _tag: "Completed",
              job: { id, name: type.name }
            })
            expect(yield* row(id)).toMatchObject({ name: type.name, status: "completed" })
            const seen = yield* p.last
            expect(seen).toMatchObject({ jobId: id, name: type.name })
            if (type.lease.exclusive) {
              const lease = fittedLease("job:", type.name)
              expect(seen.lease).toEqual(
                Option.some({
                  name: lease,
                  owner: seen.claimToken,
                  expiresAt: T0 + WINDOW,
                  fencingToken: expect.any(BigInt)
                })
              )
              expect(seen.leaseRow).toEqual(
                Option.some({ name: lease, owner: seen.claimToken, host: "h", acquiredAt: T0, expiresAt: T0 + WINDOW })
              )
              expect(yield* Effect.flatMap(JobLeases, (l) => l.read(lease))).toEqual(Option.none())
            } else {
              expect(seen.lease).toEqual(Option.none())
            }
          }
          // the last one ran was the 255-character exclusive name: its lease is hashed to 68 characters
          expect(Option.map((yield* p.last).lease, (l) => l.name)).toEqual(
            Option.some(expect.stringMatching(/^job:[0-9a-f]{64}$/))
          )
        })
      )
    }))

  // The queues Job.define and enqueue refuse: test/unit/define.test.ts and test/unit/enqueue.test.ts.
  it.effect("odd queues are stored verbatim and claimed only under exactly that name", () =>
    Effect.gen(function*() {
      const p = yield* makeProbe
      const queues = [...ODD.map(([, q]) => q), sized(255, "q'名\t🚀")]
      const byDefault = queues.map((queue, i) =>
        define({ name: `queued-${i}`, queue, schema: Text, perform: p.perform })
      )
      const Plain = define({ name: "plain", schema: Text, perform: p.perform })
      yield* withJobs(
        [...byDefault, Plain],
        Effect.gen(function*() {
          yield* p.bind
          yield* TestClock.setTime(T0)
          // near misses of "café" claim nothing; the exact name does
          const cafe = yield* enqueue(Plain, { s: "café" }, { queue: "café" })
          for (const near of ["cafe\u0301", "CAFÉ", "café\t", "caf", "café%"]) {
            expect(yield* Worker.processNext({ host: "h", queues: [near] }), near).toEqual(Worker.ProcessResult.Idle())
          }
          expect(yield* Worker.processNext({ host: "h", queues: ["café"] })).toMatchObject({
            _tag: "Completed",
            job: { id: cafe.id, queue: "café" }
          })
          for (const [i, queue] of queues.entries()) {
            const a = yield* enqueue(byDefault[i]!, { s: "default" })
            const b = yield* enqueue(Plain, { s: "option" }, { queue })
            expect((yield* row(a.id)).queue).toBe(queue)
            expect((yield* row(b.id)).queue).toBe(queue)
          }
          for (const queue of queues) {
            const ran = [
              yield* Worker.processNext({ host: "h", queues: [queue] }),
              yield* Worker.processNext({ host: "h", queues: [queue] })
            ]
            expect(ran.map((r) => r._tag)).toEqual(["Completed", "Completed"])
            expect((yield* p.all).slice(-2).map((s) => s.queue)).toEqual([queue, queue])
            expect(yield* Worker.processNext({ host: "h", queues: [queue] })).toEqual(Worker.ProcessResult.Idle())
          }
          const counts = yield* Effect.flatMap(JobStore, (s) => s.counts)
          for (const queue of queues) expect(counts).toContainEqual({ queue, status: "completed", count: 2 })
        })
      )
    }))

  // The keys Job.define and enqueue refuse (and a concurrencyKeyFor that throws at enqueue):
  // test/unit/define.test.ts and test/unit/enqueue.test.ts.
  it.effect("concurrency keys, odd or 96 to 10,000 characters long, name the lease exactly (hashed past 100)", () =>
    Effect.gen(function*() {
      const p = yield* makeProbe
      const Keyed = define({
        name: "keyed",
        schema: Schema.Struct({ key: Schema.String }),
        concurrencyKeyFor: (x) => x.key,
        perform: p.perform
      })
      const long = sized(10_000, "c'\";-\\é名\t🚀")
      const cases: ReadonlyArray<readonly [label: string, key: string, lease: string | undefined]> = [
        ...ODD.map(([label, key]) => [label, key, `key:${key}`] as const),
        ...[96, 97, 100, 101, 255, 256, 10_000].map((n) =>
          [`${n} characters`, sized(n), fittedLease("key:", sized(n))] as const
        ),
        [
          "10,000 characters, differing only in the last one",
          long.slice(0, -1) + "y",
          fittedLease("key:", long.slice(0, -1) + "y")
        ],
        ["10,000 characters, the other", long, fittedLease("key:", long)],
        ["surrounding whitespace (trimmed)", " \t k \r\n", "key:k"],
        ["blank (no lease)", " \t\r\n", undefined]
      ]
      const statics = [ODD[1]![1], ODD[7]![1], long].map((key, i) =>
        [
          define({
            name: `static-${i}`,
            schema: Schema.Struct({ key: Schema.String }),
            concurrencyKey: key,
            perform: p.perform
          }),
          fittedLease("key:", key)
        ] as const
      )
      yield* withJobs(
        [Keyed, ...statics.map(([type]) => type)],
        Effect.gen(function*() {
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
              expect(seen.leaseRow, label).toEqual(
                Option.some({ name: lease, owner: seen.claimToken, host: "h", acquiredAt: T0, expiresAt: T0 + WINDOW })
              )
              // released afterwards
              expect(yield* Effect.flatMap(JobLeases, (l) => l.read(lease)), label).toEqual(Option.none())
            })
          for (const [label, key, lease] of cases) yield* run(Keyed, { key }, lease, label)
          for (const [type, lease] of statics) yield* run(type, { key: "ignored" }, lease, type.name)
          // keys that differ name different leases, however long
          const leases = new Set(cases.flatMap(([, , lease]) => (lease === undefined ? [] : [lease])))
          expect(leases.size).toBe(cases.length - 1)
        })
      )
    }))

  // The hosts the worker refuses: test/unit/workerOptions.test.ts.
  it.effect("odd hosts are stored verbatim on the job row, the hosts table and the lease", () =>
    Effect.gen(function*() {
      const p = yield* makeProbe
      const Excl = define({ name: "excl", exclusive: true, schema: Text, perform: p.perform })
      const hosts = [...ODD.map(([, h]) => h), sized(255, "h'\";-\\é名\t🚀"), "名".repeat(255)]
      yield* withJobs(
        [Excl],
        Effect.gen(function*() {
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
            expect(Option.map(yield* store.getHost(host), (h) => [h.host, h.draining]), host).toEqual(
              Option.some([host, false])
            )
            yield* Worker.drain({ host })
            expect(Option.map(yield* store.getHost(host), (h) => h.draining), host).toEqual(Option.some(true))
            yield* Worker.resume({ host })
            expect(Option.map(yield* store.getHost(host), (h) => h.draining), host).toEqual(Option.some(false))
          }
          expect((yield* store.listHosts).map((h) => h.host).sort()).toEqual([...hosts].sort())
        })
      )
    }))
}
