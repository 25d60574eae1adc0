/** Every conformance suite, run on the memory adapter. */
import { leaseLockConformance } from "../conformance/leaseLock.ts"

leaseLockConformance("memory")
