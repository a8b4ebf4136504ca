// The extension's settings, read in one place, and their translation into the server's
// configuration layer (the `agentls` section served by workspace/configuration and sent as
// initializationOptions). Only values the user set are sent, so the server's own configuration
// files keep applying to everything else; the server parses the layer strictly, so only its
// known snake_case keys appear.

export interface UserSettings {
  provider?: string;
  model?: string;
  approval?: string;
  reasoningEffort?: string;
  shellPermission?: string;
  shellAllow?: string[];
}

export interface ServerLayer {
  provider?: string;
  model?: string;
  approval?: string;
  reasoning_effort?: string;
  shell?: { permission?: string; allow?: string[] };
}

export function serverLayer(s: UserSettings): ServerLayer {
  const layer: ServerLayer = {};
  const str = (v: string | undefined): string | undefined => (typeof v === 'string' && v.trim() ? v.trim() : undefined);
  const provider = str(s.provider);
  const model = str(s.model);
  const approval = str(s.approval);
  const effort = str(s.reasoningEffort);
  if (provider) layer.provider = provider;
  if (model) layer.model = model;
  if (approval) layer.approval = approval;
  if (effort) layer.reasoning_effort = effort;
  const shell: NonNullable<ServerLayer['shell']> = {};
  const permission = str(s.shellPermission);
  if (permission) shell.permission = permission;
  if (Array.isArray(s.shellAllow)) {
    const allow = s.shellAllow.filter((a) => typeof a === 'string' && a.trim()).map((a) => a.trim());
    if (allow.length || s.shellAllow.length === 0) shell.allow = allow;
  }
  if (Object.keys(shell).length) layer.shell = shell;
  return layer;
}

/** The setting keys under `agentls.` and the field each fills. */
export const SETTING_KEYS: readonly (readonly [string, keyof UserSettings])[] = [
  ['provider', 'provider'],
  ['model', 'model'],
  ['approval', 'approval'],
  ['reasoningEffort', 'reasoningEffort'],
  ['shell.permission', 'shellPermission'],
  ['shell.allow', 'shellAllow'],
];
