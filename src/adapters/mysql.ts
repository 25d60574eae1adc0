/**
 * MySQL / MariaDB: every statement that is MySQL's own. Placeholders are `?`; row counts are
 * `affectedRows` (mysql2 counts matched rows). Tables use utf8mb4 with a binary collation so
 * names compare exactly as written (the server default is case-insensitive).
 */
import { type Dialect, type Syntax, sqlFor } from "./sql.ts"

const syntax: Syntax = {
  name: "mysql",
  placeholder: () => "?",
  quote: (id) => `\`${id}\``
}
const sql = sqlFor(syntax)

/** The MySQL / MariaDB dialect. */
export const mysql: Dialect = {
  syntax,
  lease: {
    createTable: (t) =>
      sql`CREATE TABLE IF NOT EXISTS ${t} (
  lockname VARCHAR(100) NOT NULL PRIMARY KEY,
  lockowner VARCHAR(64) NOT NULL,
  lockhost VARCHAR(255),
  acquiredat BIGINT NOT NULL,
  expiresat BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
    tableExists: (name) =>
      sql`SELECT 1 AS present FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ${name}`,
    // A plain INSERT: a duplicate key fails the statement but, unlike PostgreSQL, does not
    // abort an enclosing transaction; the caller then reads the row and tries a take-over.
    insert: (t, row) =>
      sql`INSERT INTO ${t} (lockname, lockowner, lockhost, acquiredat, expiresat) VALUES (${row.name}, ${row.owner}, ${row.host}, ${row.acquiredAt}, ${row.expiresAt})`
  },
  affectedRows: (raw) => Number((raw as { affectedRows?: number }).affectedRows ?? 0)
}
