// The status bar item: what it says for each state, most urgent first.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { statusText, type StatusFacts } from '../src/status_text';

const idle: StatusFacts = { server: 'running', busy: false, pendingReviewFiles: 0, pendingPermissions: 0 };

test('idle, working with the current tool, waiting for review or permission', () => {
  assert.equal(statusText(idle).text, '$(comment-discussion) agentls');
  assert.equal(statusText({ ...idle, busy: true, currentTool: 'shell: cargo test' }).text, '$(loading~spin) agentls: shell: cargo test');
  assert.equal(statusText({ ...idle, busy: true, pendingReviewFiles: 1 }).text, '$(diff) agentls: 1 change to review');
  assert.equal(statusText({ ...idle, busy: true, pendingReviewFiles: 3 }).text, '$(diff) agentls: 3 changes to review');
  assert.equal(statusText({ ...idle, busy: true, pendingReviewFiles: 3, pendingPermissions: 1 }).text, '$(shield) agentls: waiting for permission');
});

test('a missing or stopped server says so first', () => {
  assert.equal(statusText({ ...idle, server: 'missing', pendingPermissions: 1 }).text, '$(warning) agentls: not installed');
  assert.equal(statusText({ ...idle, server: 'stopped', busy: true }).text, '$(error) agentls: stopped');
});

test('the active session\'s context use: share of the window, and the calibration in the tooltip', () => {
  const context = { estimateTokens: 41250, calibration: 1.1234, contextWindow: 200000 };
  const s = statusText({ ...idle, context });
  assert.equal(s.text, '$(comment-discussion) agentls · 20%');
  assert.equal(s.tooltip, 'agentls: idle (click to open the chat)\nContext: ~41,250 of 200,000 tokens (20%), estimate calibrated ×1.12 by the provider\'s counts');
  assert.equal(statusText({ ...idle, busy: true, currentTool: 'shell: ls', context }).text, '$(loading~spin) agentls: shell: ls · 20%');
  assert.equal(statusText({ ...idle, context: { ...context, contextWindow: 0 } }).text, '$(comment-discussion) agentls');
});
