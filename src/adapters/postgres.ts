/**
 * PostgreSQL: every statement that is PostgreSQL's own. Placeholders are `$1…`; BIGINT comes
 * back as a string; row counts are `rowCount`.
 */
import { type Dialect, type Syntax, sqlFor } from "./sql.ts"

const syntax: Syntax = {
  name: "pg",
  placeholder: (n) => `$${n}`,
  quote: (id) => `"${id}"`
}
const sql = sqlFor(syntax)

/** The PostgreSQL dialect. */
export const postgres: Dialect = {
  syntax,
  lease: {
    createTable: (t) =>
      sql`CREATE TABLE IF NOT EXISTS ${t} (
  lockname VARCHAR(100) NOT NULL PRIMARY KEY,
  lockowner VARCHAR(64) NOT NULL,
  lockhost VARCHAR(255),
  acquiredat BIGINT NOT NULL,
  expiresat BIGINT NOT NULL
)`,
    tableExists: (name) =>
      sql`SELECT 1 AS present FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ${name}`,
    // ON CONFLICT DO NOTHING: a name inserted meanwhile by someone else is no error, so an
    // enclosing transaction is never aborted by a duplicate key.
    insert: (t, row) =>
      sql`INSERT INTO ${t} (lockname, lockowner, lockhost, acquiredat, expiresat) VALUES (${row.name}, ${row.owner}, ${row.host}, ${row.acquiredAt}, ${row.expiresAt}) ON CONFLICT (lockname) DO NOTHING`
  },
  affectedRows: (raw) => Number((raw as { rowCount?: number | null }).rowCount ?? 0)
}
