/** Every conformance suite, run on the postgres adapter. */
import { leaseLockConformance } from "../conformance/leaseLock.ts"

leaseLockConformance("postgres")
