/** The leasehold CLI end to end, as a spawned process, on mysql (MariaDB). */
import { cliSuite } from "./support/cli.ts"

cliSuite("mysql")
