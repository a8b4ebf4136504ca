// Settings → the `agentls` configuration section the server parses (strictly, snake_case).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serverLayer } from '../src/config';

test('nothing set: an empty layer (the server keeps its own configuration)', () => {
  assert.deepEqual(serverLayer({}), {});
});

test('every setting maps to the server key', () => {
  assert.deepEqual(
    serverLayer({ provider: 'anthropic', model: 'claude-test', approval: 'auto', reasoningEffort: 'low', shellPermission: 'ask', shellAllow: ['cargo test', ' git status '] }),
    { provider: 'anthropic', model: 'claude-test', approval: 'auto', reasoning_effort: 'low', shell: { permission: 'ask', allow: ['cargo test', 'git status'] } },
  );
});

test('empty strings are not sent; an explicitly empty allow list is', () => {
  assert.deepEqual(serverLayer({ provider: '', model: '  ', reasoningEffort: '', shellAllow: [] }), { shell: { allow: [] } });
});
