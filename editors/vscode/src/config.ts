// The extension's settings, read in one place, and their translation into the server's
// configuration layer (the `agentls` section served by workspace/configuration and sent as
// initializationOptions). Only values the user set are sent, so the server's own configuration
// files keep applying to everything else; the server parses the layer strictly, so only its
// known snake_case keys appear.
//
// Invariant: a number, switch or limit the server would refuse is left out of the layer and
// reported as a `SettingProblem`. The server refuses a whole layer for one bad value, so sending
// it would silently drop every other setting too.

export interface UserSettings {
  provider?: string;
  profile?: string;
  model?: string;
  approval?: string;
  reasoningEffort?: string;
  shellPermission?: string;
  shellAllow?: string[];
  maxTurns?: number | null;
  maxToolRoundsPerInput?: number | null;
  loopDetectionEnabled?: boolean | null;
  loopDetectionWindow?: number | null;
  oneCallPerStep?: boolean | null;
  contextWindowTokens?: number | null;
  toolLineLimits?: Record<string, number> | null;
  toolOutputLimits?: Record<string, number> | null;
  submitMode?: boolean | null;
  maxSteps?: number | null;
  timeLimitSecs?: number | null;
  autoCompact?: boolean | null;
  autoCompactPercent?: number | null;
  keepExchanges?: number | null;
  charsPerToken?: number | null;
  compactionModel?: string;
}

export interface ServerLayer {
  provider?: string;
  profile?: string;
  model?: string;
  approval?: string;
  reasoning_effort?: string;
  max_turns?: number;
  max_tool_rounds_per_input?: number;
  enable_loop_detection?: boolean;
  loop_detection_window?: number;
  one_call_per_step?: boolean;
  context_window_tokens?: number;
  tool_line_limits?: Record<string, number>;
  tool_output_limits?: Record<string, number>;
  submit_mode?: boolean;
  max_steps?: number;
  time_limit_secs?: number;
  context?: {
    auto_compact?: boolean;
    auto_compact_percent?: number;
    keep_exchanges?: number;
    chars_per_token?: number;
    compaction_model?: string;
  };
  shell?: { permission?: string; allow?: string[] };
}

/** A set value the server would refuse, left out of the layer. */
export interface SettingProblem {
  /** The full setting name (`agentls.loopDetection.window`). */
  setting: string;
  /** The entry of a map setting that is wrong (the tool name of `agentls.toolLineLimits`). */
  entry?: string;
  /** The value as it is set, as JSON. */
  value: string;
  /** What the server accepts there. */
  expected: string;
}

export interface Translation {
  layer: ServerLayer;
  problems: SettingProblem[];
}

/** The setting keys under `agentls.` and the field each fills. */
export const SETTING_KEYS: readonly (readonly [string, keyof UserSettings])[] = [
  ['provider', 'provider'],
  ['profile', 'profile'],
  ['model', 'model'],
  ['approval', 'approval'],
  ['reasoningEffort', 'reasoningEffort'],
  ['shell.permission', 'shellPermission'],
  ['shell.allow', 'shellAllow'],
  ['maxTurns', 'maxTurns'],
  ['maxToolRoundsPerInput', 'maxToolRoundsPerInput'],
  ['loopDetection.enabled', 'loopDetectionEnabled'],
  ['loopDetection.window', 'loopDetectionWindow'],
  ['oneCallPerStep', 'oneCallPerStep'],
  ['contextWindowTokens', 'contextWindowTokens'],
  ['toolLineLimits', 'toolLineLimits'],
  ['toolOutputLimits', 'toolOutputLimits'],
  ['submitMode', 'submitMode'],
  ['maxSteps', 'maxSteps'],
  ['timeLimitSecs', 'timeLimitSecs'],
  ['context.autoCompact', 'autoCompact'],
  ['context.autoCompactPercent', 'autoCompactPercent'],
  ['context.keepExchanges', 'keepExchanges'],
  ['context.charsPerToken', 'charsPerToken'],
  ['context.compactionModel', 'compactionModel'],
];

/** The largest value of the server's 32-bit counters (`max_turns`, `max_tool_rounds_per_input`). */
const U32_MAX = 4_294_967_295;

function settingName(field: keyof UserSettings): string {
  return `agentls.${SETTING_KEYS.find(([, f]) => f === field)?.[0] ?? field}`;
}

/** Translates the settings into the server's layer, leaving out (and reporting) what it would refuse. */
export function translateSettings(s: UserSettings): Translation {
  const layer: ServerLayer = {};
  const problems: SettingProblem[] = [];
  const refuse = (setting: string, value: unknown, expected: string, entry?: string): undefined => {
    problems.push({ setting, ...(entry === undefined ? {} : { entry }), value: JSON.stringify(value) ?? String(value), expected });
    return undefined;
  };
  const str = (v: string | undefined): string | undefined => (typeof v === 'string' && v.trim() ? v.trim() : undefined);
  // null is what an unset nullable setting reads as: "the server's configuration".
  const whole = (setting: string, v: unknown, min: number, max: number, expected: string, entry?: string): number | undefined => {
    if (v === undefined || v === null) return undefined;
    return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max ? v : refuse(setting, v, expected, entry);
  };
  const flag = (field: keyof UserSettings): boolean | undefined => {
    const v: unknown = s[field];
    if (v === undefined || v === null) return undefined;
    return typeof v === 'boolean' ? v : refuse(settingName(field), v, 'true, false, or null for the server configuration');
  };
  const limits = (field: 'toolLineLimits' | 'toolOutputLimits', unit: string, expected: string): Record<string, number> | undefined => {
    const v: unknown = s[field];
    const name = settingName(field);
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'object' || Array.isArray(v)) return refuse(name, v, `an object mapping tool names to ${unit}, e.g. { "shell": 100 }`);
    const out: Record<string, number> = {};
    for (const [tool, limit] of Object.entries(v as Record<string, unknown>)) {
      const n = whole(name, limit, 0, Number.MAX_SAFE_INTEGER, expected, tool);
      if (n !== undefined) out[tool] = n;
    }
    return Object.keys(out).length ? out : undefined;
  };

  const provider = str(s.provider);
  const profile = str(s.profile);
  const model = str(s.model);
  const approval = str(s.approval);
  const effort = str(s.reasoningEffort);
  if (provider) layer.provider = provider;
  if (profile) layer.profile = profile;
  if (model) layer.model = model;
  if (approval) layer.approval = approval;
  if (effort) layer.reasoning_effort = effort;

  const turns = whole(settingName('maxTurns'), s.maxTurns, 0, U32_MAX, 'a whole number of model turns, 0 for unlimited');
  const rounds = whole(settingName('maxToolRoundsPerInput'), s.maxToolRoundsPerInput, 0, U32_MAX, 'a whole number of tool rounds, 0 for unlimited');
  const detect = flag('loopDetectionEnabled');
  const window = whole(
    settingName('loopDetectionWindow'),
    s.loopDetectionWindow,
    2,
    Number.MAX_SAFE_INTEGER,
    `a whole number of tool calls, at least 2 (to turn loop detection off, set ${settingName('loopDetectionEnabled')} to false)`,
  );
  const oneCall = flag('oneCallPerStep');
  const contextWindow = whole(settingName('contextWindowTokens'), s.contextWindowTokens, 1, Number.MAX_SAFE_INTEGER, 'a whole number of tokens, greater than 0');
  const lineLimits = limits('toolLineLimits', 'line counts', 'a whole number of lines, 0 for no line limit');
  const outputLimits = limits('toolOutputLimits', 'character counts', 'a whole number of characters, 0 or more');
  if (turns !== undefined) layer.max_turns = turns;
  if (rounds !== undefined) layer.max_tool_rounds_per_input = rounds;
  if (detect !== undefined) layer.enable_loop_detection = detect;
  if (window !== undefined) layer.loop_detection_window = window;
  if (oneCall !== undefined) layer.one_call_per_step = oneCall;
  if (contextWindow !== undefined) layer.context_window_tokens = contextWindow;
  if (lineLimits) layer.tool_line_limits = lineLimits;
  if (outputLimits) layer.tool_output_limits = outputLimits;

  const submit = flag('submitMode');
  const steps = whole(settingName('maxSteps'), s.maxSteps, 0, U32_MAX, 'a whole number of model requests, 0 for unlimited');
  const seconds = whole(settingName('timeLimitSecs'), s.timeLimitSecs, 0, Number.MAX_SAFE_INTEGER, 'a whole number of seconds, 0 for unlimited');
  if (submit !== undefined) layer.submit_mode = submit;
  if (steps !== undefined) layer.max_steps = steps;
  if (seconds !== undefined) layer.time_limit_secs = seconds;

  const context: NonNullable<ServerLayer['context']> = {};
  const autoCompact = flag('autoCompact');
  const percent = whole(settingName('autoCompactPercent'), s.autoCompactPercent, 1, 100, `a percentage from 1 to 100 (to turn compaction off, set ${settingName('autoCompact')} to false)`);
  const keep = whole(settingName('keepExchanges'), s.keepExchanges, 1, Number.MAX_SAFE_INTEGER, 'a whole number of exchanges, at least 1');
  const cpt = whole(settingName('charsPerToken'), s.charsPerToken, 1, 32, 'a whole number of characters from 1 to 32');
  const compactionModel = str(s.compactionModel);
  if (autoCompact !== undefined) context.auto_compact = autoCompact;
  if (percent !== undefined) context.auto_compact_percent = percent;
  if (keep !== undefined) context.keep_exchanges = keep;
  if (cpt !== undefined) context.chars_per_token = cpt;
  if (compactionModel) context.compaction_model = compactionModel;
  if (Object.keys(context).length) layer.context = context;

  const shell: NonNullable<ServerLayer['shell']> = {};
  const permission = str(s.shellPermission);
  if (permission) shell.permission = permission;
  if (Array.isArray(s.shellAllow)) {
    const allow = s.shellAllow.filter((a) => typeof a === 'string' && a.trim()).map((a) => a.trim());
    if (allow.length || s.shellAllow.length === 0) shell.allow = allow;
  }
  if (Object.keys(shell).length) layer.shell = shell;
  return { layer, problems };
}

/** The layer the server receives for these settings. */
export function serverLayer(s: UserSettings): ServerLayer {
  return translateSettings(s).layer;
}

/** One message for the user naming every setting that was left out and what it takes instead. */
export function problemsMessage(problems: readonly SettingProblem[]): string | undefined {
  if (!problems.length) return undefined;
  const each = problems.map((p) => `${p.setting}${p.entry === undefined ? '' : `[${JSON.stringify(p.entry)}]`} is ${p.value}, expected ${p.expected}`);
  return `agentls: ${problems.length === 1 ? 'this setting was' : 'these settings were'} not sent to the server (the rest were): ${each.join('; ')}.`;
}
