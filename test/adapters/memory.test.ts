/** Every conformance suite (test/conformance/index.ts), run on the memory adapter. */
import { runConformance } from "../conformance/index.ts"

runConformance("memory")
