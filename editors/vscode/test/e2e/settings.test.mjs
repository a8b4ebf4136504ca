// Settings the server refuses, in code-server with the real agentls binary: the extension sends
// every setting as the user set it and the server checks them key by key. A bad value (a loop
// detection window of 1, 40 characters per token) is named in the server's warning, the other
// settings apply (the model the user chose is the one the provider is asked for), and a bad value
// set while VS Code runs is named too, once the server pulls the changed section.

import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CodeServer, env, FakeProvider, freshDir, openWorkbench, QUIET_SETTINGS, until } from './harness.mjs';

const artefacts = env('ARTEFACTS');
const run = freshDir(join(artefacts, 'settings'));
const ws = join(run, 'workspace');
mkdirSync(ws);

let provider;
let codeServer;
let browser;
let wb;

const settings = {
  'agentls.server.path': env('AGENTLS_BIN'),
  'agentls.model': 'claude-settings-test',
  'agentls.loopDetection.window': 1,
  'agentls.context.charsPerToken': 40,
  'agentls.context.keepExchanges': 2,
  ...QUIET_SETTINGS,
  'security.workspace.trust.enabled': false,
  // the last test types settings.json as a whole
  'editor.autoClosingBrackets': 'never',
  'editor.autoClosingQuotes': 'never',
  'editor.autoIndent': 'none',
};

before(async () => {
  writeFileSync(join(ws, 'README.md'), '# settings\n');
  provider = await new FakeProvider(run, [[{ text: 'The settings applied.' }]]).start();
  codeServer = new CodeServer(run, { settings });
  ({ browser, wb } = await openWorkbench(codeServer, ws, provider));
});

after(async () => {
  if (wb) await wb.shot('settings-final').catch(() => undefined);
  await browser?.close().catch(() => undefined);
  codeServer?.stop();
  provider?.stop();
});

test('the server\'s warning names each refused setting; the extension sends them as set', async () => {
  const warning = wb.toast('agentls ignores these editor settings');
  await warning.waitFor({ state: 'visible', timeout: 60_000 });
  const text = await warning.innerText();
  assert.ok(text.includes('loop_detection_window'), text);
  assert.ok(text.includes('context.chars_per_token'), text);
  assert.ok(!text.includes('keep_exchanges'), `a good key beside a bad one is not named: ${text}`);
  // the extension kept nothing back and says nothing of its own (it used to: "… not sent to the server")
  assert.equal(await wb.page.locator('.notification-toast', { hasText: 'not sent to the server' }).count(), 0);
  await wb.shot('settings-refused');
});

test('the other settings apply: the model the user chose is asked', async () => {
  await wb.palette('agentls: Open Chat');
  await wb.send('Which settings apply?');
  await until('the answer', async () => (await wb.chatText()).includes('The settings applied.'), 30_000);
  const [request] = provider.requests();
  assert.equal(request.model, 'claude-settings-test');
});

test('a bad value set while VS Code runs is named once the server pulls the changed section', async () => {
  const page = wb.page;
  await wb.palette('Preferences: Open User Settings (JSON)');
  await until('settings.json open', () => page.locator('.tab.active', { hasText: 'settings.json' }).isVisible(), 20_000);
  const editor = page.locator('.editor-group-container .monaco-editor:visible').first();
  await editor.locator('.view-lines').click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(JSON.stringify({ ...settings, 'agentls.maxTurns': -1 }));
  await page.keyboard.press('Control+S');
  await until('settings.json saved', () => JSON.parse(readFileSync(join(codeServer.userData, 'User', 'settings.json'), 'utf8'))['agentls.maxTurns'] === -1, 10_000);
  const warning = wb.toast('max_turns');
  await warning.waitFor({ state: 'visible', timeout: 30_000 });
  assert.ok((await warning.innerText()).includes('agentls ignores these editor settings'));
  await wb.shot('settings-changed-refused');
});
