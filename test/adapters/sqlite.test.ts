/** Every conformance suite, run on the sqlite adapter. */
import { leaseLockConformance } from "../conformance/leaseLock.ts"

leaseLockConformance("sqlite")
