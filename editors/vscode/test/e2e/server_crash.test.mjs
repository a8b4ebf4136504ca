// The server dies and VS Code carries on (code-server + chromium, the real agentls binary, a
// scripted fake model). The server is killed with SIGKILL in the middle of a turn (a long shell
// command): it is restarted and the session that was open is reopened with its history, the chat
// saying so, and the next message continues that session. Killed while a permission question is
// on screen: the question is dropped, the answer given afterwards is not sent, nothing runs. Past
// the restart limit the server stays stopped until "Restart Server", which reopens the session too.
// A session that was not open comes back from Switch Session as a stored one.

import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CodeServer, env, FakeProvider, freshDir, openWorkbench, QUIET_SETTINGS, until } from './harness.mjs';

const run = freshDir(join(env('ARTEFACTS'), 'server-crash'));
const ws = join(run, 'workspace');
mkdirSync(ws);
const bin = env('AGENTLS_BIN');

const turns = [
  [{ text: 'Hello from the first session.' }],
  [{ text: 'Noted: pelican.' }],
  [{ text: 'Starting the slow build.' }, { tool: 'shell', id: 'toolu_s1', input: { command: 'sleep 120' } }],
  [{ text: 'Yes, the session is back.' }],
  [{ text: 'Creating it.' }, { tool: 'shell', id: 'toolu_s2', input: { command: 'touch marker.txt' } }],
  [{ text: 'Still here after the restart limit.' }],
];

let provider;
let codeServer;
let browser;
let page;
let wb;
let first;
let second;

before(async () => {
  provider = await new FakeProvider(run, turns).start();
  codeServer = new CodeServer(run, {
    settings: {
      'agentls.server.path': bin,
      'agentls.model': 'claude-test',
      'agentls.shell.allow': ['sleep'],
      ...QUIET_SETTINGS,
      'security.workspace.trust.enabled': false,
    },
  });
  ({ browser, page, wb } = await openWorkbench(codeServer, ws, provider));
});

after(async () => {
  if (wb) await wb.shot('crash-final').catch(() => undefined);
  await browser?.close().catch(() => undefined);
  codeServer?.stop();
  provider?.stop();
});

/** SIGKILLs the one server under code-server; returns its pid. */
function killServer() {
  const [pid, ...more] = codeServer.childrenRunning(bin);
  assert.ok(pid && more.length === 0, `one agentls server under code-server: ${[pid, ...more]}`);
  process.kill(pid, 'SIGKILL');
  return pid;
}

const newServer = (dead) => until('a new server', () => {
  const now = codeServer.childrenRunning(bin);
  return now.length === 1 && now[0] !== dead;
}, 30_000);

/** How often the extension logged that it reopened `sessionId`. */
const reopenings = (sessionId) => codeServer.extensionLog().split(`reopened session ${sessionId}`).length - 1;

const reopened = 'agentls stopped unexpectedly and was restarted; session "Remember the word pelican." reopened with its history';
const lastRequest = () => JSON.stringify(provider.requests().at(-1));

test('two sessions: the first is left idle, the second is the one the server dies under', async () => {
  await until('the agentls status bar item', () => page.locator('.statusbar-item', { hasText: 'agentls' }).first().isVisible(), 60_000);
  await wb.palette('agentls: Open Chat');
  await wb.send('Say hello.');
  await until('the answer', async () => (await wb.chatText()).includes('Hello from the first session.'), 30_000);
  [first] = await until('the first session stored', () => codeServer.storedSessions().length === 1 && codeServer.storedSessions(), 10_000);
  await wb.palette('agentls: New Session');
  await wb.send('Remember the word pelican.');
  await until('the answer', async () => (await wb.chatText()).includes('Noted: pelican.'), 30_000);
  const both = await until('the second session stored', () => codeServer.storedSessions().length === 2 && codeServer.storedSessions(), 10_000);
  second = both.find((id) => id !== first);
});

test('killed mid-turn: the server is restarted and the session reopened with its history, and the chat says so', async () => {
  await wb.send('Run the slow build please.');
  const f = await wb.chatFrame();
  const card = f.locator('.entry.tool', { hasText: 'sleep 120' });
  await until('the running sleep', async () => (await card.getAttribute('data-status')) === 'running', 30_000);
  await wb.shot('crash-before-kill');
  const dead = killServer();
  await newServer(dead);
  await until('the session reopened', () => reopenings(second) === 1, 30_000);
  const text = await until('the chat told', async () => {
    const t = await wb.chatText();
    return t.includes(reopened) && t;
  }, 30_000);
  assert.ok(text.includes('The turn that was running was interrupted.'), text);
  assert.ok(text.includes('Remember the word pelican.') && text.includes('Noted: pelican.'), `the history is shown: ${text}`);
  assert.ok(!text.includes('Hello from the first session.'), 'the chat shows the reopened session, not the other one');
  assert.equal(await f.locator('.entry.tool[data-status="running"]').count(), 0, 'nothing is left running');
  assert.deepEqual(codeServer.storedSessions(), [first, second].sort(), 'no new session was started');
  await until('the status bar back to idle', async () => (await page.locator('.statusbar-item').allInnerTexts()).some((t) => /^agentls( · \d+%)?$/.test(t.trim())), 30_000);
  await wb.shot('crash-reopened');
});

test('the reopened chat holds the prompt of the interrupted turn (the transcript is written as the turn happens)', async () => {
  const text = await wb.chatText();
  assert.ok(text.includes('Run the slow build please.'), text);
});

test('the next message continues the reopened session', async () => {
  await wb.send('Are you back?');
  await until('the answer', async () => (await wb.chatText()).includes('Yes, the session is back.'), 30_000);
  assert.ok(lastRequest().includes('Remember the word pelican.'), `the model got the session's history: ${lastRequest().slice(0, 600)}`);
  assert.ok(!lastRequest().includes('Say hello.'), 'not the other session\'s');
  assert.deepEqual(codeServer.storedSessions(), [first, second].sort());
});

test('the model is told of the interrupted turn', () => {
  assert.ok(lastRequest().includes('Run the slow build please.'), lastRequest().slice(0, 1200));
});

test('killed while a permission question is on screen: the question is dropped, its answer not sent, nothing runs', async () => {
  await wb.send('Create the marker file.');
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ state: 'visible', timeout: 30_000 });
  assert.ok((await dialog.innerText()).includes('touch marker.txt'));
  const dead = killServer();
  await newServer(dead);
  await until('the session reopened', () => reopenings(second) === 2, 30_000);
  const text = await until('the chat told', async () => {
    const t = await wb.chatText();
    return t.includes(reopened) && t;
  }, 30_000);
  assert.ok(text.includes('The permission question for "touch marker.txt" was dropped: nothing ran.'), text);
  // an extension cannot close a modal dialog: it is still there, and answering it sends nothing
  await wb.shot('crash-permission-dropped');
  await dialog.locator('a.monaco-button, button', { hasText: 'Allow once' }).first().click();
  await until('the user told', () => wb.toast('your answer was not sent').isVisible(), 10_000);
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal(existsSync(join(ws, 'marker.txt')), false, 'the command did not run');
  const log = codeServer.extensionLog();
  assert.match(log, /permission question \S+ \("touch marker.txt"\) dropped/);
  assert.ok(!log.includes('resolvePermission:'), 'no answer reached the new server');
});

test('past the restart limit the server stays stopped; Restart Server starts it and reopens the session', async () => {
  const limit = wb.toast('was not restarted');
  for (let kill = 0; kill < 4 && !(await limit.isVisible()); kill++) {
    const before = reopenings(second);
    killServer();
    await until('a restart or the limit', async () => reopenings(second) > before || (await limit.isVisible()), 30_000);
  }
  assert.ok(await limit.isVisible(), 'the limit is reached within four more deaths');
  assert.match(await limit.innerText(), /stopped 4 times within 3 minutes and was not restarted/);
  await until('the status bar', async () => (await page.locator('.statusbar-item').allInnerTexts()).some((t) => t.includes('agentls: stopped')), 10_000);
  const text = await wb.chatText();
  assert.ok(text.includes('was not restarted. Run "agentls: Restart Server" to start it again and reopen this session'), text);
  assert.equal(codeServer.childrenRunning(bin).length, 0, 'no server runs');
  await wb.shot('crash-limit');
  const before = reopenings(second);
  await limit.locator('.monaco-button', { hasText: 'Restart Server' }).click();
  await until('the session reopened', () => reopenings(second) === before + 1, 30_000);
  await until('the chat told', async () => (await wb.chatText()).includes(reopened), 30_000);
  await wb.send('One more question.');
  await until('the answer', async () => (await wb.chatText()).includes('Still here after the restart limit.'), 30_000);
  assert.ok(lastRequest().includes('Remember the word pelican.'), lastRequest().slice(0, 600));
  await wb.shot('crash-restarted-by-hand');
});

test('the session that was not open comes back from Switch Session as a stored one', async () => {
  await wb.palette('agentls: Switch Session');
  const item = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Say hello.' }).first();
  await item.waitFor({ state: 'visible', timeout: 20_000 });
  await item.click();
  await until('its history in the chat', async () => {
    const t = await wb.chatText();
    return t.includes('Resumed a stored session') && t.includes('Hello from the first session.') && !t.includes('pelican');
  }, 20_000);
});
