/**
 * The SQL JobStore's claims: the dialect's claim strategy (one UPDATE … RETURNING, which may take
 * the claimed jobs' leases too, or a locking read then an UPDATE by id, packed into one round
 * trip off a Galera cluster), concurrent uncapped claims sent together (../batching.ts), and a
 * host cap kept by the dialect's host-cap strategy.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Option } from "effect"
import { randomUUID } from "node:crypto"
import type { ClaimInput, ClaimResult, JobRow } from "../../../core/model.ts"
import { tokensTable } from "../../../core/tables.ts"
import { applyClaim, claimOrder, onePerKey } from "../../../core/transitions.ts"
import type { JobStoreApi } from "../../../ports/JobStore.ts"
import { makeBatcher } from "../batching.ts"
import { decodeClaimedRow, decodeJobRow, int } from "../decode.ts"
import type { ClaimParts } from "../dialect.ts"
import { retryTransient } from "../retry.ts"
import { inTransactionWith, lastRows, packedTransaction } from "../transaction.ts"
import type { StoreRunner } from "./runner.ts"

/** The SQL JobStore's `claim` and `claimMany` over `runner`. */
export const makeClaims = (runner: StoreRunner): Pick<JobStoreApi, "claim" | "claimMany"> => {
  const { changed, dialect, jobDialect, jobs, rows, sql, statements, tables, transaction } = runner

  // Whether the job lease table and its token counters exist: `leaseTablesKnown` once both have
  // been seen, else asked of the catalog (`lookUpLeaseTables`) by each claim until they are.
  // Migrations create them; an app that never ran them gets them from its first exclusive
  // attempt (src/adapters/jobLeases.ts), and until then claims take no lease.
  let leaseTablesKnown = false
  const lookUpLeaseTables: Effect.Effect<boolean, SqlError> = Effect.map(
    Effect.all([tables.jobLocks, tokensTable(tables.jobLocks)].map((t) => rows(dialect.lease.tableExists(t)))),
    (found) => (leaseTablesKnown = found.every((r) => r.length > 0))
  )

  const countRunning = (host: string) => Effect.map(rows(statements.countRunning(host)), (r) => int(r[0]?.n ?? 0))

  // A claim in one round trip where the dialect packs it; a Galera cluster claims in steps, as it finishes.
  const packedClaim = jobDialect.claim.kind === "lockThenUpdate" && !runner.galeraCluster
    ? jobDialect.claim.packed
    : undefined
  // Up to `limit` rows in one claim, best first. A single row carries the caller's token;
  // rows of a batch each get a fresh one (made by the database where it can).
  const claimRows = (input: ClaimInput, limit: number): Effect.Effect<ReadonlyArray<JobRow>, SqlError> => {
    const strategy = jobDialect.claim
    switch (strategy.kind) {
      case "returning": {
        // Where the dialect can, the claim takes the claimed jobs' leases too (migration 11), once
        // the lease tables are known to exist, and never inside a transaction: a lease row left
        // uncommitted until the caller's (or a capped claim's) transaction ends would hold up
        // every claim that meets its name (docs/behaviour.md §8).
        const { leases } = strategy
        const claimed = (parts: ClaimParts) => {
          const plain = () => jobs(strategy.statement(statements.context, parts))
          if (leases.kind === "inAttempt") return plain()
          const taking = () =>
            Effect.map(
              rows(leases.statement(statements.context, parts, { host: input.host, now: input.now })),
              (r) => r.map(decodeClaimedRow)
            )
          // Once the lease tables are known, the choice is made in the transaction check's step
          // (on an idle worker every step before the statement goes out is on the job's path).
          return inTransactionWith((inside) =>
            inside
              ? plain()
              : leaseTablesKnown
              ? taking()
              : Effect.flatMap(lookUpLeaseTables, (seen) => (seen ? taking() : plain()))
          )
        }
        return limit <= 1
          ? claimed(statements.claimParts(input, 1))
          : Effect.map(
            claimed(statements.claimParts(input, limit, strategy.newToken)),
            (r) => [...r].sort(claimOrder)
          )
      }
      case "lockThenUpdate": {
        if (packedClaim !== undefined) {
          // One round trip: lock, claim and read back (best first, as the other dialects' claims).
          const tokens = Array.from({ length: limit }, (_, i) => (i === 0 ? input.claimToken : randomUUID()))
          const parts = statements.claimParts(input, limit, packedClaim.token(statements.context, tokens))
          return Effect.map(
            packedTransaction(sql, packedClaim.statement(statements.context, parts, input.host, tokens)),
            (results) => lastRows(results).map(decodeJobRow).sort(claimOrder)
          )
        }
        // Holding the picked rows' locks, update them by id; they end as applyClaim says.
        return transaction(Effect.gen(function*() {
          const parts = statements.claimParts(input, limit)
          const locked = yield* jobs(strategy.pickDue(statements.context, parts.due, parts.limit))
          // One per key: the best row of each `claim_lease` (the others' locks end with the transaction).
          const picked = parts.onePerKey ? onePerKey(locked) : locked
          if (picked.length === 0) {
            return []
          }
          const tokens = picked.map((r, i) => ({ id: r.id, token: i === 0 ? input.claimToken : randomUUID() }))
          yield* changed(statements.claimByIds(input, tokens))
          return picked.map((r, i) => applyClaim(r, { ...input, claimToken: tokens[i]!.token }))
        }))
      }
    }
  }
  const claimRow = (input: ClaimInput) => Effect.map(claimRows(input, 1), (r) => Option.fromNullable(r[0]))

  // Concurrent uncapped claims (a worker's fibers) go as one statement; see ../batching.ts.
  // Claims for different queues, hosts or caps are grouped apart; the latest `now` is used.
  const claimTogether = makeBatcher<ClaimInput, Option.Option<JobRow>, SqlError>(
    64,
    (inputs) =>
      Effect.gen(function*() {
        const groups = new Map<string, Array<number>>()
        inputs.forEach((input, i) => {
          const key = JSON.stringify([input.queues ?? null, input.host, input.timeoutCap ?? null, input.perKey ?? null])
          groups.set(key, [...(groups.get(key) ?? []), i])
        })
        const out: Array<Option.Option<JobRow>> = inputs.map(() => Option.none())
        for (const members of groups.values()) {
          const first = inputs[members[0]!]!
          const now = Math.max(...members.map((i) => inputs[i]!.now))
          const claimed = yield* retryTransient(dialect, "claim", claimRows({ ...first, now }, members.length))
          claimed.forEach((row, k) => (out[members[k]!] = Option.some(row)))
        }
        return out
      })
  )

  const claim = (input: ClaimInput): Effect.Effect<ClaimResult, SqlError> => {
    const cap = input.hostCap ?? 0
    if (cap <= 0) {
      return Effect.map(
        inTransactionWith((inside) => (inside ? claimRow(input) : claimTogether(input))),
        Option.match({
          onNone: (): ClaimResult => ({ _tag: "NothingDue" }),
          onSome: (job): ClaimResult => ({ _tag: "Claimed", job })
        })
      )
    }
    const strategy = jobDialect.hostCap
    switch (strategy.kind) {
      case "countInClaim":
        // One statement counts and claims (SQLite: one writer at a time).
        return Effect.flatMap(
          retryTransient(
            dialect,
            "claim",
            jobs(strategy.statement(statements.context, statements.claimParts(input, 1, undefined, cap)))
          ),
          (r) =>
            r[0] !== undefined
              ? Effect.succeed<ClaimResult>({ _tag: "Claimed", job: r[0] })
              : Effect.map(countRunning(input.host), (running): ClaimResult =>
                running >= cap ? { _tag: "Capped", running } : { _tag: "NothingDue" })
        )
      case "lockHostRow":
        // The host row is locked while counting and claiming, so two claimers on one host
        // cannot both see room for one more.
        return retryTransient(
          dialect,
          "claim",
          transaction(Effect.gen(function*() {
            yield* changed(statements.ensureHost(input.host, input.now))
            yield* rows(strategy.lockHost(statements.context, input.host, input.now))
            const running = yield* countRunning(input.host)
            if (running >= cap) {
              return { _tag: "Capped", running } as ClaimResult
            }
            return Option.match(yield* claimRow(input), {
              onNone: (): ClaimResult => ({ _tag: "NothingDue" }),
              onSome: (job): ClaimResult => ({ _tag: "Claimed", job })
            })
          }))
        )
    }
  }

  return {
    // Retried where each claim statement or transaction runs: once per rolled-back statement.
    claim,
    claimMany: (input, limit) =>
      limit < 1 ? Effect.succeed([]) : retryTransient(dialect, "claim", claimRows(input, limit))
  }
}
