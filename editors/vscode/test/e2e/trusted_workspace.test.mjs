// A workspace VS Code trusts, in code-server with the real agentls binary: the user trusts it when
// VS Code asks at startup; later the repository gains an `.agentls.toml` that sends Anthropic
// requests to the project's own host, and the window is opened again. VS Code trusts the
// workspace from the start now, so the extension trusts the folder for agentls at once, without
// a question or a warning (one decision, not two), and the prompt reaches the project's host.

import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { closeAll, env, FakeProvider, freshDir, openWorkbench, trustingCodeServer, until } from './harness.mjs';

const artefacts = env('ARTEFACTS');
const run = freshDir(join(artefacts, 'trusted-workspace'));
const ws = join(run, 'workspace');
mkdirSync(ws);

let user;
let project;
let codeServer;
let browser;
let page;
let wb;

before(async () => {
  user = await new FakeProvider(freshDir(join(run, 'user-provider')), [[{ text: 'The user provider answered.' }]]).start();
  project = await new FakeProvider(freshDir(join(run, 'project-provider')), [[{ text: 'Hello from the project host.' }]]).start();
  writeFileSync(join(ws, 'README.md'), '# a repository\n');
  codeServer = trustingCodeServer(run, 'always');
  ({ browser, page, wb } = await openWorkbench(codeServer, ws, user));
});

after(() => closeAll({ wb, browser, codeServer, providers: [user, project] }, 'trusted-final'));

test('the user trusts the workspace when VS Code asks', async () => {
  const dialog = page.locator('.monaco-dialog-box', { hasText: 'Do you trust the authors' });
  await dialog.waitFor({ state: 'visible', timeout: 60_000 });
  await dialog.locator('a.monaco-button, button', { hasText: 'Yes, I trust the authors' }).first().click();
  await until('Restricted Mode gone', async () => !(await page.locator('.statusbar-item', { hasText: 'Restricted Mode' }).first().isVisible()), 20_000);
});

test('reopened with a project file: the folder is trusted for agentls at once, without a warning', async () => {
  writeFileSync(join(ws, '.agentls.toml'), `[providers.anthropic]\nbase_url = "${project.baseUrl}"\n`);
  // Reloaded the way a user does, through the workbench: its shutdown writes the trust decision to
  // the browser's storage first (a bare page reload can come before that write and lose it).
  const reloaded = page.waitForEvent('load', { timeout: 60_000 });
  await wb.palette('Developer: Reload Window');
  await reloaded;
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60_000 });
  await until('the agentls status bar item', () => page.locator('.statusbar-item', { hasText: 'agentls' }).first().isVisible(), 60_000);
  await until('the trust store', () => existsSync(codeServer.trustStore) && readFileSync(codeServer.trustStore, 'utf8').includes(ws), 30_000);
  // The trust store is written before the extension's log line reaches its file: wait for it.
  const granted = /agentls trusts .*workspace \(VS Code trusts this workspace\)/;
  await until('the grant in the extension log', () => granted.test(codeServer.extensionLog()), 20_000);
  assert.match(codeServer.extensionLog(), granted);
  assert.equal(await page.locator('.monaco-dialog-box').count(), 0, 'no question');
  assert.equal(await page.locator('.notification-toast', { hasText: 'until you trust' }).count(), 0, 'no warning');
  await wb.shot('trusted-workspace');
});

test('the prompt reaches the project\'s host', async () => {
  await wb.palette('agentls: Open Chat');
  const f = await wb.chatFrame();
  await f.locator('#prompt').click();
  await f.locator('#prompt').fill('Hello?');
  await f.locator('#prompt').press('Enter');
  await until('the answer', async () => (await wb.chatText()).includes('Hello from the project host.'), 30_000);
  assert.equal(project.requests().length, 1);
  assert.equal(user.requests().length, 0);
  await wb.shot('trusted-chat');
});
