// Where streamed markdown may be committed: after a blank line, never inside a code fence.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { blockBoundary } from '../webview/markdown';

test('a blank line ends a block', () => {
  const t = 'para one\n\npara two';
  assert.equal(blockBoundary(t, 0), 'para one\n\n'.length);
});

test('blank lines inside a fence do not', () => {
  const t = 'intro\n\n```rust\nfn a() {}\n\nfn b() {}\n';
  assert.equal(blockBoundary(t, 0), 'intro\n\n'.length);
  const closed = `${t}\`\`\`\n\nafter`;
  assert.equal(blockBoundary(closed, 0), closed.length - 'after'.length);
});

test('the search starts at the last boundary', () => {
  const t = 'a\n\nb\n\nc';
  assert.equal(blockBoundary(t, 3), 6);
});
