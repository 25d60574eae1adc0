/** The leasehold CLI end to end, as a spawned process, on postgres. */
import { cliSuite } from "./support/cli.ts"

cliSuite("postgres")
