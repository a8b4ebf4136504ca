// The user's journey in a real VS Code (code-server + chromium), with the packaged .vsix, the
// real agentls binary and a scripted fake model:
// type into a file without saving → Ask → the answer streams into the chat view → the review
// opens in the diff editor → accept one hunk, reject the other with a reason → the buffer holds
// exactly the accepted change and the unsaved text, and the model's next request carries the
// rejection and the reason → a shell command asks permission, "Allow once" runs it → Stop
// during a long command cancels it → the server dies with a review pending: it is restarted, the
// review closed and the session reopened with its history. Screenshots go to $ARTEFACTS.

import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { closeAll, CodeServer, env, FakeProvider, freshDir, openWorkbench, until } from './harness.mjs';

const artefacts = env('ARTEFACTS');
const run = freshDir(join(artefacts, 'run'));
const ws = join(run, 'workspace');
mkdirSync(ws);
const disk = 'one\ntwo\nthree\nfour\nfive\nsix\nseven\n';
writeFileSync(join(ws, 'notes.txt'), disk);
writeFileSync(join(ws, 'bad.json'), '{"a": 1 "b": 2}\n');
const typed = 'unsaved line';
const buffer = `${disk}${typed}\n`;
const proposal = 'one\nTWO\nthree\nfour\nfive\nsix\nSEVEN\nunsaved line\n';
const expected = 'one\nTWO\nthree\nfour\nfive\nsix\nseven\nunsaved line\n';
const reason = 'keep seven lowercase';

const turns = [
  [{ text: 'Reading **notes.txt** first.' }, { tool: 'read_file', id: 'toolu_r1', input: { file_path: 'notes.txt' } }],
  [{ text: 'I will capitalise `two` and `seven`.' }, { tool: 'write_file', id: 'toolu_w1', input: { file_path: 'notes.txt', content: proposal } }],
  [{ text: 'Now a quick check.' }, { tool: 'shell', id: 'toolu_s1', input: { command: 'echo permission-granted-run' } }],
  [{ text: 'All done: `two` is now **TWO**, and `seven` stays lowercase as you asked.\n\n```python\nprint("checked")\n```\n' }],
  [{ text: 'Running the long check.' }, { tool: 'shell', id: 'toolu_s2', input: { command: 'sleep 120' } }],
  [{ text: 'One more change.' }, { tool: 'write_file', id: 'toolu_w2', input: { file_path: 'notes.txt', content: `${expected}eight\n` } }],
  [{ text: 'The selected lines say one and TWO.' }],
  [{ tool: 'diagnostics', id: 'toolu_d1', input: { path: 'bad.json' } }],
  [{ text: 'bad.json has a syntax error.' }],
  [{ tool: 'write_file', id: 'toolu_w3', input: { file_path: 'added.txt', content: 'hello from agentls\n' } }],
  [{ text: 'Created added.txt.' }],
  [{ text: 'Waiting.' }, { tool: 'shell', id: 'toolu_s3', input: { command: 'sleep 6' } }],
  [{ text: 'Steered: hello.' }],
  [{ tool: 'read_file', id: 'toolu_r2', input: { file_path: 'notes.txt' } }],
  [{ tool: 'write_file', id: 'toolu_w4', input: { file_path: 'notes.txt', content: `${expected}nine\n` } }],
  [{ text: 'Noted your edit.' }],
  [{ tool: 'write_file', id: 'toolu_w5', input: { file_path: 'notes.txt', content: `${expected}nine (edited)\nten\n` } }],
  [{ text: 'Understood, no ten.' }],
  [{ tool: 'read_file', id: 'toolu_r3', input: { file_path: 'notes.txt' } }],
  [{ tool: 'write_file', id: 'toolu_w6', input: { file_path: 'notes.txt', content: 'ONE\nTWO\nthree\nfour\nfive\nsix\nseven\nunsaved line\nNINE (edited)\n' } }],
  [{ text: 'Only the last line then.' }],
  [{ tool: 'shell', id: 'toolu_s4', input: { command: 'echo never-run' } }],
  [{ text: 'I will not run it.' }],
];

let provider;
let codeServer;
let browser;
let page;
let wb;

async function openFile(name) {
  const exact = new RegExp(`^${name.replace(/[.]/g, '\\.')}$`);
  const tab = page.locator('.tab .label-name', { hasText: exact }).first();
  if (await tab.isVisible()) {
    await tab.click();
    await until(`${name} active`, () => page.locator('.tab.active .label-name', { hasText: exact }).isVisible());
    const editor = page.locator('.editor-group-container .monaco-editor:visible').first();
    await editor.waitFor({ state: 'visible' });
    return editor;
  }
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(name);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor({ state: 'visible' });
  await page.keyboard.press('Enter');
  await until(`${name} open`, () => page.locator('.tab.active', { hasText: name }).isVisible());
  const editor = page.locator('.editor-group-container .monaco-editor:visible').first();
  await editor.waitFor({ state: 'visible' });
  return editor;
}

async function inputBox(text) {
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(text);
  await page.keyboard.press('Enter');
}

before(async () => {
  provider = await new FakeProvider(run, turns).start();
  codeServer = new CodeServer(run, {
    settings: {
      'agentls.server.path': env('AGENTLS_BIN'),
      'agentls.model': 'claude-test',
      'agentls.shell.allow': ['sleep'],
      'workbench.startupEditor': 'none',
      'workbench.tips.enabled': false,
      'workbench.welcomePage.walkthroughs.openOnInstall': false,
      'security.workspace.trust.enabled': false,
      'extensions.ignoreRecommendations': true,
      'telemetry.telemetryLevel': 'off',
      'files.autoSave': 'off',
      'editor.codeLens': true,
      'diffEditor.hideUnchangedRegions.enabled': false,
      'chat.commandCenter.enabled': false,
      'window.commandCenter': false,
      'update.mode': 'none',
      'git.enabled': false,
      'git.openRepositoryInParentFolders': 'never',
    },
  });
  ({ browser, page, wb } = await openWorkbench(codeServer, ws, provider));
});

after(() => closeAll({ wb, browser, codeServer, providers: [provider] }, 'final'));

/** The status bar item back to plain "agentls" (with the context share): no input is being worked on. */
const untilIdle = () => until('the status bar back to idle', async () => (await page.locator('.statusbar-item').allInnerTexts()).some((t) => /^agentls( · \d+%)?$/.test(t.trim())), 30_000);

test('the extension activates and the chat view opens', async () => {
  await until('the agentls status bar item', () => page.locator('.statusbar-item', { hasText: 'agentls' }).first().isVisible(), 60_000);
  await wb.palette('agentls: Open Chat');
  const f = await wb.chatFrame();
  await f.locator('#prompt').waitFor({ state: 'visible' });
  // The prompt box's focus tells the server that the user is writing a prompt (once per prompt).
  await f.locator('#prompt').click();
  const serverLog = join(codeServer.home, '.local', 'state', 'agentls', 'agentls.log');
  await until('agentls/userTyping in the server\'s log', () => existsSync(serverLog) && readFileSync(serverLog, 'utf8').includes('agentls/userTyping'), 20_000);
});

test('typing into a file without saving', async () => {
  const editor = await openFile('notes.txt');
  await editor.locator('.view-lines').click();
  await page.keyboard.press('Control+End');
  await page.keyboard.type(`${typed}\n`);
  await until('the tab marked dirty', () => page.locator('.tab.active.dirty', { hasText: 'notes.txt' }).isVisible());
  assert.equal(readFileSync(join(ws, 'notes.txt'), 'utf8'), disk, 'the typed text is not saved');
});

test('Ask: the answer streams into the chat view and the model read the unsaved text', async () => {
  await wb.palette('agentls: Ask');
  await inputBox('Capitalise two and seven in notes.txt, then check it.');
  await until('the streamed answer in the chat', async () => (await wb.chatText()).includes('Reading notes.txt first.'), 30_000);
  await until('the read_file result in the next request', () => provider.requests().length >= 2, 30_000);
  const second = JSON.stringify(provider.requests()[1]);
  assert.ok(second.includes(typed), `the model's second request holds the unsaved text: ${second.slice(0, 400)}`);
});

test('the review opens in the diff editor with Accept/Reject above each hunk', async () => {
  await until('the diff editor', () => page.locator('.monaco-diff-editor').first().isVisible(), 30_000);
  const lenses = page.locator('.monaco-diff-editor .codelens-decoration a');
  await until('two Accept lenses', async () => (await lenses.filter({ hasText: /^Accept$/ }).count()) === 2, 30_000);
  await until('the Pending changes tree', () => page.locator('.pane-header', { hasText: 'Pending changes' }).isVisible(), 10_000);
  await until('the status bar count', () => page.locator('.statusbar-item', { hasText: '1 change to review' }).isVisible(), 10_000);
  await wb.shot('diff-review');
});

test('accept the first hunk, reject the second with a reason', async () => {
  const accept = page.locator('.monaco-diff-editor .codelens-decoration a', { hasText: /^Accept$/ });
  await accept.first().click();
  await until('hunk 1 marked accepted', () => page.locator('.monaco-diff-editor .codelens-decoration', { hasText: 'Accepted (hunk 1 of 2)' }).isVisible(), 10_000);
  await wb.shot('diff-hunk-accepted');
  const reject = page.locator('.monaco-diff-editor .codelens-decoration a', { hasText: /^Reject$/ });
  await reject.first().click();
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await wb.shot('reject-reason');
  await input.fill(reason);
  await page.keyboard.press('Enter');
});

test('a shell command asks permission; Allow once runs it', async () => {
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ state: 'visible', timeout: 30_000 });
  const text = await dialog.innerText();
  assert.ok(text.includes('echo permission-granted-run'), text);
  assert.ok(text.includes(ws), `the dialog names the folder: ${text}`);
  assert.ok(text.includes('Always allow "echo permission-granted-run"'), text);
  await wb.shot('permission-prompt');
  await dialog.locator('a.monaco-button, button', { hasText: 'Allow once' }).first().click();
  await until('the final answer', async () => (await wb.chatText()).includes('seven stays lowercase as you asked'), 30_000);
  const chat = await wb.chatText();
  assert.ok(chat.includes('permission-granted-run'), 'the shell card shows the command');
  const f = await wb.chatFrame();
  const answer = f.locator('.entry.assistant').last();
  assert.equal(await answer.locator('pre.hljs .hljs-string').count(), 1, await answer.innerHTML());
});

test('the buffer holds exactly the accepted change and the unsaved text', async () => {
  // saveDocuments (before the shell command) saved exactly the file the agent changed.
  assert.equal(readFileSync(join(ws, 'notes.txt'), 'utf8'), expected);
  const editor = await openFile('notes.txt');
  const lines = await until('the editor lines', async () => {
    const t = await editor.locator('.view-lines').innerText();
    return t.includes('TWO') ? t : undefined;
  });
  assert.equal(lines.replace(/\u00a0/g, ' ').trim(), expected.trim());
});

test("the model's next request carries the rejection and the reason", async () => {
  const third = JSON.stringify(provider.requests()[2]);
  assert.ok(third.includes('rejected hunks [1]'), third.slice(-800));
  assert.ok(third.includes(reason), third.slice(-800));
  const f = await wb.chatFrame();
  const review = await f.locator('.entry.tool', { hasText: 'write_file' }).locator('.tool-review').innerText();
  assert.match(review, /partly accepted/);
  await wb.shot('chat-view');
});

test('Stop during a long command cancels it', async () => {
  const f = await wb.chatFrame();
  await f.locator('#prompt').click();
  await f.locator('#prompt').fill('Run the long check.');
  await f.locator('#prompt').press('Enter');
  const card = f.locator('.entry.tool', { hasText: 'sleep 120' });
  await until('the running sleep', async () => (await card.getAttribute('data-status')) === 'running', 30_000);
  await f.locator('#stop').click();
  await until('the card cancelled', async () => ['cancelled', 'error'].includes(await card.getAttribute('data-status')), 15_000);
  await until('the turn ended as cancelled', async () => (await f.locator('.entry.turn-end').last().innerText()).startsWith('cancelled'), 15_000);
  await wb.shot('chat-stopped');
});

test('the server dies with a review pending: it is restarted, the review closed and the session reopened', async () => {
  const f = await wb.chatFrame();
  await f.locator('#prompt').fill('Add an eighth line.');
  await f.locator('#prompt').press('Enter');
  await until('the second review', () => page.locator('.monaco-diff-editor').first().isVisible(), 30_000);
  const [pid, ...more] = codeServer.childrenRunning(env('AGENTLS_BIN'));
  assert.ok(pid && more.length === 0, `one agentls server under code-server: ${[pid, ...more]}`);
  process.kill(pid, 'SIGKILL');
  await until('the review closed', async () => !(await page.locator('.monaco-diff-editor').first().isVisible()), 20_000);
  await until('the user told', () => page.locator('.notification-toast', { hasText: 'reviews were closed' }).first().isVisible(), 20_000);
  await until('a new server', () => {
    const now = codeServer.childrenRunning(env('AGENTLS_BIN'));
    return now.length === 1 && now[0] !== pid;
  }, 30_000);
  await untilIdle();
  assert.equal(readFileSync(join(ws, 'notes.txt'), 'utf8'), expected, 'nothing of the closed review was applied');
  await until('the session reopened with its history', async () => {
    const t = await wb.chatText();
    return t.includes('agentls stopped unexpectedly and was restarted; session "Capitalise two and seven in notes.txt, then check it." reopened with its history')
      && t.includes('1 review was closed: nothing of it was applied.')
      && t.includes('seven stays lowercase as you asked');
  }, 30_000);
  const f2 = await wb.chatFrame();
  assert.equal(await f2.locator('.entry.tool[data-status="running"]').count(), 0, 'the interrupted call is not left running');
  await wb.shot('server-restarted');
});

/** The text of the model's latest request. */
const lastRequest = () => JSON.stringify(provider.requests().at(-1));

test('Ask About Selection sends the selected lines as context', async () => {
  const before = provider.requests().length;
  const editor = await openFile('notes.txt');
  await editor.locator('.view-lines').click();
  await page.keyboard.press('Control+Home');
  await page.keyboard.press('Shift+ArrowDown');
  await page.keyboard.press('Shift+ArrowDown');
  await wb.palette('agentls: Ask About Selection');
  await inputBox('What do these lines say?');
  await until('the answer', async () => (await wb.chatText()).includes('The selected lines say one and TWO.'), 30_000);
  assert.equal(provider.requests().length, before + 1);
  const prompt = provider.requests().at(-1).messages.at(-1).content.at(-1).text;
  assert.ok(prompt.startsWith('What do these lines say?\n\nContext: notes.txt, lines 1-2 (as in the editor):\n```\none\nTWO\n'), prompt);
});

test('the diagnostics tool gets the editor\'s problems', async () => {
  await openFile('bad.json');
  await until('a problem reported by the JSON language features', async () => /1/.test(await page.locator('[id="status.problems"]').innerText()), 30_000);
  const f = await wb.chatFrame();
  await f.locator('#prompt').fill('What is wrong with bad.json?');
  await f.locator('#prompt').press('Enter');
  await until('the answer', async () => (await wb.chatText()).includes('bad.json has a syntax error.'), 30_000);
  const request = lastRequest();
  assert.match(request, /bad\.json:1:\d+: error: /, request.slice(-800));
});

test('a new file is reviewed against an empty side and created when accepted (title button Accept File)', async () => {
  const f = await wb.chatFrame();
  await f.locator('#prompt').fill('Add a greeting file.');
  await f.locator('#prompt').press('Enter');
  await until('the new-file diff', () => page.locator('.tab.active', { hasText: 'added.txt (agentls: new file)' }).isVisible(), 30_000);
  await wb.shot('review-new-file');
  await until('the new-file lens', () => page.locator('.monaco-diff-editor .codelens-decoration a', { hasText: 'Accept new file' }).first().isVisible(), 10_000);
  await page.locator('.editor-actions .action-label[aria-label="Accept File"]').first().click();
  await until('the answer', async () => (await wb.chatText()).includes('Created added.txt.'), 30_000);
  assert.ok(existsSync(join(ws, 'added.txt')), 'the editor created the file');
  const card = f.locator('.entry.tool', { hasText: 'added.txt' }).last();
  assert.equal(await card.locator('.tool-review').innerText(), 'accepted');
});

test('Undo Last Turn removes the file the turn created; Redo Turn brings it back (issue 28)', async () => {
  // The server refuses an undo while the session works on an input: the answer's text is shown
  // before the turn ends (its checkpoint is stored then), so wait for the idle status first.
  await untilIdle();
  await wb.palette('agentls: Undo Last Turn');
  await until('the file removed', () => !existsSync(join(ws, 'added.txt')), 30_000);
  const told = page.locator('.notifications-toasts', { hasText: 'agentls: Undid turn' });
  await until('the undo told', () => told.first().isVisible(), 10_000);
  assert.ok((await told.first().innerText()).includes('added.txt'), await told.first().innerText());
  await wb.shot('undo-turn');
  await wb.palette('agentls: Redo Turn');
  await until('the file back', () => existsSync(join(ws, 'added.txt')), 30_000);
  await until('the redo told', () => page.locator('.notifications-toasts', { hasText: 'agentls: Redid turn' }).first().isVisible(), 10_000);
});

test('the chat\'s "Undo this turn" on a turn: refused while the user\'s edit overlaps it, then reverts it and marks it undone; "Redo" brings it back (issue 28)', async () => {
  const f = await wb.chatFrame();
  const turn = f.locator('.entry.user', { hasText: 'Add a greeting file.' }).last();
  const undo = turn.locator('button.turn-action.undo');
  await until('"Undo this turn" on the turn', () => undo.isEnabled(), 10_000);
  assert.match(await turn.locator('.turn-id').innerText(), /^turn \d+$/);
  assert.equal(await undo.getAttribute('title'), 'Undo this turn: reverts the files it changed, keeping your own edits since');
  // The user types into the file the turn created: its undo would delete the user's line.
  const editor = await openFile('added.txt');
  await editor.locator('.view-line', { hasText: 'hello from agentls' }).click();
  await page.keyboard.press('End');
  await page.keyboard.type(' mine');
  await undo.click();
  await until('the refusal in the chat', async () => /undo refused: .*added\.txt.*edited since/.test(await wb.chatText()), 30_000);
  assert.ok(existsSync(join(ws, 'added.txt')), 'nothing was changed');
  assert.equal(await turn.locator('.turn-undone').isVisible(), false);
  await wb.shot('chat-undo-refused');
  await openFile('added.txt');
  await editor.locator('.view-line', { hasText: 'mine' }).click();
  await page.keyboard.press('Control+Z');
  await until('the user\'s line taken back', async () => !(await editor.locator('.view-lines').innerText()).includes('mine'), 10_000);
  await undo.click();
  await until('the file removed', () => !existsSync(join(ws, 'added.txt')), 30_000);
  await until('the turn marked undone', () => turn.locator('.turn-undone').isVisible(), 10_000);
  assert.ok((await turn.getAttribute('class')).includes('undone'));
  assert.equal(await turn.locator('button.turn-action.undo').isVisible(), false, 'an undone turn offers no undo');
  const redo = turn.locator('button.turn-action.redo');
  assert.equal(await redo.isEnabled(), true);
  await until('the undo told in the chat', async () => /Undid turn \d+: added\.txt\./.test(await wb.chatText()), 10_000);
  await wb.shot('chat-undo-turn');
  await redo.click();
  await until('the file back', () => existsSync(join(ws, 'added.txt')), 30_000);
  await until('the mark gone', async () => !(await turn.locator('.turn-undone').isVisible()) && (await undo.isVisible()), 10_000);
  await wb.shot('chat-redo-turn');
});

test('Set Reasoning Effort changes the session and the chat header shows it', async () => {
  await wb.palette('agentls: Set Reasoning Effort');
  const high = page.locator('.quick-input-list .monaco-list-row', { hasText: 'high' }).first();
  await high.waitFor({ state: 'visible' });
  await high.click();
  const f = await wb.chatFrame();
  await until('the header', async () => (await f.locator('#effort').innerText()) === 'effort: high', 10_000);
  await until('the notice', async () => (await wb.chatText()).includes('reasoning effort high'), 10_000);
});

test('while a turn runs, the chat box steers it', async () => {
  const f = await wb.chatFrame();
  await f.locator('#prompt').fill('Wait a bit.');
  await f.locator('#prompt').press('Enter');
  const card = f.locator('.entry.tool', { hasText: 'sleep 6' });
  await until('the running sleep', async () => (await card.getAttribute('data-status')) === 'running', 30_000);
  assert.equal(await f.locator('#send').innerText(), 'Steer');
  await f.locator('#prompt').fill('Also say hello.');
  await f.locator('#prompt').press('Enter');
  await until('the steering shown', () => f.locator('.entry.user', { hasText: 'You (steering)' }).last().isVisible(), 20_000);
  await until('the answer', async () => (await wb.chatText()).includes('Steered: hello.'), 30_000);
  assert.ok(lastRequest().includes('Also say hello.'), 'the steering reached the model');
});

test('the user edits the proposal, then accepts the file: the edit lands and the model is told', async () => {
  const f = await wb.chatFrame();
  await f.locator('#prompt').fill('Add a ninth line.');
  await f.locator('#prompt').press('Enter');
  await until('the diff', () => page.locator('.tab.active', { hasText: 'notes.txt (agentls: proposed)' }).isVisible(), 30_000);
  const modified = page.locator('.monaco-diff-editor .editor.modified');
  await modified.locator('.view-line', { hasText: 'nine' }).click();
  await page.keyboard.press('End');
  await page.keyboard.type(' (edited)');
  await wb.shot('diff-edited-proposal');
  await page.locator('.editor-actions .action-label[aria-label="Accept File"]').first().click();
  await until('the answer', async () => (await wb.chatText()).includes('Noted your edit.'), 30_000);
  assert.match(lastRequest(), /edited your change/, lastRequest().slice(-1200));
  const editor = await openFile('notes.txt');
  await until('the edited line in the buffer', async () => (await editor.locator('.view-lines').innerText()).replace(/\u00a0/g, ' ').includes('nine (edited)'), 10_000);
  const card = f.locator('.entry.tool', { hasText: 'write_file' }).last();
  assert.equal(await card.locator('.tool-review').innerText(), 'accepted with your edits');
  assert.equal(await f.locator('.entry.assistant.streaming').count(), 0, 'no placeholder of a tool-only response is left');
});

test('Reject All with a reason: nothing lands and the model gets the reason', async () => {
  const f = await wb.chatFrame();
  await f.locator('#prompt').fill('Add a tenth line.');
  await f.locator('#prompt').press('Enter');
  await until('the diff', () => page.locator('.tab.active', { hasText: 'notes.txt (agentls: proposed)' }).isVisible(), 30_000);
  await page.locator('.editor-actions .action-label[aria-label="Reject All Changes"]').first().click();
  await inputBox('ten lines are too many');
  await until('the answer', async () => (await wb.chatText()).includes('Understood, no ten.'), 30_000);
  assert.match(lastRequest(), /rejected the change/, lastRequest().slice(-1200));
  assert.ok(lastRequest().includes('ten lines are too many'));
  const editor = await openFile('notes.txt');
  assert.ok(!(await editor.locator('.view-lines').innerText()).includes('ten'), 'nothing was applied');
  assert.equal(await f.locator('.entry.tool', { hasText: 'write_file' }).last().locator('.tool-review').innerText(), 'rejected');
});

test('Accept Hunk / Reject Hunk from the palette act on the hunk under the cursor', async () => {
  const f = await wb.chatFrame();
  await f.locator('#prompt').fill('Capitalise the first and last lines.');
  await f.locator('#prompt').press('Enter');
  await until('the diff', () => page.locator('.tab.active', { hasText: 'notes.txt (agentls: proposed)' }).isVisible(), 30_000);
  const modified = page.locator('.monaco-diff-editor .editor.modified');
  await modified.locator('.view-line', { hasText: 'NINE' }).click();
  await wb.palette('agentls: Accept Hunk');
  await until('hunk 2 accepted', () => page.locator('.monaco-diff-editor .codelens-decoration', { hasText: 'Accepted (hunk 2 of 2)' }).isVisible(), 10_000);
  await modified.locator('.view-line', { hasText: 'ONE' }).click();
  await wb.palette('agentls: Reject Hunk');
  await inputBox('');
  await until('the answer', async () => (await wb.chatText()).includes('Only the last line then.'), 30_000);
  assert.match(lastRequest(), /accepted hunks \[1\] and rejected hunks \[0\]/, lastRequest().slice(-1200));
  const editor = await openFile('notes.txt');
  const text = (await editor.locator('.view-lines').innerText()).replace(/\u00a0/g, ' ');
  assert.ok(text.includes('NINE (edited)') && text.startsWith('one'), text);
});

test('Select Model and Show Transcript', async () => {
  await wb.palette('agentls: Select Model');
  await inputBox('claude-other');
  const f = await wb.chatFrame();
  await until('the header', async () => (await f.locator('#model').innerText()) === 'claude-other', 10_000);
  await wb.palette('agentls: Show Transcript');
  await until('the transcript document', async () => {
    const t = (await page.locator('.editor-group-container .monaco-editor:visible .view-lines').first().innerText()).replace(/\u00a0/g, ' ');
    return t.includes('# agentls session') && t.includes('## You');
  }, 10_000);
});

test('Deny with a reason: the command does not run and the model gets the reason', async () => {
  const f = await wb.chatFrame();
  await f.locator('#prompt').fill('Run something.');
  await f.locator('#prompt').press('Enter');
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ state: 'visible', timeout: 30_000 });
  assert.ok((await dialog.innerText()).includes('echo never-run'));
  await dialog.locator('a.monaco-button, button', { hasText: 'Deny' }).first().click();
  await inputBox('not on this machine');
  await until('the answer', async () => (await wb.chatText()).includes('I will not run it.'), 30_000);
  assert.ok(lastRequest().includes('not on this machine'), lastRequest().slice(-800));
  const card = f.locator('.entry.tool', { hasText: 'echo never-run' }).last();
  assert.equal(await card.getAttribute('data-status'), 'error');
});
