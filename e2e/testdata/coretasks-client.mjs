// A client of MCP 2025-11-25's core tasks, with the TypeScript SDK
// (client.experimental.tasks), for e2e/coretasks_e2e_test.go.
//
//   node coretasks-client.mjs SDK_DIR URL KEY TOOL ARGS_JSON
//   node coretasks-client.mjs SDK_DIR stdio:ARGV_JSON - TOOL ARGS_JSON
//
// SDK_DIR is the @modelcontextprotocol/sdk package folder, URL the host's
// /mcp, KEY its API key; or stdio: and the argv of an `opentool-host mcp`
// to start and speak to over stdio. It connects (initialize,
// 2025-11-25), calls TOOL with ARGS_JSON through callToolStream asking
// for a task (options.task), waits (at most NOTES_WAIT_MS, default 10 s)
// for the notifications/tasks/status that says the task ended, lists the
// tasks,
// and prints one JSON line: {"protocolVersion", "tasksCapability",
// "messages": [{type, status, taskId}...], "result", "listed":
// [taskId...], "notes": [{status, taskId, statusMessage}...] (each
// notifications/tasks/status, checked against the SDK's schema)}. Any
// failure exits 1 with the error on stderr.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [sdkDir, url, key, tool, argsJSON] = process.argv.slice(2);
const esm = (p) => import(pathToFileURL(join(sdkDir, "dist", "esm", p)).href);
const { Client } = await esm("client/index.js");
const { StreamableHTTPClientTransport } = await esm("client/streamableHttp.js");
const { StdioClientTransport } = await esm("client/stdio.js");
const { TaskStatusNotificationSchema } = await esm("types.js");

const client = new Client({ name: "coretasks-e2e", version: "1.0.0" }, { capabilities: {} });
const notes = [];
let ended = () => {};
const endNoted = new Promise((resolve) => (ended = resolve));
client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
  notes.push({ status: n.params.status, taskId: n.params.taskId, statusMessage: n.params.statusMessage ?? "" });
  if (["completed", "failed", "cancelled"].includes(n.params.status)) ended();
});
let transport;
if (url.startsWith("stdio:")) {
  const [command, ...args] = JSON.parse(url.slice("stdio:".length));
  transport = new StdioClientTransport({ command, args, stderr: "inherit" });
} else {
  transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
}
await client.connect(transport);

const out = {
  protocolVersion: transport.protocolVersion ?? null,
  tasksCapability: client.getServerCapabilities()?.tasks ?? null,
  messages: [],
  result: null,
  listed: [],
  notes: [],
};
const stream = client.experimental.tasks.callToolStream(
  { name: tool, arguments: JSON.parse(argsJSON) },
  undefined,
  { task: { ttl: 60000 } },
);
for await (const m of stream) {
  switch (m.type) {
    case "taskCreated":
    case "taskStatus":
      out.messages.push({ type: m.type, status: m.task.status, taskId: m.task.taskId });
      break;
    case "result":
      out.messages.push({ type: m.type });
      out.result = m.result;
      break;
    case "error":
      console.error("callToolStream error:", m.error);
      process.exit(1);
  }
}
const waitMs = Number(process.env.NOTES_WAIT_MS ?? "10000");
await Promise.race([endNoted, new Promise((resolve) => setTimeout(resolve, waitMs))]);
out.notes = notes;
const listed = await client.experimental.tasks.listTasks();
out.listed = listed.tasks.map((t) => t.taskId);
console.log(JSON.stringify(out));
await client.close();
