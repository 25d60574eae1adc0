/**
 * The statement builder every dialect writes its SQL with (src/adapters/sql/statement.ts): a
 * statement nested in another is rendered by the outer one, its placeholders renumbered, and
 * still reads as itself when run alone.
 */
import { describe, expect, it } from "@effect/vitest"
import { mysql } from "../../src/adapters/mysql/dialect.ts"
import { postgres } from "../../src/adapters/postgres/dialect.ts"
import { joined, RawSql, sqlFor, SqlList } from "../../src/adapters/sql/statement.ts"

describe("sqlFor", () => {
  it("renumbers a nested statement's placeholders in the outer one, three levels deep", () => {
    const sql = sqlFor(postgres.syntax)
    const inner = sql`id IN (${new SqlList(["a", "b"])}) AND n > ${2}`
    const middle = sql`SELECT id FROM ${new RawSql("t")} WHERE ${inner} AND m = ${3}`
    const outer = sql`WITH x AS (${middle}) SELECT ${1} AS k, (${joined([inner, inner], ") OR (")}) FROM x`
    expect(outer.sql).toBe(
      "WITH x AS (SELECT id FROM t WHERE id IN ($1, $2) AND n > $3 AND m = $4) SELECT $5 AS k, " +
        "(id IN ($6, $7) AND n > $8) OR (id IN ($9, $10) AND n > $11) FROM x"
    )
    expect(outer.params).toEqual(["a", "b", 2, 3, 1, "a", "b", 2, "a", "b", 2])
    // Each part, read on its own after the outer one, is numbered from 1.
    expect(middle.sql).toBe("SELECT id FROM t WHERE id IN ($1, $2) AND n > $3 AND m = $4")
    expect(middle.params).toEqual(["a", "b", 2, 3])
    expect(inner.sql).toBe("id IN ($1, $2) AND n > $3")
    expect(inner.params).toEqual(["a", "b", 2])
  })

  it("reads the same text and parameters however often, params first or text first", () => {
    const sql = sqlFor(mysql.syntax)
    const st = sql`UPDATE t SET a = ${"x"} WHERE b IN (${new SqlList([1, 2])})`
    expect(st.params).toEqual(["x", 1, 2])
    expect(st.sql).toBe("UPDATE t SET a = ? WHERE b IN (?, ?)")
    expect(st.sql).toBe("UPDATE t SET a = ? WHERE b IN (?, ?)")
    expect(st.params).toEqual(["x", 1, 2])
  })
})
