// The TypeScript mirror of the protocol (src/lsp_ext.ts) against the same examples the server's
// types are checked against: every ```json block of docs/protocol.md is a payload the mirror
// knows and fits its type field for field (names and JSON types, no field missing, none unknown),
// and so does every agentls message the real server sent in test/fixtures/recorded_session.json.
// The schemas (protocol_schema.ts) are the types, checked by tsc; this file checks the JSON.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  DiagnosticsRequest,
  EventNotification,
  PermissionNotification,
  ReviewNotification,
  SaveDocumentsRequest,
  ServerCommand,
  TrustRequiredNotification,
  UserTypingNotification,
} from '../src/lsp_ext';
import {
  agentEvent,
  commandSchemas,
  diagnosticsParams,
  diagnosticsResult,
  permissionParams,
  reviewParams,
  saveDocumentsParams,
  serverLayer,
  serverLayerKeys,
  trustRequiredParams,
  userTypingParams,
  type Checker,
} from './protocol_schema';

// The compiled tests run from out/test/; the document and the recording are files of the repository.
const extensionDir = join(__dirname, '../..');
const protocolDoc = join(extensionDir, '../../docs/protocol.md');

type Json = Record<string, unknown>;
type CommandName = keyof typeof ServerCommand;

/** A ```json block: its first line in the document, and its values (a request, then `→ result`s). */
interface Example {
  line: number;
  values: unknown[];
  /** Why it is not JSON. */
  error?: string;
}

/** The ```json blocks of a markdown document; a block is split at lines starting with `→`. */
function jsonBlocks(markdown: string): Example[] {
  const lines = markdown.split('\n');
  const out: Example[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*```json\s*$/.test(lines[i])) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end])) end++;
    const parts: string[][] = [[]];
    for (const l of lines.slice(start, end)) {
      if (l.trimStart().startsWith('→')) parts.push([l.trimStart().slice(1)]);
      else parts[parts.length - 1].push(l);
    }
    try {
      out.push({ line: start, values: parts.map((p) => JSON.parse(p.join('\n')) as unknown) });
    } catch (e) {
      out.push({ line: start, values: [], error: e instanceof Error ? e.message : String(e) });
    }
    i = end;
  }
  return out;
}

const commandByName = new Map(Object.entries(ServerCommand).map(([key, c]) => [c.command, key as CommandName]));

/** A kind of example: how it is recognised, and what it must fit. */
interface Kind {
  what: string;
  is(v: Json): boolean;
  /** The problems of the example (its value, then the results that follow `→`). */
  check(v: Json, results: unknown[]): string[];
}

const fits = (schema: Checker) => (v: Json, results: unknown[]) =>
  results.length ? ['a result (→) follows a payload that is not a command'] : schema.check(v, '$');
const has = (v: Json, ...keys: string[]) => keys.every((k) => k in v);

const kinds: Kind[] = [
  // standard LSP, not the extension's to type
  {
    what: 'a JSON-RPC message (standard)',
    is: (v) => 'jsonrpc' in v && !String(v.method ?? '').startsWith('agentls/'),
    check: () => [],
  },
  {
    what: 'an agentls/userTyping notification (UserTypingParams)',
    is: (v) => 'jsonrpc' in v && v.method === UserTypingNotification.method,
    check: (v, results) => (results.length ? ['a result (→) follows a notification'] : userTypingParams.check(v.params, '$.params')),
  },
  { what: 'client/registerCapability params (standard)', is: (v) => 'registrations' in v, check: () => [] },
  { what: 'workspace/applyEdit params (standard)', is: (v) => has(v, 'label', 'edit'), check: () => [] },
  {
    what: 'the InitializeResult (its commands are ServerCommand)',
    is: (v) => 'capabilities' in v,
    check: (v) => {
      const caps = v.capabilities as { executeCommandProvider?: { commands?: unknown } };
      const commands = caps.executeCommandProvider?.commands;
      if (!Array.isArray(commands)) return ['$.capabilities.executeCommandProvider.commands: expected the list of commands'];
      return commands.filter((c) => !commandByName.has(c as string)).map((c) => `$.capabilities.executeCommandProvider.commands: ${String(c)} is not in ServerCommand`);
    },
  },
  {
    what: 'workspace/executeCommand of an agentls command (ServerCommand, its params and result)',
    is: (v) => typeof v.command === 'string' && v.command.startsWith('agentls.') && 'arguments' in v,
    check: (v, results) => {
      const name = commandByName.get(v.command as string);
      if (!name) return [`$.command: ${String(v.command)} is not in ServerCommand`];
      const args = v.arguments;
      if (!Array.isArray(args) || args.length > 1) return ['$.arguments: expected one object argument'];
      const { params, result } = commandSchemas[name] as { params: Checker; result: Checker };
      return [...params.check(args[0] ?? {}, '$.arguments[0]'), ...results.flatMap((r, i) => result.check(r, `(result ${i + 1})`))];
    },
  },
  { what: 'agentls/event params (AgentEvent)', is: (v) => has(v, 'kind', 'timestamp', 'data'), check: fits(agentEvent) },
  { what: 'agentls/review params (ReviewParams)', is: (v) => has(v, 'reviewId', 'sessionId', 'files'), check: fits(reviewParams) },
  { what: 'agentls/permission params (PermissionParams)', is: (v) => has(v, 'requestId', 'options'), check: fits(permissionParams) },
  { what: 'agentls/trustRequired params (TrustRequiredParams)', is: (v) => 'ignored' in v, check: fits(trustRequiredParams) },
  { what: 'agentls/saveDocuments params (SaveDocumentsParams)', is: (v) => 'uris' in v, check: fits(saveDocumentsParams) },
  { what: 'agentls/diagnostics params (DiagnosticsParams)', is: (v) => Object.keys(v).join() === 'uri', check: fits(diagnosticsParams) },
  { what: 'the agentls/diagnostics result (DiagnosticsResult)', is: (v) => 'files' in v && !('reviewId' in v), check: fits(diagnosticsResult) },
  { what: 'the argument of agentls.trustFolder (bare)', is: (v) => Object.keys(v).join() === 'rootUri', check: fits(commandSchemas.trustFolder.params) },
  { what: 'the result of agentls.listSessions (bare)', is: (v) => 'sessions' in v, check: fits(commandSchemas.listSessions.result) },
  { what: 'the result of agentls.history (bare)', is: (v) => has(v, 'sessionId', 'entries'), check: fits(commandSchemas.history.result) },
  {
    what: 'initializationOptions, the configuration layer (config.ts ServerLayer)',
    is: (v) => Object.keys(v).every((k) => /^[a-z_]+$/.test(k)) && Object.keys(v).some((k) => serverLayerKeys.includes(k)),
    check: fits(serverLayer),
  },
];

/** The problems of one example: it must be JSON, of exactly one known kind, and fit it. */
function problemsOf(example: Example): { what?: string; problems: string[] } {
  if (example.error) return { problems: [`not JSON: ${example.error}`] };
  const [value, ...results] = example.values;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { problems: ['expected a JSON object'] };
  const v = value as Json;
  const matching = kinds.filter((k) => k.is(v));
  if (matching.length !== 1) {
    return {
      problems: [
        matching.length
          ? `it could be any of: ${matching.map((k) => k.what).join('; ')}`
          : `a payload the TypeScript mirror does not know (keys ${Object.keys(v).join(', ')}): give it a type in src/lsp_ext.ts, a schema in test/protocol_schema.ts and a kind here`,
      ],
    };
  }
  return { what: matching[0].what, problems: matching[0].check(v, results) };
}

const examples = jsonBlocks(readFileSync(protocolDoc, 'utf8'));

test('docs/protocol.md has JSON examples', () => {
  assert.ok(examples.length >= 10, `found ${examples.length} \`\`\`json blocks`);
});

for (const example of examples) {
  test(`docs/protocol.md line ${example.line}: fits the TypeScript type`, (t) => {
    const { what, problems } = problemsOf(example);
    if (what) t.diagnostic(what);
    assert.deepEqual(problems, [], `docs/protocol.md line ${example.line}${what ? ` (${what})` : ''}:\n${problems.join('\n')}`);
  });
}

test('every command docs/protocol.md names is in ServerCommand, and every one of ServerCommand is documented', () => {
  const doc = readFileSync(protocolDoc, 'utf8');
  // `agentls.name`, not part of a longer name (`experimental.agentls.trust`, `.agentls.toml`, `agentls/agentls.log`)
  const named = new Set([...doc.matchAll(/(?<![\w./])agentls\.[a-z][A-Za-z]*\b(?![.\w])/g)].map((m) => m[0]));
  assert.deepEqual([...named].filter((c) => !commandByName.has(c)), [], 'documented commands missing from ServerCommand');
  assert.deepEqual([...commandByName.keys()].filter((c) => !named.has(c)), [], 'ServerCommand entries docs/protocol.md does not name');
});

test('the commands without a documented example are listed (not a failure)', (t) => {
  const exemplified = new Set(
    examples.flatMap((e) => {
      const v = e.values[0] as Json | undefined;
      return v && typeof v.command === 'string' ? [v.command] : [];
    }),
  );
  const missing = [...commandByName.keys()].filter((c) => !exemplified.has(c));
  t.diagnostic(missing.length ? `commands without a workspace/executeCommand example: ${missing.join(', ')}` : 'every command has an example');
});

test('the messages the real server sent (recorded_session.json) fit the types', () => {
  const recorded = JSON.parse(readFileSync(join(extensionDir, 'test/fixtures/recorded_session.json'), 'utf8')) as { messages: { method: string; params: unknown }[] };
  const schemas = new Map<string, Checker>([
    [EventNotification.method, agentEvent],
    [ReviewNotification.method, reviewParams],
    [PermissionNotification.method, permissionParams],
    [TrustRequiredNotification.method, trustRequiredParams],
    [SaveDocumentsRequest.method, saveDocumentsParams],
    [DiagnosticsRequest.method, diagnosticsParams],
  ]);
  const methods = new Set<string>();
  const problems = recorded.messages.flatMap((m, i) => {
    methods.add(m.method);
    const schema = schemas.get(m.method);
    if (schema) return schema.check(m.params, `messages[${i}] (${m.method})`);
    return m.method.startsWith('agentls/') ? [`messages[${i}]: ${m.method} has no type in src/lsp_ext.ts`] : [];
  });
  assert.deepEqual(problems, []);
  // the recording covers the events, a review, a permission question and a save
  for (const m of [EventNotification, ReviewNotification, PermissionNotification, SaveDocumentsRequest]) assert.ok(methods.has(m.method), m.method);
});

// The check itself: it fails when the document and the type disagree, either way round.

const reviewExample = (): Json => {
  const found = examples.find((e) => (e.values[0] as Json | undefined)?.reviewId !== undefined && !('command' in (e.values[0] as Json)));
  assert.ok(found, 'docs/protocol.md has an agentls/review example');
  return structuredClone(found.values[0]) as Json;
};

test('a renamed field does not fit: missing under its old name, unknown under the new one', () => {
  const v = reviewExample();
  v.callID = v.callId;
  delete v.callId;
  assert.deepEqual(reviewParams.check(v, '$'), ['$.callId: missing', '$.callID: not a field of the type']);
});

test('a field of another JSON type does not fit, however deep', () => {
  const v = reviewExample();
  const files = v.files as { hunks: Json[] }[];
  files[0].hunks[1].oldStart = '5';
  v.sessionId = null;
  assert.deepEqual(reviewParams.check(v, '$'), ['$.sessionId: expected a string, found null', '$.files[0].hunks[1].oldStart: expected a number, found "5"']);
});

test('a value outside a closed set does not fit; null fits only where the type says', () => {
  const v = reviewExample();
  (v.files as Json[])[0].op = 'move';
  assert.deepEqual(reviewParams.check(v, '$'), ['$.files[0].op: expected one of "create", "modify", "delete", "rename", found "move"']);
  const w = reviewExample();
  w.callId = null;
  assert.deepEqual(reviewParams.check(w, '$'), [], 'callId may be null');
});

test('an event is checked against the data of its own kind', () => {
  const event = { sessionId: 's', kind: 'tool_call_start', timestamp: 't', data: { tool_name: 'shell', call_id: 'c', summary: 'shell: ls', arguments: { command: 'ls' } } };
  assert.deepEqual(agentEvent.check(event, '$'), []);
  assert.deepEqual(agentEvent.check({ ...event, kind: 'tool_call_end' }, '$'), [
    '$.data.status: missing',
    '$.data.duration_ms: missing',
    '$.data.arguments: not a field of the type',
  ]);
  assert.deepEqual(agentEvent.check({ ...event, kind: 'tool_call_begin' }, '$'), ['$.kind: expected an event kind, found "tool_call_begin"']);
});

test('examples are told apart: an unknown payload or a result after a non-command is a problem', () => {
  assert.match(problemsOf({ line: 1, values: [{ somethingElse: 1 }] }).problems[0], /does not know/);
  assert.deepEqual(problemsOf({ line: 1, values: [{ uris: ['file:///a'] }, { saved: [] }] }).problems, ['a result (→) follows a payload that is not a command']);
  assert.deepEqual(
    problemsOf({ line: 1, values: [{ command: 'agentls.cancel', arguments: [{ sessionId: 's' }] }, { sessionId: 's', cancelled: 'yes' }] }).problems,
    ['(result 1).cancelled: expected one of true, found "yes"'],
  );
  assert.deepEqual(problemsOf({ line: 1, values: [{ command: 'agentls.cancelAll', arguments: [] }] }).problems, ['$.command: agentls.cancelAll is not in ServerCommand']);
});
