// MCP in a real VS Code (code-server + chromium) with the packaged .vsix and the real agentls
// binary: a trusted workspace with a `.mcp.json` naming @modelcontextprotocol/server-everything
// (installed by scripts/install-mcp-servers) → Ask → the call's permission question shows the
// tool, the server and the arguments → Allow once → the call's card names the server and holds
// the server's answer → "agentls: MCP Servers" lists the server running with its tools, and
// Restart starts it again. Screenshots go to $ARTEFACTS.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CodeServer, env, FakeProvider, freshDir, openWorkbench, QUIET_SETTINGS, until } from './harness.mjs';

const artefacts = env('ARTEFACTS');
const run = freshDir(join(artefacts, 'mcp'));
const ws = join(run, 'workspace');
mkdirSync(ws);

const servers = execFileSync(join(env('REPO'), 'scripts/install-mcp-servers'), { encoding: 'utf8' }).trim();
const everything = join(servers, 'npm/node_modules/.bin/mcp-server-everything');
writeFileSync(join(ws, '.mcp.json'), JSON.stringify({ mcpServers: { everything: { command: everything } } }, null, 2));
writeFileSync(join(ws, 'README.md'), '# a repository with an MCP server\n');

const message = 'hello from VS Code';
const turns = [
  [{ text: 'Asking the server.' }, { tool: 'mcp__everything__echo', id: 'toolu_m1', input: { message } }],
  [{ text: 'The server echoed your words.' }],
];

let provider;
let codeServer;
let browser;
let page;
let wb;

before(async () => {
  provider = await new FakeProvider(freshDir(join(run, 'provider')), turns).start();
  codeServer = new CodeServer(run, { settings: { 'agentls.server.path': env('AGENTLS_BIN'), 'agentls.model': 'claude-test', ...QUIET_SETTINGS } });
  ({ browser, page, wb } = await openWorkbench(codeServer, ws, provider));
});

after(async () => {
  if (wb) await wb.shot('mcp-final').catch(() => undefined);
  await browser?.close().catch(() => undefined);
  codeServer?.stop();
  provider?.stop();
});

test('the trusted workspace is trusted for agentls at once, so its .mcp.json applies', async () => {
  await until('the agentls status bar item', () => page.locator('.statusbar-item', { hasText: 'agentls' }).first().isVisible(), 60_000);
  const granted = /agentls trusts .*workspace \(VS Code trusts this workspace\)/;
  await until('the grant in the extension log', () => granted.test(codeServer.extensionLog()), 30_000);
});

test('an MCP call asks with the tool, the server and the arguments; allowed, its answer is in the chat', async () => {
  await wb.palette('agentls: Open Chat');
  await wb.send('Echo something through the MCP server.');
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ state: 'visible', timeout: 60_000 });
  const text = await dialog.innerText();
  assert.ok(text.includes('agentls wants to call the tool "echo" of the MCP server "everything"'), text);
  assert.ok(text.includes(`message: "${message}"`), `the question shows the arguments, one per line: ${text}`);
  assert.ok(text.includes('Always allow "everything: echo"'), text);
  await wb.shot('mcp-permission');
  await dialog.locator('a.monaco-button, button', { hasText: 'Allow once' }).first().click();
  await until('the answer', async () => (await wb.chatText()).includes('The server echoed your words.'), 60_000);
  const f = await wb.chatFrame();
  const card = f.locator('.entry.tool').first();
  assert.equal(await card.getAttribute('data-status'), 'ok');
  assert.equal(await card.locator('.tool-name').innerText(), 'MCP');
  assert.equal(await card.locator('.tool-summary').innerText(), `everything: echo {"message":"${message}"}`);
  await card.locator('.tool-output summary').click();
  await until('the server\'s answer in the card', async () => (await card.locator('.tool-output pre').innerText()).includes(`Echo: ${message}`), 10_000);
  // The model read the server's answer.
  const second = provider.requests()[1];
  assert.ok(JSON.stringify(second).includes(`Echo: ${message}`), 'the model got the result');
  await wb.shot('mcp-chat');
});

/** Opens "agentls: MCP Servers" and returns the quick pick's rows as text. */
async function serverRows() {
  await wb.palette('agentls: MCP Servers');
  const rows = page.locator('.quick-input-list .monaco-list-row');
  await rows.first().waitFor({ state: 'visible', timeout: 20_000 });
  return rows.allInnerTexts();
}

test('"agentls: MCP Servers" lists the server with its state and tools and restarts it', async () => {
  const rows = await serverRows();
  assert.equal(rows.length, 1, rows.join('\n---\n'));
  assert.match(rows[0], /everything/);
  assert.match(rows[0], /running · \d+ tools/);
  assert.ok(rows[0].includes(everything) && rows[0].includes('.mcp.json'), rows[0]);
  await wb.shot('mcp-servers');
  await page.keyboard.press('Enter');
  const actions = page.locator('.quick-input-list .monaco-list-row');
  await actions.first().waitFor({ state: 'visible' });
  const listed = await actions.allInnerTexts();
  assert.ok(listed[0].includes('Restart'), listed.join('\n'));
  assert.ok(listed.some((r) => r.includes('mcp__everything__echo')), listed.join('\n'));
  await wb.shot('mcp-server-actions');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Restart' }).first().click();
  await wb.toast('the MCP server "everything" is starting').waitFor({ state: 'visible', timeout: 20_000 });
  await until('the restarted server log line', () => codeServer.extensionLog().includes('restarted the MCP server everything: starting'), 10_000);
  await until('the server running again', async () => {
    const again = await serverRows();
    await page.keyboard.press('Escape');
    return /running · \d+ tools/.test(again[0]);
  }, 60_000, 500);
});
