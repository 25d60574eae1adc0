/**
 * Typed errors shared by every room. They are plain tagged data (no services), so core may
 * define them and adapters and runtime may raise them.
 */
import { Data } from "effect"

/** A lease name, owner or host that the lock table cannot hold; nothing was written. */
export class LeaseInputError extends Data.TaggedError("LeaseInputError")<{
  readonly field: "name" | "owner" | "host" | "expiresAt"
  readonly reason: string
}> {
  override get message() {
    return `invalid lease ${this.field}: ${this.reason}`
  }
}

/**
 * A lease table was needed but does not exist, and it cannot be created here because the
 * caller is inside a transaction (DDL would commit it on MySQL). Run `createTable` outside a
 * transaction, or create the table with your migrations.
 */
export class LeaseTableInTransactionError extends Data.TaggedError("LeaseTableInTransactionError")<{
  readonly table: string
  readonly createTable: string
}> {
  override get message() {
    return `lease table ${this.table} does not exist and cannot be created inside a transaction; ` +
      `create it first: ${this.createTable}`
  }
}
