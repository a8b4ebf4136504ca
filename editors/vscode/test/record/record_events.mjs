// Records what the real agentls server sends a plugin client during one scripted task, for the
// unit tests (test/fixtures/recorded_session.json). It plays a plugin client over stdio with
// vscode-jsonrpc against the scripted fake provider (tests/editors/fake_provider_cli.py):
// read a file with unsaved text, propose a two-hunk change (one hunk accepted, one rejected with
// a reason), run a shell command after a permission question, answer.
//
//   node test/record/record_events.mjs /path/to/agentls > test/fixtures/recorded_session.json

import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';

const binary = process.argv[2];
if (!binary) throw new Error('usage: record_events.mjs AGENTLS_BINARY');
const repo = resolve(new URL('../../../..', import.meta.url).pathname);
const tmp = mkdtempSync(join(tmpdir(), 'agentls-record-'));
const ws = join(tmp, 'ws');
mkdirSync(ws);
const disk = 'one\ntwo\nthree\nfour\nfive\nsix\nseven\n';
writeFileSync(join(ws, 'notes.txt'), disk);
const unsaved = 'one\ntwo\nthree\nfour\nfive\nsix\nseven\nunsaved line\n';
const proposed = 'one\nTWO\nthree\nfour\nfive\nsix\nSEVEN\nunsaved line\n';

const turns = [
  [{ text: "I'll read the file first." }, { tool: 'read_file', id: 'toolu_r1', input: { file_path: 'notes.txt' } }],
  [{ tool: 'write_file', id: 'toolu_w1', input: { file_path: 'notes.txt', content: proposed } }],
  [{ text: 'Now a quick check.' }, { tool: 'shell', id: 'toolu_s1', input: { command: 'echo checked' } }],
  [{ text: 'Done: `two` is now **TWO**; you kept `seven`.\n\n```rust\nfn main() {}\n```\n' }],
];
writeFileSync(join(tmp, 'turns.json'), JSON.stringify(turns));
const provider = spawn('python3', [join(repo, 'tests/editors/fake_provider_cli.py'), '--script', join(tmp, 'turns.json'),
  '--requests', join(tmp, 'requests.jsonl'), '--port-file', join(tmp, 'port'), '--stdin-lifetime'], { stdio: ['pipe', 'inherit', 'inherit'] });
const deadline = Date.now() + 20_000;
while (!existsSync(join(tmp, 'port')) || !readFileSync(join(tmp, 'port'), 'utf8')) {
  if (Date.now() > deadline) throw new Error('the fake provider did not start');
  await new Promise((r) => setTimeout(r, 50));
}
const port = readFileSync(join(tmp, 'port'), 'utf8').trim();
mkdirSync(join(tmp, 'home'));
const server = spawn(binary, ['serve', '--stdio'], {
  env: {
    PATH: process.env.PATH, HOME: join(tmp, 'home'), XDG_CONFIG_HOME: join(tmp, 'home', '.config'),
    ANTHROPIC_API_KEY: 'sk-ant-fake-key', ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`,
    AGENTLS_CONFIG: join(tmp, 'no-config.toml'), AGENTLS_DATA_DIR: join(tmp, 'data'), AGENTLS_CLIENT_TIMEOUT_MS: '5000',
  },
  stdio: ['pipe', 'pipe', 'inherit'],
});
const conn = createMessageConnection(new StreamMessageReader(server.stdout), new StreamMessageWriter(server.stdin));
const recorded = [];
const uri = pathToFileURL(join(ws, 'notes.txt')).toString();
let text = unsaved;
let version = 1;
let done;
const finished = new Promise((r) => (done = r));

const anonymise = (v) => JSON.parse(JSON.stringify(v).replaceAll(pathToFileURL(ws).toString(), 'file:///ws').replaceAll(ws, '/ws'));

conn.onNotification('agentls/event', (e) => {
  recorded.push({ method: 'agentls/event', params: anonymise(e) });
  if (e.kind === 'processing_end') done();
});
conn.onNotification('agentls/review', (r) => {
  recorded.push({ method: 'agentls/review', params: anonymise(r) });
  void conn.sendRequest('workspace/executeCommand', { command: 'agentls.resolveReview', arguments: [{ reviewId: r.reviewId, decision: 'accept', files: [{ uri: r.files[0].uri, acceptedHunks: [0] }], feedback: 'notes.txt, hunk 1: keep seven lowercase' }] });
});
conn.onNotification('agentls/permission', (p) => {
  recorded.push({ method: 'agentls/permission', params: anonymise(p) });
  void conn.sendRequest('workspace/executeCommand', { command: 'agentls.resolvePermission', arguments: [{ requestId: p.requestId, decision: 'allow_once' }] });
});
conn.onRequest('agentls/saveDocuments', (p) => {
  recorded.push({ method: 'agentls/saveDocuments', params: anonymise(p) });
  writeFileSync(join(ws, 'notes.txt'), text);
  return {};
});
conn.onRequest('workspace/configuration', (p) => p.items.map(() => null));
conn.onRequest('client/registerCapability', () => null);
conn.onRequest('window/workDoneProgress/create', () => null);
conn.onNotification('window/logMessage', () => undefined);
conn.onRequest('workspace/applyEdit', (p) => {
  recorded.push({ method: 'workspace/applyEdit', params: anonymise(p) });
  for (const change of p.edit.documentChanges ?? []) {
    if (change.textDocument?.uri !== uri) continue;
    const lines = text.split('\n');
    const offset = (pos) => lines.slice(0, pos.line).reduce((n, l) => n + l.length + 1, 0) + pos.character;
    const edits = [...change.edits].sort((a, b) => offset(b.range.start) - offset(a.range.start));
    for (const e of edits) text = text.slice(0, offset(e.range.start)) + e.newText + text.slice(offset(e.range.end));
  }
  version++;
  conn.sendNotification('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [{ text }] });
  return { applied: true };
});
conn.listen();

await conn.sendRequest('initialize', {
  processId: process.pid,
  rootUri: pathToFileURL(ws).toString(),
  workspaceFolders: [{ uri: pathToFileURL(ws).toString(), name: 'ws' }],
  capabilities: {
    experimental: { agentls: { protocolVersion: 1 } },
    workspace: { applyEdit: true, configuration: true, workspaceEdit: { documentChanges: true, resourceOperations: ['create', 'rename', 'delete'] } },
    window: { workDoneProgress: true },
  },
  initializationOptions: { model: 'claude-test', approval: 'review', shell: { permission: 'ask' } },
});
conn.sendNotification('initialized', {});
conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'plaintext', version, text } });
const { sessionId } = await conn.sendRequest('workspace/executeCommand', { command: 'agentls.newSession', arguments: [{}] });
await conn.sendRequest('workspace/executeCommand', { command: 'agentls.prompt', arguments: [{ sessionId, text: 'Capitalise two and seven in notes.txt, then check.' }] });
const timer = setTimeout(() => {
  process.stderr.write('timed out waiting for processing_end\n');
  process.exit(1);
}, 30_000);
await finished;
clearTimeout(timer);
await conn.sendRequest('shutdown');
conn.sendNotification('exit');
provider.stdin.end();
const requests = readFileSync(join(tmp, 'requests.jsonl'), 'utf8').trim().split('\n').length;
process.stdout.write(`${JSON.stringify({ finalText: text, modelRequests: requests, messages: recorded }, null, 1)}\n`);
process.exit(0);
