// A scripted ACP client on the official TypeScript SDK (@agentclientprotocol/sdk's client app):
// it starts `$AGENTLS_BIN acp`, runs the steps of the scenario file named by its argument, and
// prints one JSON line per thing it saw (responses, errors, session updates, permission
// questions and its answers, file reads and writes, any call of a method it did not advertise).
// tests/acp/clients.rs runs it against the fake providers and asserts on those lines.
//
// Scenario: { sdk: "stable" (default) | "unstable",
//             capabilities: {fs: {readTextFile, writeTextFile}, terminal, session, subagents},
//             buffers: {"/abs/path": "unsaved text"},   // what fs/read_text_file answers
//             terminalEnv: {NAME: "value"},   // set in the terminals' environment (the editor's)
//             cancelOnWait: true,   // session/cancel once the agent waits for a terminal
//             permissions: ["allow_once" | "allow_always" | "reject_once" | "reject_always" | "cancel"
//                           | {kind, meta}],   // meta: the answer's _meta
//             steps: [{op: "initialize" | "new" | "load" | "resume" | "list" | "close" | "prompt" |
//                      "set_mode" | "set_config" | "edit_buffer" | "raw", ...}] }
// "$session" in a step's strings is the id of the session the last `new` created.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";

const scenario = JSON.parse(readFileSync(process.argv[2], "utf8"));
// `sdk: "unstable"`: the SDK's unstable client, which knows the updates the stable one does not
// yet validate (`subagent_update`).
const acp = await import(scenario.sdk === "unstable" ? "@agentclientprotocol/sdk/unstable" : "@agentclientprotocol/sdk");
const out = (line) => process.stdout.write(JSON.stringify(line) + "\n");
const caps = scenario.capabilities ?? { fs: { readTextFile: false, writeTextFile: false }, terminal: false };
const buffers = scenario.buffers ?? {};
const answers = [...(scenario.permissions ?? [])];
const terminals = new Map();
let terminalCount = 0;
let sessionId = null;
let connection = null;

const child = spawn(process.env.AGENTLS_BIN, ["acp"], { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const unadvertised = (method) => {
  out({ type: "unadvertised", method });
  throw new acp.RequestError(-32601, `${method} was not advertised`);
};

const app = acp
  .client({ name: "agentls-acp-test-driver" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    out({ type: "update", sessionId: params.sessionId, update: params.update });
  })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
    const entry = answers.shift() ?? "reject_once";
    const answer = typeof entry === "string" ? entry : entry.kind;
    const meta = typeof entry === "string" ? undefined : entry.meta;
    out({ type: "permission", sessionId: params.sessionId, toolCall: params.toolCall, options: params.options, meta: params._meta ?? null, answer });
    if (answer === "cancel") {
      await connection.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
      return { outcome: { outcome: "cancelled" } };
    }
    const option = params.options.find((o) => o.kind === answer);
    if (!option) {
      out({ type: "no-such-option", answer });
      return { outcome: { outcome: "cancelled" } };
    }
    return { outcome: { outcome: "selected", optionId: option.optionId }, ...(meta ? { _meta: meta } : {}) };
  })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    if (!caps.fs?.readTextFile) return unadvertised("fs/read_text_file");
    out({ type: "read", path: params.path });
    if (params.path in buffers) return { content: buffers[params.path] };
    return { content: readFileSync(params.path, "utf8") };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    if (!caps.fs?.writeTextFile) return unadvertised("fs/write_text_file");
    out({ type: "write", path: params.path, content: params.content });
    buffers[params.path] = params.content;
    return {};
  })
  // Terminals as a real client runs them: a process per terminal, its output kept (the end of it,
  // within outputByteLimit), in the editor's environment (this process's plus terminalEnv).
  .onRequest(acp.methods.client.terminal.create, ({ params }) => {
    if (!caps.terminal) return unadvertised("terminal/create");
    const id = `term-${++terminalCount}`;
    out({ type: "terminal", method: "create", terminalId: id, params });
    const env = { ...process.env, ...(scenario.terminalEnv ?? {}) };
    for (const { name, value } of params.env ?? []) env[name] = value;
    const proc = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? undefined, env, detached: true });
    const terminal = { proc, output: Buffer.alloc(0), truncated: false, limit: params.outputByteLimit ?? Infinity };
    terminal.exited = new Promise((resolve) =>
      proc.on("exit", (exitCode, signal) => {
        terminal.status = { exitCode, signal };
        resolve(terminal.status);
      }),
    );
    const keep = (chunk) => {
      terminal.output = Buffer.concat([terminal.output, chunk]);
      if (terminal.output.length > terminal.limit) {
        terminal.output = terminal.output.subarray(terminal.output.length - terminal.limit);
        terminal.truncated = true;
      }
    };
    proc.stdout.on("data", keep);
    proc.stderr.on("data", keep);
    terminals.set(id, terminal);
    return { terminalId: id };
  })
  .onRequest(acp.methods.client.terminal.output, ({ params }) => {
    if (!caps.terminal) return unadvertised("terminal/output");
    const terminal = terminals.get(params.terminalId);
    out({ type: "terminal", method: "output", terminalId: params.terminalId });
    return { output: terminal.output.toString("utf8"), truncated: terminal.truncated, exitStatus: terminal.status ?? null };
  })
  .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
    if (!caps.terminal) return unadvertised("terminal/wait_for_exit");
    out({ type: "terminal", method: "wait_for_exit", terminalId: params.terminalId });
    // The user cancels the turn while the command runs.
    if (scenario.cancelOnWait) await connection.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
    return await terminals.get(params.terminalId).exited;
  })
  .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
    if (!caps.terminal) return unadvertised("terminal/kill");
    out({ type: "terminal", method: "kill", terminalId: params.terminalId });
    const terminal = terminals.get(params.terminalId);
    if (!terminal.status) process.kill(-terminal.proc.pid, "SIGKILL");
    return {};
  })
  .onRequest(acp.methods.client.terminal.release, ({ params }) => {
    if (!caps.terminal) return unadvertised("terminal/release");
    out({ type: "terminal", method: "release", terminalId: params.terminalId });
    const terminal = terminals.get(params.terminalId);
    if (!terminal.status) process.kill(-terminal.proc.pid, "SIGKILL");
    terminals.delete(params.terminalId);
    return {};
  })
  .onRequest("*", ({ method }) => unadvertised(method));

const subst = (value) => JSON.parse(JSON.stringify(value).replaceAll("$session", sessionId ?? ""));

async function call(op, method, params) {
  try {
    const result = await connection.request(method, subst(params));
    out({ type: "response", op, result });
    return result;
  } catch (error) {
    out({ type: "error", op, error: { code: error.code, message: error.message, data: error.data } });
    return null;
  }
}

await app.connectWith(stream, async (ctx) => {
  connection = ctx;
  for (const step of scenario.steps) {
    switch (step.op) {
      case "initialize":
        await call("initialize", acp.methods.agent.initialize, {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: caps,
          clientInfo: { name: "agentls-acp-test-driver", version: "1" },
        });
        break;
      case "new": {
        const result = await call("new", acp.methods.agent.session.new, { cwd: step.cwd, mcpServers: step.mcpServers ?? [] });
        if (result) sessionId = result.sessionId;
        break;
      }
      case "load":
        await call("load", acp.methods.agent.session.load, { sessionId: step.sessionId, cwd: step.cwd, mcpServers: [] });
        break;
      case "resume":
        await call("resume", acp.methods.agent.session.resume, { sessionId: step.sessionId, cwd: step.cwd });
        break;
      case "list":
        await call("list", acp.methods.agent.session.list, step.cwd ? { cwd: step.cwd } : {});
        break;
      case "close":
        await call("close", acp.methods.agent.session.close, { sessionId: step.sessionId ?? "$session" });
        break;
      case "set_mode":
        await call("set_mode", acp.methods.agent.session.setMode, { sessionId: "$session", modeId: step.mode });
        break;
      case "set_config":
        await call("set_config", acp.methods.agent.session.setConfigOption, {
          sessionId: "$session",
          configId: step.configId,
          value: step.value,
        });
        break;
      case "prompt":
        await call("prompt", acp.methods.agent.session.prompt, { sessionId: step.sessionId ?? "$session", prompt: step.prompt });
        break;
      case "edit_buffer":
        // The user edits the editor's buffer between prompts.
        buffers[step.path] = step.content;
        break;
      default:
        throw new Error(`unknown step ${step.op}`);
    }
  }
});
out({ type: "done" });
child.stdin.end();
await new Promise((resolve) => child.on("exit", (code) => { out({ type: "exit", code }); resolve(); }));
