/** The leasehold CLI end to end, as a spawned process, on sqlite. */
import { cliSuite } from "./support/cli.ts"

cliSuite("sqlite")
