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

/** Every setting (Required: a new setting cannot be left out here) with one value, the server
 *  key it is sent as (`shell.` and `context.` keys nested) and, where it differs, what is sent. */
const everyMapping: { [K in keyof Required<UserSettings>]: [Required<UserSettings>[K], string, unknown?] } = {
  provider: ['anthropic', 'provider'],
  profile: ['code', 'profile'],
  model: ['claude-test', 'model'],
  approval: ['auto', 'approval'],
  reasoningEffort: ['low', 'reasoning_effort'],
  shellPermission: ['ask', 'shell.permission'],
  shellAllow: [['cargo test', ' git status '], 'shell.allow', ['cargo test', 'git status']],
  maxTurns: [40, 'max_turns'],
  maxToolRoundsPerInput: [12, 'max_tool_rounds_per_input'],
  loopDetectionEnabled: [true, 'enable_loop_detection'],
  loopDetectionWindow: [6, 'loop_detection_window'],
  oneCallPerStep: [true, 'one_call_per_step'],
  contextWindowTokens: [32768, 'context_window_tokens'],
  toolLineLimits: [{ shell: 20, grep: 0 }, 'tool_line_limits'],
  toolOutputLimits: [{ read_file: 8000 }, 'tool_output_limits'],
  submitMode: [true, 'submit_mode'],
  maxSteps: [30, 'max_steps'],
  timeLimitSecs: [600, 'time_limit_secs'],
  autoCompact: [false, 'context.auto_compact'],
  autoCompactPercent: [70, 'context.auto_compact_percent'],
  keepExchanges: [2, 'context.keep_exchanges'],
  charsPerToken: [3, 'context.chars_per_token'],
  compactionModel: [' claude-haiku-4-5 ', 'context.compaction_model', 'claude-haiku-4-5'],
};

/** A table's settings: each setting with its value. */
function settingsOf(table: Record<string, readonly [unknown, string, unknown?]>): UserSettings {
  return Object.fromEntries(Object.entries(table).map(([setting, [value]]) => [setting, value])) as UserSettings;
}

/** What the server layer of a table's settings holds: each value sent under its key. */
function layerOf(table: Record<string, readonly [unknown, string, unknown?]>): Record<string, unknown> {
  const layer: Record<string, unknown> = {};
  for (const [value, key, sent = value] of Object.values(table)) {
    const [outer, inner] = key.split('.');
    if (inner === undefined) layer[outer] = sent;
    else ((layer[outer] ??= {}) as Record<string, unknown>)[inner] = sent;
  }
  return layer;
}

const everySetting = settingsOf(everyMapping) as Required<UserSettings>;

test('every setting maps to the server key', () => {
  assert.deepEqual(serverLayer(everySetting), layerOf(everyMapping));
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
  // settings.json can hold anything, whatever the schema says: [value, the key it is sent as]
  const refused: Record<string, [unknown, string]> = {
    model: ['claude-test', 'model'],
    maxTurns: [-1, 'max_turns'],
    maxToolRoundsPerInput: [2.5, 'max_tool_rounds_per_input'],
    loopDetectionEnabled: ['yes', 'enable_loop_detection'],
    loopDetectionWindow: [1, 'loop_detection_window'],
    oneCallPerStep: [true, 'one_call_per_step'],
    contextWindowTokens: [0, 'context_window_tokens'],
    toolLineLimits: [{ shell: 20, grep: -5, glob: '100' }, 'tool_line_limits'],
    toolOutputLimits: [['shell', 100], 'tool_output_limits'],
    autoCompactPercent: [0, 'context.auto_compact_percent'],
    charsPerToken: [40, 'context.chars_per_token'],
    keepExchanges: [2, 'context.keep_exchanges'],
    maxSteps: [4_294_967_296, 'max_steps'],
    reasoningEffort: [7, 'reasoning_effort'],
    shellPermission: ['sometimes', 'shell.permission'],
    shellAllow: ['cargo test', 'shell.allow'],
  };
  assert.deepEqual(serverLayer(settingsOf(refused)), layerOf(refused));
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
