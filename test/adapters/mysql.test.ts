/** Every conformance suite, run on the mysql adapter. */
import { leaseLockConformance } from "../conformance/leaseLock.ts"

leaseLockConformance("mysql")
