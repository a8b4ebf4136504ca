// The extension's settings, read in one place, and their translation into the server's
// configuration layer (the `agentls` section served by workspace/configuration and sent as
// initializationOptions): camelCase settings become the server's snake_case keys. Only values the
// user set are sent, so the server's own configuration files keep applying to everything else.
//
// Invariant: a set value is sent as it is; the server checks it. It checks the layer key by key:
// a bad value is left out and named in a `window/showMessage` warning, and the other settings
// apply (docs/configuration.md), so the extension does not check values a second time.

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

// The helpers are typed as package.json declares the settings; a value of another type (the
// settings file can hold anything) goes through them unchanged, for the server to name.

/** A string setting: trimmed; blank is unset (the settings UI's empty choice). */
function text(v: string | undefined): string | undefined {
  return typeof v === 'string' ? v.trim() || undefined : v;
}

/** `null` is the settings UI's "server configuration": unset. */
function value<T>(v: T | null | undefined): T | undefined {
  return v ?? undefined;
}

/** A map of tool limits: an empty one is unset. */
function limits(v: Record<string, number> | null | undefined): Record<string, number> | undefined {
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0) return undefined;
  return value(v);
}

/** An allow list: entries trimmed, blank ones dropped (a list of blanks is unset); an explicitly
 *  empty list is sent. */
function allowList(v: string[] | undefined): string[] | undefined {
  if (!Array.isArray(v)) return v;
  const allow = v.filter((a) => typeof a !== 'string' || a.trim()).map((a) => (typeof a === 'string' ? a.trim() : a));
  return allow.length || v.length === 0 ? allow : undefined;
}

/** The fields of `o` that are set; `undefined` when none is. */
function defined<T extends object>(o: T): T | undefined {
  const set = Object.entries(o).filter(([, v]) => v !== undefined);
  return set.length ? (Object.fromEntries(set) as T) : undefined;
}

/** The layer the server receives for these settings: each one set, under its server key. */
export function serverLayer(s: UserSettings): ServerLayer {
  const layer: ServerLayer = {
    provider: text(s.provider),
    profile: text(s.profile),
    model: text(s.model),
    approval: text(s.approval),
    reasoning_effort: text(s.reasoningEffort),
    max_turns: value(s.maxTurns),
    max_tool_rounds_per_input: value(s.maxToolRoundsPerInput),
    enable_loop_detection: value(s.loopDetectionEnabled),
    loop_detection_window: value(s.loopDetectionWindow),
    one_call_per_step: value(s.oneCallPerStep),
    context_window_tokens: value(s.contextWindowTokens),
    tool_line_limits: limits(s.toolLineLimits),
    tool_output_limits: limits(s.toolOutputLimits),
    submit_mode: value(s.submitMode),
    max_steps: value(s.maxSteps),
    time_limit_secs: value(s.timeLimitSecs),
    context: defined({
      auto_compact: value(s.autoCompact),
      auto_compact_percent: value(s.autoCompactPercent),
      keep_exchanges: value(s.keepExchanges),
      chars_per_token: value(s.charsPerToken),
      compaction_model: text(s.compactionModel),
    }),
    shell: defined({ permission: text(s.shellPermission), allow: allowList(s.shellAllow) }),
  };
  return defined(layer) ?? {};
}
