/**
 * SQLite: every statement that is SQLite's own. Placeholders are `?`; INTEGER holds epoch ms;
 * row counts are better-sqlite3's `changes`.
 */
import { type Dialect, type Syntax, sqlFor } from "./sql.ts"

const syntax: Syntax = {
  name: "sqlite",
  placeholder: () => "?",
  quote: (id) => `"${id}"`
}
const sql = sqlFor(syntax)

/** The SQLite dialect. */
export const sqlite: Dialect = {
  syntax,
  lease: {
    createTable: (t) =>
      sql`CREATE TABLE IF NOT EXISTS ${t} (
  lockname VARCHAR(100) NOT NULL PRIMARY KEY,
  lockowner VARCHAR(64) NOT NULL,
  lockhost VARCHAR(255),
  acquiredat INTEGER NOT NULL,
  expiresat INTEGER NOT NULL
)`,
    tableExists: (name) => sql`SELECT 1 AS present FROM sqlite_master WHERE type = 'table' AND name = ${name}`,
    insert: (t, row) =>
      sql`INSERT INTO ${t} (lockname, lockowner, lockhost, acquiredat, expiresat) VALUES (${row.name}, ${row.owner}, ${row.host}, ${row.acquiredAt}, ${row.expiresAt}) ON CONFLICT (lockname) DO NOTHING`
  },
  affectedRows: (raw) => Number((raw as { changes?: number }).changes ?? 0)
}
