/**
 * The library's errors as clear as the command line's, on every database and in both APIs: a
 * database that cannot be reached says where it tried (password masked) and the driver's reason
 * in the message; a layer given another database's URL refuses it with a typed error before
 * connecting; an enqueue on tables never migrated says to run the migrations.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlError } from "@effect/sql/SqlError"
import { Cause, Effect, Exit, Layer, Schema } from "effect"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseUrlMismatchError } from "../../src/core/errors.ts"
import { define, enqueue } from "../../src/runtime/Job.ts"
import * as Mysql from "../../src/mysql.ts"
import * as Postgres from "../../src/postgres.ts"
import { createLeasehold, defineJob } from "../../src/promise.ts"
import * as Sqlite from "../../src/sqlite.ts"
import { MYSQL_URL, PG_URL, uniquePrefix } from "../support/urls.ts"

const Ping = define({ name: "ping", schema: Schema.Struct({ n: Schema.Number }), perform: () => Effect.void })
const PromisePing = defineJob({ name: "ping", perform: async () => {} })
const dir = mkdtempSync(join(tmpdir(), "leasehold-errors-"))

/** The failure of building `layer` and enqueueing through it (the layer's own, or the enqueue's). */
const failureOf = (layer: Layer.Layer<any, unknown>) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Effect.provide(enqueue(Ping, { n: 1 }), layer))
    expect(Exit.isFailure(exit)).toBe(true)
    return Cause.squash((exit as Exit.Failure<unknown, unknown>).cause) as Error
  }) as Effect.Effect<Error>

/** Where nothing listens: port 1 on this machine. */
const unreachable = {
  postgres: "postgres://leasehold:s3cret@127.0.0.1:1/none",
  mysql: "mysql://leasehold:s3cret@127.0.0.1:1/none"
}

describe("a database that cannot be reached", () => {
  it.effect("postgres: SqlError naming the URL, password masked, and the driver's reason", () =>
    Effect.map(failureOf(Postgres.layer({ url: unreachable.postgres, jobs: [Ping] })), (error) => {
      expect(error).toBeInstanceOf(SqlError)
      expect(error.message).toBe(
        "cannot connect to postgres://leasehold:***@127.0.0.1:1/none: connect ECONNREFUSED 127.0.0.1:1"
      )
      expect(error.cause).toBeDefined()
    }))

  it.effect("mysql: SqlError naming the URL, password masked, and the driver's reason", () =>
    Effect.map(failureOf(Mysql.layer({ url: unreachable.mysql, jobs: [Ping] })), (error) => {
      expect(error).toBeInstanceOf(SqlError)
      expect(error.message).toBe(
        "cannot connect to mysql://leasehold:***@127.0.0.1:1/none: connect ECONNREFUSED 127.0.0.1:1"
      )
      expect(error.cause).toBeDefined()
    }))

  it.effect("sqlite: a file that cannot be opened is a SqlError naming it, not a defect", () =>
    Effect.map(failureOf(Sqlite.layer({ filename: join(dir, "missing", "x.db"), jobs: [Ping] })), (error) => {
      expect(error).toBeInstanceOf(SqlError)
      expect(error.message).toBe(
        `cannot open ${join(dir, "missing", "x.db")}: Cannot open database because the directory does not exist`
      )
    }))

  it.live("the Promise API rejects with the same message, and the driver's error as its cause", () =>
    Effect.promise(async () => {
      for (const url of [unreachable.postgres, unreachable.mysql]) {
        const error = await createLeasehold({ url, jobs: [PromisePing] }).then(() => undefined, (e: Error) => e)
        expect(error?.message).toMatch(
          /^cannot connect to (postgres|mysql):\/\/leasehold:\*\*\*@127\.0\.0\.1:1\/none: connect ECONNREFUSED/
        )
        expect(error?.message).not.toContain("s3cret")
        expect((error?.cause as Error | undefined)?.message).toBe("connect ECONNREFUSED 127.0.0.1:1")
      }
    }))
})

describe("a layer given another database's URL", () => {
  it.effect("refuses it with DatabaseUrlMismatchError before connecting", () =>
    Effect.gen(function*() {
      const pg = yield* failureOf(Postgres.layer({ url: "mysql://root:pw@127.0.0.1:3306/test", jobs: [Ping] }))
      expect(pg).toBeInstanceOf(DatabaseUrlMismatchError)
      expect(pg.message).toBe(
        "Postgres.layer needs a postgres:// or postgresql:// URL, but mysql://root:***@127.0.0.1:3306/test names MySQL/MariaDB: use Mysql.layer for it"
      )
      const mysql = yield* failureOf(Mysql.layer({ url: PG_URL, jobs: [Ping] }))
      expect(mysql).toMatchObject({ _tag: "DatabaseUrlMismatchError", expected: "MySQL/MariaDB", found: "PostgreSQL" })
      const file = join(dir, "typo.db")
      const bare = yield* failureOf(Postgres.layer({ url: file, jobs: [Ping] }))
      expect(bare).toMatchObject({ _tag: "DatabaseUrlMismatchError", found: "SQLite" })
      const sqlite = yield* failureOf(Sqlite.layer({ filename: "postgres://x@127.0.0.1/db", jobs: [Ping] }))
      expect(sqlite).toMatchObject({ _tag: "DatabaseUrlMismatchError", expected: "SQLite", found: "PostgreSQL" })
      expect(existsSync("postgres:")).toBe(false)
      expect(existsSync(file)).toBe(false)
    }))
})

describe("an enqueue on tables never migrated", () => {
  const targets = {
    postgres: (prefix: string) => Postgres.layer({ url: PG_URL, prefix, jobs: [Ping] }),
    mysql: (prefix: string) => Mysql.layer({ url: MYSQL_URL, prefix, jobs: [Ping] }),
    sqlite: (prefix: string) => Sqlite.layer({ filename: join(dir, "unmigrated.db"), prefix, jobs: [Ping] })
  }
  for (const [name, layer] of Object.entries(targets)) {
    it.effect(`${name}: says in its message which table is missing and to run the migrations`, () =>
      Effect.map(failureOf(layer(uniquePrefix("nomig"))), (error) => {
        expect(error).toBeInstanceOf(SqlError)
        expect(error.message).toMatch(/nomig\w*jobs/)
        expect(error.message).toContain(
          "run leasehold's migrations first (Migrator.make({ prefix }).run, or `leasehold migrate`)"
        )
      }))
  }

  it("cleans up", () => rmSync(dir, { recursive: true, force: true }))
})
