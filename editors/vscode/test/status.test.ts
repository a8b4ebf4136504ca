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
