// Settings → the `agentls` configuration section the server parses (snake_case, key by key).
// The server checks the values: a bad one reaches it as set (test/e2e/settings.test.mjs shows
// its warning naming it, with the other settings applied).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { serverLayer, SETTING_KEYS, type UserSettings } from '../src/config';

test('nothing set: an empty layer (the server keeps its own configuration)', () => {
  assert.deepEqual(serverLayer({}), {});
});

/** One value for every setting (Required: a new setting cannot be left out here). */
const everySetting: Required<UserSettings> = {
  provider: 'anthropic',
  profile: 'code',
  model: 'claude-test',
  approval: 'auto',
  reasoningEffort: 'low',
  shellPermission: 'ask',
  shellAllow: ['cargo test', ' git status '],
  maxTurns: 40,
  maxToolRoundsPerInput: 12,
  loopDetectionEnabled: true,
  loopDetectionWindow: 6,
  oneCallPerStep: true,
  contextWindowTokens: 32768,
  toolLineLimits: { shell: 20, grep: 0 },
  toolOutputLimits: { read_file: 8000 },
  submitMode: true,
  maxSteps: 30,
  timeLimitSecs: 600,
  autoCompact: false,
  autoCompactPercent: 70,
  keepExchanges: 2,
  charsPerToken: 3,
  compactionModel: ' claude-haiku-4-5 ',
};

test('every setting maps to the server key', () => {
  assert.deepEqual(serverLayer(everySetting), {
    provider: 'anthropic',
    profile: 'code',
    model: 'claude-test',
    approval: 'auto',
    reasoning_effort: 'low',
    max_turns: 40,
    max_tool_rounds_per_input: 12,
    enable_loop_detection: true,
    loop_detection_window: 6,
    one_call_per_step: true,
    context_window_tokens: 32768,
    tool_line_limits: { shell: 20, grep: 0 },
    tool_output_limits: { read_file: 8000 },
    submit_mode: true,
    max_steps: 30,
    time_limit_secs: 600,
    context: { auto_compact: false, auto_compact_percent: 70, keep_exchanges: 2, chars_per_token: 3, compaction_model: 'claude-haiku-4-5' },
    shell: { permission: 'ask', allow: ['cargo test', 'git status'] },
  });
});

test('empty strings are not sent; an explicitly empty allow list is', () => {
  assert.deepEqual(serverLayer({ provider: '', model: '  ', reasoningEffort: '', shellAllow: [] }), { shell: { allow: [] } });
});

test('allow list entries are trimmed and blank ones dropped; a list of blanks is not sent', () => {
  assert.deepEqual(serverLayer({ shellAllow: [' cargo test ', '', '  '] }), { shell: { allow: ['cargo test'] } });
  assert.deepEqual(serverLayer({ shellAllow: ['', ' '] }), {});
});

test('null (the settings UI\'s "server configuration") and empty maps are not sent', () => {
  assert.deepEqual(
    serverLayer({
      maxTurns: null,
      maxToolRoundsPerInput: null,
      loopDetectionEnabled: null,
      loopDetectionWindow: null,
      oneCallPerStep: null,
      contextWindowTokens: null,
      toolLineLimits: {},
      toolOutputLimits: null,
      submitMode: null,
      autoCompact: null,
      charsPerToken: null,
    }),
    {},
  );
});

test('off and zero are values of their own: false switches and 0 (unlimited) counts are sent', () => {
  assert.deepEqual(serverLayer({ loopDetectionEnabled: false, oneCallPerStep: false, maxTurns: 0, maxToolRoundsPerInput: 0 }), {
    enable_loop_detection: false,
    one_call_per_step: false,
    max_turns: 0,
    max_tool_rounds_per_input: 0,
  });
});

test('a value the server refuses is sent as it is set, for the server to name; the others are sent beside it', () => {
  // settings.json can hold anything, whatever the schema says
  const settings = {
    model: 'claude-test',
    maxTurns: -1,
    maxToolRoundsPerInput: 2.5,
    loopDetectionEnabled: 'yes',
    loopDetectionWindow: 1,
    oneCallPerStep: true,
    contextWindowTokens: 0,
    toolLineLimits: { shell: 20, grep: -5, glob: '100' },
    toolOutputLimits: ['shell', 100],
    autoCompactPercent: 0,
    charsPerToken: 40,
    keepExchanges: 2,
    maxSteps: 4_294_967_296,
    reasoningEffort: 7,
    shellPermission: 'sometimes',
    shellAllow: 'cargo test',
  } as unknown as UserSettings;
  assert.deepEqual(serverLayer(settings), {
    model: 'claude-test',
    reasoning_effort: 7,
    max_turns: -1,
    max_tool_rounds_per_input: 2.5,
    enable_loop_detection: 'yes',
    loop_detection_window: 1,
    one_call_per_step: true,
    context_window_tokens: 0,
    tool_line_limits: { shell: 20, grep: -5, glob: '100' },
    tool_output_limits: ['shell', 100],
    max_steps: 4_294_967_296,
    context: { auto_compact_percent: 0, keep_exchanges: 2, chars_per_token: 40 },
    shell: { permission: 'sometimes', allow: 'cargo test' },
  });
});

// The compiled tests run from out/test/; the manifest and the server's source are files of the repository.
const extensionDir = join(__dirname, '../..');

test('the settings read are exactly the ones package.json declares (besides the server path)', () => {
  const manifest = JSON.parse(readFileSync(join(extensionDir, 'package.json'), 'utf8')) as {
    contributes: { configuration: { properties: Record<string, unknown> } };
  };
  const declared = Object.keys(manifest.contributes.configuration.properties).filter((k) => k !== 'agentls.server.path');
  assert.deepEqual(declared.sort(), SETTING_KEYS.map(([key]) => `agentls.${key}`).sort());
});

test('every key the translation sends is a field of the server\'s ConfigLayer', () => {
  const rust = readFileSync(join(extensionDir, '../../src/config/mod.rs'), 'utf8');
  const fields = (struct: string): string[] => {
    const body = rust.match(new RegExp(`pub struct ${struct} \\{([^}]*)\\}`))?.[1];
    assert.ok(body, `pub struct ${struct} in src/config/mod.rs`);
    return [...body.matchAll(/pub (\w+):/g)].map((m) => m[1]);
  };
  const layer = serverLayer(everySetting);
  const configLayer = fields('ConfigLayer');
  for (const key of Object.keys(layer)) assert.ok(configLayer.includes(key), `${key} is a ConfigLayer field`);
  const shellLayer = fields('ShellLayer');
  for (const key of Object.keys(layer.shell ?? {})) assert.ok(shellLayer.includes(key), `shell.${key} is a ShellLayer field`);
  const contextLayer = fields('ContextLayer');
  for (const key of Object.keys(layer.context ?? {})) assert.ok(contextLayer.includes(key), `context.${key} is a ContextLayer field`);
  // every setting sends one key: a setting that translates to nothing would do nothing
  const nested = ['shell', 'context'];
  const sent =
    Object.keys(layer).filter((k) => !nested.includes(k)).length + Object.keys(layer.shell ?? {}).length + Object.keys(layer.context ?? {}).length;
  assert.equal(sent, SETTING_KEYS.length);
  assert.equal(Object.keys(everySetting).length, SETTING_KEYS.length);
});
