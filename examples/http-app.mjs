// leasehold from an app that does not use Effect: a node:http server whose POST /signup enqueues
// a welcome email, and a worker in the same process that sends it. Plain JavaScript, Promise API.
//
//   node examples/http-app.mjs            (SQLite file ./http-app.db, port 3000)
//   LEASEHOLD_DATABASE_URL=postgres://… PORT=8080 node examples/http-app.mjs
//
//   curl -X POST localhost:3000/signup -d '{"email":"ada@example.com"}'
//   curl localhost:3000/jobs/<id>
//
// SIGTERM or SIGINT: the server stops accepting, the worker finishes the job it is running,
// the connections close and the process exits 0. test/e2e/http-app.test.ts runs exactly this.
import { createServer } from "node:http"
import { createLeasehold, defineJob } from "leasehold/promise"

const SendWelcome = defineJob({
  name: "SendWelcome",
  maxRetries: 5,
  perform: async ({ email }, job) => {
    // A real app would call its mail provider here, passing job.signal to fetch.
    console.log(`welcome email to ${email} (job ${job.jobId}, attempt ${job.attempt})`)
  }
})

const lh = await createLeasehold({
  url: process.env.LEASEHOLD_DATABASE_URL || "http-app.db",
  prefix: process.env.LEASEHOLD_PREFIX || undefined,
  jobs: [SendWelcome]
})
await lh.migrate()
const worker = await lh.startWorker({ concurrency: 4, pollInterval: "200 millis" })

const reply = (res, status, body) => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify(body))
}

const server = createServer(async (req, res) => {
  try {
    if (req.method === "POST" && req.url === "/signup") {
      let body = ""
      for await (const chunk of req) body += chunk
      const email = JSON.parse(body || "{}").email
      if (typeof email !== "string" || !email.includes("@")) return reply(res, 400, { error: "email required" })
      const { id } = await lh.enqueue(SendWelcome, { email })
      return reply(res, 202, { id })
    }
    const match = req.method === "GET" && /^\/jobs\/([\w-]+)$/.exec(req.url ?? "")
    if (match) {
      const job = await lh.getJob(match[1])
      return job === undefined ? reply(res, 404, { error: "no such job" }) : reply(res, 200, { id: job.id, status: job.status })
    }
    reply(res, 404, { error: "not found" })
  } catch (error) {
    // leasehold's errors are Error subclasses named after their tag (PayloadError, SqlError, …).
    reply(res, 500, { error: error.name, message: error.message })
  }
})

server.listen(Number(process.env.PORT ?? 3000), "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`)
})

const shutdown = async (signal) => {
  console.log(`${signal}: stopping`)
  // Requests already in flight finish (they use the client) before the worker and client stop.
  await new Promise((resolve) => server.close(resolve))
  await worker.stop()
  await lh.close()
  console.log("stopped")
}
process.once("SIGTERM", () => void shutdown("SIGTERM"))
process.once("SIGINT", () => void shutdown("SIGINT"))
