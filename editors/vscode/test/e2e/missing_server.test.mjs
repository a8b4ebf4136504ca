// A VS Code where `agentls.server.path` names nothing: the user is told so, with the install
// command, and the notification's button opens the setting.

import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CodeServer, env, freshDir, launchBrowser, until } from './harness.mjs';

const artefacts = env('ARTEFACTS');
const run = freshDir(join(artefacts, 'missing-server'));
const ws = join(run, 'workspace');
mkdirSync(ws);
const noProvider = { baseUrl: 'http://127.0.0.1:9' };

let codeServer;
let browser;
let page;

before(async () => {
  codeServer = new CodeServer(run, {
    settings: {
      'agentls.server.path': '/nonexistent/agentls',
      'workbench.startupEditor': 'none',
      'security.workspace.trust.enabled': false,
      'git.enabled': false,
      'telemetry.telemetryLevel': 'off',
      'chat.commandCenter.enabled': false,
    },
  });
  codeServer.install(env('VSIX'), noProvider);
  const url = await codeServer.start(ws, noProvider);
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(url);
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60_000 });
});

after(async () => {
  await browser?.close().catch(() => undefined);
  codeServer?.stop();
});

test('the user is told how to install the server and can open the setting', async () => {
  const missing = page.locator('.notification-toast', { hasText: 'was not found at "/nonexistent/agentls"' }).first();
  await missing.waitFor({ state: 'visible', timeout: 60_000 });
  assert.match(await missing.innerText(), /Install it with: cargo install --locked --path \./);
  await until('the status bar', async () => (await page.locator('.statusbar-item').allInnerTexts()).some((t) => t.includes('agentls: not installed')), 10_000);
  await page.screenshot({ path: join(artefacts, 'server-missing.png') });
  await missing.locator('.monaco-button', { hasText: 'Open Setting' }).click();
  await until('the settings editor on agentls.server.path', () => page.locator('.settings-editor .setting-item-contents', { hasText: 'Path of the' }).first().isVisible(), 20_000);
});
