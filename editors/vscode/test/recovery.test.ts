// When the server dies: the restart budget, what the chat says at once and after the session is
// reopened, and the chat store's reopening (the server's history replaces what the chat held).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ChatOp, Entry } from '../src/chat/model';
import { ChatStore } from '../src/chat/store';
import { lossNotice, mergeLoss, reopenNotice, RestartBudget, sessionLabel, type Loss } from '../src/recovery';

test('at most 3 restarts within 3 minutes; the window slides', () => {
  const budget = new RestartBudget();
  const minute = 60_000;
  // a refused restart is not counted; one leaves the window 3 minutes after it was taken
  assert.deepEqual([0, 1, 2, 2.5, 3, 3.1, 3.2, 7].map((m) => budget.take(m * minute)), [1, 2, 3, undefined, undefined, 3, undefined, 1]);
});

const crash: Loss = { cause: 'crash', restart: { n: 1, max: 3 }, turnRunning: true, reviews: 0, permissions: [] };

test('the chat says at once that the server stopped, what was interrupted and what was dropped', () => {
  assert.equal(lossNotice(crash), 'agentls stopped unexpectedly; restarting it (1 of 3)… The turn that was running was interrupted.');
  assert.equal(
    lossNotice({ ...crash, restart: { n: 2, max: 3 }, reviews: 2, permissions: ['touch marker.txt'] }),
    'agentls stopped unexpectedly; restarting it (2 of 3)… The turn that was running was interrupted. 2 reviews were closed: nothing of them was applied. The permission question for "touch marker.txt" was dropped: nothing ran.',
  );
  assert.equal(
    lossNotice({ ...crash, restart: undefined, turnRunning: false, reviews: 1 }, { stops: 4, minutes: 3 }),
    'agentls stopped unexpectedly 4 times within 3 minutes and was not restarted. Run "agentls: Restart Server" to start it again and reopen this session; "agentls: Show Log" shows why it stopped. 1 review was closed: nothing of it was applied.',
  );
  assert.equal(lossNotice({ cause: 'restart', turnRunning: false, reviews: 0, permissions: ['a', 'b'] }), 'agentls is being restarted. The permission questions for "a", "b" were dropped: nothing ran.');
});

test('once the session is reopened the chat says so, with what went down before', () => {
  const label = sessionLabel('0b6c1234-5678', 'Run the slow build please.\nand then test');
  assert.equal(label, '"Run the slow build please."');
  assert.equal(
    reopenNotice(crash, label, { reopened: true, historyEntries: 5 }),
    'agentls stopped unexpectedly and was restarted; session "Run the slow build please." reopened with its history (5 entries). The turn that was running was interrupted.',
  );
  assert.equal(reopenNotice({ cause: 'restart', turnRunning: false, reviews: 0, permissions: [] }, 'x', { reopened: true }), 'agentls was restarted; session x reopened.');
  assert.equal(
    reopenNotice({ ...crash, turnRunning: false }, '0b6c1234', { reopened: false, reason: 'no data directory: sessions are not stored' }),
    'agentls stopped unexpectedly and was restarted; session 0b6c1234 could not be reopened: no data directory: sessions are not stored. Your next message starts a new session; "agentls: Switch Session" lists the stored ones.',
  );
});

test('a session is named by its first prompt (shortened), else by the start of its id', () => {
  assert.equal(sessionLabel('0b6c1234-5678-90ab'), '0b6c1234');
  assert.equal(sessionLabel('0b6c1234-5678-90ab', '  '), '0b6c1234');
  assert.equal(sessionLabel('s', 'x'.repeat(80)), `"${'x'.repeat(59)}…"`);
});

test('a second death before the session was reopened adds up with the first', () => {
  const second: Loss = { cause: 'restart', turnRunning: false, reviews: 1, permissions: ['ls'] };
  assert.deepEqual(mergeLoss({ ...crash, permissions: ['make'] }, second), {
    cause: 'crash',
    restart: undefined,
    turnRunning: true,
    reviews: 1,
    permissions: ['make', 'ls'],
  });
});

/** What a user sees of each entry. */
function visible(entries: readonly Entry[]): unknown[] {
  return entries.map((e) => {
    switch (e.kind) {
      case 'user': return { user: e.text };
      case 'assistant': return { assistant: e.text, streaming: e.streaming };
      case 'tool': return { tool: e.summary, status: e.status };
      case 'notice': return { notice: e.level, text: e.text };
      case 'turn_end': return { turnEnd: e.reason };
    }
  });
}

test('reopening: the chat is interrupted at once, then the server\'s history replaces it and the views start over', () => {
  const store = new ChatStore();
  const ev = (kind: string, data: object): ChatOp => ({ sessionId: 's1', kind, timestamp: '', data }) as ChatOp;
  store.setActive('s1');
  for (const op of [
    ev('user_input', { content: 'Run the slow build please.' }),
    ev('assistant_text_start', { model: 'm' }),
    ev('assistant_text_delta', { delta: 'Starting the slow build.' }),
    ev('tool_call_start', { tool_name: 'shell', call_id: 'c1', summary: 'shell: sleep 120', arguments: '{}' }),
  ]) store.apply('s1', op);
  store.apply('s1', { kind: 'interrupted', text: lossNotice(crash) });
  assert.deepEqual(visible(store.model('s1').entries), [
    { user: 'Run the slow build please.' },
    { assistant: 'Starting the slow build.', streaming: false },
    { tool: 'shell: sleep 120', status: 'cancelled' },
    { notice: 'error', text: lossNotice(crash) },
  ]);
  assert.equal(store.model('s1').header.busy, false);

  const viewResets: (string | undefined)[] = [];
  store.onActive((id) => viewResets.push(id));
  store.reset('s1');
  store.apply('s1', { kind: 'history', entries: [
    { kind: 'user', text: 'Remember the word pelican.', timestamp: '…' },
    { kind: 'assistant', text: 'Noted.', reasoning: null, timestamp: '…', toolCalls: [] },
    { kind: 'user', text: 'Run the slow build please.', timestamp: '…' },
    { kind: 'assistant', text: 'Starting the slow build.', reasoning: null, timestamp: '…', toolCalls: [{ callId: 'c1', toolName: 'shell', summary: 'shell: sleep 120', arguments: { command: 'sleep 120' } }] },
  ] });
  const notice = reopenNotice(crash, '"Remember the word pelican."', { reopened: true, historyEntries: 4 });
  store.apply('s1', { kind: 'notice', level: 'info', text: notice });
  assert.deepEqual(viewResets, ['s1'], 'the view showing the session starts over from the reset model');
  assert.deepEqual(visible(store.model('s1').entries), [
    { user: 'Remember the word pelican.' },
    { assistant: 'Noted.', streaming: false },
    { user: 'Run the slow build please.' },
    { assistant: 'Starting the slow build.', streaming: false },
    { tool: 'shell: sleep 120', status: 'cancelled' },
    { notice: 'info', text: notice },
  ]);
  assert.deepEqual({ ...store.model('s1').header }, { sessionId: 's1', busy: false, currentTool: undefined });

  store.reset('other');
  assert.deepEqual(viewResets, ['s1'], 'resetting a session no view shows leaves the views alone');
});
