// Drives a sessionrt server with OpenCode's official SDK (@opencode-ai/sdk,
// its /v2 entry), unchanged: create, get, list, prompt, wait, messages,
// history, events (replay, then tail), permissions, questions and revert.
// Environment: SESSIONRT_URL, SESSIONRT_TOKEN, SESSIONRT_DIR (a Location),
// SDK_DIR (a directory with node_modules/@opencode-ai/sdk).
// Prints one JSON object with what it saw; the Go test asserts on it.
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"

const env = (k) => {
  const v = process.env[k]
  if (!v) throw new Error(`${k} is not set`)
  return v
}
const pkgDir = join(env("SDK_DIR"), "node_modules", "@opencode-ai", "sdk")
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"))
const { createOpencodeClient } = await import(pathToFileURL(join(pkgDir, pkg.exports["./v2"].import)).href)

const client = createOpencodeClient({
  baseUrl: env("SESSIONRT_URL"),
  headers: { Authorization: `Bearer ${env("SESSIONRT_TOKEN")}` },
  throwOnError: true,
})
const v2 = client.v2
const out = { sdkVersion: pkg.version }

out.health = (await v2.health.get()).data
const created = (await v2.session.create({ location: { directory: env("SESSIONRT_DIR") } })).data.data
out.created = created
const sessionID = created.id
out.got = (await v2.session.get({ sessionID })).data.data
out.listed = (await v2.session.list({ limit: 10 })).data.data.map((s) => s.id)

// Open the durable event stream before prompting: it replays, then tails.
const abort = new AbortController()
const { stream } = await v2.session.events({ sessionID, after: 0 }, { signal: abort.signal, sseMaxRetryAttempts: 1 })
const events = []
const reading = (async () => {
  for await (const ev of stream) {
    events.push({ type: ev.type, seq: ev.durable?.seq ?? 0, textID: ev.data?.textID ?? "" })
    if (ev.type === "session.next.idle") break
  }
})()

const admitted = (await v2.session.prompt({ sessionID, prompt: { text: "hello from the sdk" } })).data.data
out.admitted = admitted
await reading
abort.abort()
out.events = events

await v2.session.wait({ sessionID })
out.messages = (await v2.session.messages({ sessionID })).data.data.map((m) => ({
  type: m.type,
  text: m.type === "user" ? m.text : (m.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join(""),
}))
const history = (await v2.session.history({ sessionID })).data
out.historySeqs = history.data.map((e) => e.durable.seq)
out.permissions = (await v2.session.permission.list({ sessionID })).data.data
out.questions = (await v2.session.question.list({ sessionID })).data.data

// Revert as the SDK drives it: V2 stage, commit, clear; V1 diff, revert,
// unrevert (what OpenCode's TUI calls).
const staged = (await v2.session.revert.stage({ sessionID, messageID: admitted.id })).data.data
await v2.session.revert.commit({ sessionID })
const afterCommit = (await v2.session.messages({ sessionID })).data.data.length
await v2.session.revert.clear({ sessionID })
const afterClear = (await v2.session.messages({ sessionID })).data.data.length
const v1Diff = (await client.session.diff({ sessionID })).data
const v1Reverted = (await client.session.revert({ sessionID, messageID: admitted.id })).data
const v1Unreverted = (await client.session.unrevert({ sessionID })).data
out.revert = {
  staged: staged.messageID,
  afterCommit,
  afterClear,
  v1Diff: Array.isArray(v1Diff),
  v1Revert: v1Reverted.revert?.messageID ?? "",
  v1Unrevert: v1Unreverted.revert ?? null,
}
out.active = (await v2.session.active()).data.data

// The rest of the session surface, as the SDK calls it.
const first = (await v2.session.messages({ sessionID, limit: 1 })).data
out.firstPage = { count: first.data.length, next: first.cursor?.next ?? null }
out.message = (await v2.session.message({ sessionID, messageID: first.data[0].id })).data.data.id === first.data[0].id
out.context = (await v2.session.context({ sessionID })).data.data.length
await v2.session.switchModel({ sessionID, model: { id: "other-model", providerID: "scripted" } })
await v2.session.switchAgent({ sessionID, agent: "build" })
await v2.session.interrupt({ sessionID })
out.modelAfterSwitch = (await v2.session.get({ sessionID })).data.data.model
const live = new AbortController()
const sub = await v2.event.subscribe({ signal: live.signal, sseMaxRetryAttempts: 1 })
for await (const ev of sub.stream) {
  out.globalFirst = ev.type
  break
}
live.abort()

// Live: a second prompt as the global stream shows it, its text block
// opened (text.started) and its deltas and end naming the same textID.
const live2 = new AbortController()
const sub2 = await v2.event.subscribe({ signal: live2.signal, sseMaxRetryAttempts: 1 })
const it = sub2.stream[Symbol.asyncIterator]()
await it.next() // server.connected: subscribed before the prompt
await v2.session.prompt({ sessionID, prompt: { text: "again" } })
out.live = []
for (;;) {
  const { value: ev, done } = await it.next()
  if (done) break
  if (ev.data?.sessionID !== sessionID) continue
  out.live.push({ type: ev.type, seq: ev.durable?.seq ?? 0, textID: ev.data?.textID ?? "" })
  if (ev.type === "session.next.idle") break
}
live2.abort()

// The Location-scoped catalog, file, permission and question routes.
const location = { directory: env("SESSIONRT_DIR") }
out.location = (await v2.location.get({ location })).data
const names = (r) => r.data.data.map((x) => x.id ?? x.name ?? x.path)
out.catalog = {
  agents: names(await v2.agent.list({ location })),
  models: names(await v2.model.list({ location })),
  providers: names(await v2.provider.list({ location })),
  provider: (await v2.provider.get({ providerID: "scripted", location })).data.data.id,
  commands: names(await v2.command.list({ location })),
  skills: names(await v2.skill.list({ location })),
  references: names(await v2.reference.list({ location })),
}
out.fs = {
  list: names(await v2.fs.list({ location })),
  find: names(await v2.fs.find({ location, query: "hello" })),
  // The SDK's read names no file ("/api/fs/read/*"): give the path in the URL.
  read: await (await v2.fs.read({ location }, { url: "/api/fs/read/hello.txt", parseAs: "stream" })).response.text(),
}
out.requests = {
  permissions: (await v2.permission.request.list({ location })).data.data,
  saved: (await v2.permission.saved.list({})).data.data,
  questions: (await v2.question.request.list({ location })).data.data,
}

// The question tool as the SDK drives it: two sessions' models ask, the
// SDK lists the requests, answers one (the model continues with the
// answer) and rejects the other.
// (SESSIONRT_QUESTIONS=1: the server's model asks when told "ask me").
if (process.env.SESSIONRT_QUESTIONS) {
  const asked = []
  for (const text of ["ask me a question", "ask me another"]) {
    const s = (await v2.session.create({ location })).data.data
    await v2.session.prompt({ sessionID: s.id, prompt: { text } })
    await v2.session.wait({ sessionID: s.id })
    asked.push(s.id)
  }
  const pendingQuestions = (await v2.question.request.list({ location })).data.data
  const q1 = (await v2.session.question.list({ sessionID: asked[0] })).data.data[0]
  const q2 = (await v2.session.question.list({ sessionID: asked[1] })).data.data[0]
  await v2.session.question.reply({ sessionID: asked[0], requestID: q1.id, questionV2Reply: { answers: [["blue"]] } })
  await v2.session.question.reject({ sessionID: asked[1], requestID: q2.id })
  await v2.session.wait({ sessionID: asked[0] })
  const answered = (await v2.session.messages({ sessionID: asked[0] })).data.data.filter((m) => m.type === "assistant")
  out.question = {
    pending: pendingQuestions.length,
    header: q1.questions[0].header,
    answer: (answered[answered.length - 1]?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join(""),
    left: (await v2.question.request.list({ location })).data.data.length,
  }
}

// Errors come back typed: an unknown session is a 404 SessionNotFoundError.
try {
  await v2.session.get({ sessionID: "ses_missing" })
  out.missing = "no error"
} catch (e) {
  out.missing = { status: e?.cause?.status, tag: e?.cause?.body?._tag, message: e?.message }
}
console.log(JSON.stringify(out))
