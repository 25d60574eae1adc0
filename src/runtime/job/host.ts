/** The name a worker goes by in the hosts table when the app gives it none. */
import { hostname } from "node:os"
import { MAX_LEASE_HOST_LENGTH } from "../../core/lease.ts"

/** The default host name: this machine's name and process id, fitted to the hosts table. */
export const defaultHost = (): string => `${hostname()}:${process.pid}`.slice(0, MAX_LEASE_HOST_LENGTH)
