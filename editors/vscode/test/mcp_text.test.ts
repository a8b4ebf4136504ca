// What the extension says about MCP servers: the quick pick rows, the permission question of an
// MCP call (it shows the arguments), and how a chat card names an MCP tool.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { McpServerInfo } from '../src/lsp_ext';
import { argumentLines, mcpQuestion, mcpTool, restartable, serverRow, toolRows } from '../src/mcp_text';

const running: McpServerInfo = {
  name: 'everything',
  state: 'running',
  target: 'npx -y @modelcontextprotocol/server-everything',
  origin: '/home/me/proj/.mcp.json',
  tools: [
    { name: 'echo', toolName: 'mcp__everything__echo', description: 'Echoes back the input string\nmore', readOnlyHint: true },
    { name: 'add', toolName: 'mcp__everything__add', description: null, readOnlyHint: false },
  ],
  lastError: null,
};

test('a server row has its state, its tools, and its last error before anything else', () => {
  assert.deepEqual(serverRow(running), {
    label: '$(pass) everything',
    description: 'running · 2 tools',
    detail: 'npx -y @modelcontextprotocol/server-everything (/home/me/proj/.mcp.json)',
  });
  const failed: McpServerInfo = { ...running, state: 'failed', tools: [], origin: null, lastError: 'it stopped; its stderr ends with: boom' };
  assert.deepEqual(serverRow(failed), { label: '$(error) everything', description: 'failed', detail: 'Last error: it stopped; its stderr ends with: boom' });
  const untrusted: McpServerInfo = { ...running, state: 'needs_trust', tools: [] };
  assert.equal(serverRow(untrusted).description, 'needs trust');
  assert.match(serverRow(untrusted).detail, /starts once you trust the workspace$/);
});

test('only a server that can start is offered Restart', () => {
  assert.deepEqual(
    (['starting', 'running', 'failed', 'stopped', 'disabled', 'needs_trust', 'invalid'] as const).filter((state) => restartable({ ...running, state })),
    ['starting', 'running', 'failed'],
  );
});

test('tool rows: the server\'s name, the model\'s name, read-only, the first line of the description', () => {
  assert.deepEqual(toolRows(running), [
    { label: 'echo', description: 'mcp__everything__echo · read-only', detail: 'Echoes back the input string' },
    { label: 'add', description: 'mcp__everything__add', detail: '' },
  ]);
});

test('an MCP tool name is told apart from the others', () => {
  assert.deepEqual(mcpTool('mcp__github__create_issue'), { server: 'github', tool: 'create_issue' });
  assert.deepEqual(mcpTool('mcp__my-docs__search__v2'), { server: 'my-docs', tool: 'search__v2' });
  assert.equal(mcpTool('shell'), undefined);
  assert.equal(mcpTool('read_file'), undefined);
});

test('arguments are one line each, with nothing a dialog could collapse', () => {
  assert.equal(argumentLines({ owner: 'octo', labels: ['bug', 'p1'], body: { text: 'a\nb' } }), 'owner: "octo"\nlabels: ["bug","p1"]\nbody: {"text":"a\\nb"}');
  assert.equal(argumentLines({}), '(none)');
  assert.equal(argumentLines(undefined), '(none)');
  assert.equal(argumentLines([1, 2]), '[1,2]');
  assert.ok(!argumentLines({ a: { b: { c: 1 } } }).includes('  '), 'no indentation');
});

test('the permission question names the tool and server and shows the arguments', () => {
  const q = mcpQuestion({ server: 'github', tool: 'create_issue', arguments: { title: 'Crash on start' }, readOnlyHint: false }, '/home/me/proj');
  assert.equal(q.message, 'agentls wants to call the tool "create_issue" of the MCP server "github"');
  assert.equal(q.always, 'Always allow "github: create_issue"');
  assert.ok(q.detail.startsWith('Arguments:\ntitle: "Crash on start"\n\nin /home/me/proj\n'), q.detail);
  const big = mcpQuestion({ server: 's', tool: 't', arguments: { text: 'x'.repeat(5000) }, readOnlyHint: true }, '/p');
  assert.ok(big.detail.includes('…') && big.detail.length < 2300, `${big.detail.length}`);
  assert.ok(big.detail.includes('The server says this tool only reads.'));
});
