/**
 * Where the test databases are, and table prefixes of a test's own. Apart from
 * ./databases.ts so that a test needing only these (the CLI suites, ./cli.ts) does not load
 * every driver on import (about 1.6 s per file).
 */
import { randomBytes } from "node:crypto"

/** PostgreSQL for the tests (LEASEHOLD_PG_URL). */
export const PG_URL = process.env.LEASEHOLD_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
/** MariaDB/MySQL for the tests (LEASEHOLD_MYSQL_URL). */
export const MYSQL_URL = process.env.LEASEHOLD_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test"

/** The three-node Galera cluster of scripts/galera/start, one URL naming every node (LEASEHOLD_GALERA_URL). */
export const GALERA_URL = process.env.LEASEHOLD_GALERA_URL ??
  "mysql://root@127.0.0.1:3307,127.0.0.1:3308,127.0.0.1:3309/test"

/** A table prefix no other test file or run uses. */
export const uniquePrefix = (label: string) => `lh${label}_${randomBytes(4).toString("hex")}_`
