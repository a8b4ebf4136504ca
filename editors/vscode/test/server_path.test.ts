// Finding the server: the setting, else PATH, else cargo's bin directory; a clear error otherwise.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { findServer } from '../src/server_path';

const dir = mkdtempSync(join(tmpdir(), 'agentls-path-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const bin = (sub: string): string => {
  mkdirSync(join(dir, sub), { recursive: true });
  const p = join(dir, sub, 'agentls');
  writeFileSync(p, '#!/bin/sh\n');
  chmodSync(p, 0o755);
  return p;
};
const onPath = bin('path');
const inCargo = bin('cargo/bin');

test('the setting wins when it names an executable', () => {
  assert.deepEqual(findServer(onPath, { PATH: '' }), { path: onPath });
});

test('a setting that names nothing is an error that names it', () => {
  const r = findServer('/nowhere/agentls', { PATH: join(dir, 'path') });
  assert.ok('error' in r && r.error.includes('/nowhere/agentls'));
});

test('else PATH, else $CARGO_HOME/bin', () => {
  assert.deepEqual(findServer('', { PATH: `/nonexistent:${join(dir, 'path')}` }), { path: onPath });
  assert.deepEqual(findServer(undefined, { PATH: '/nonexistent', CARGO_HOME: join(dir, 'cargo') }), { path: inCargo });
});

test('nothing anywhere: an error saying so', () => {
  const r = findServer('', { PATH: '/nonexistent', CARGO_HOME: join(dir, 'none') });
  assert.ok('error' in r && r.error.includes('not installed'));
});
