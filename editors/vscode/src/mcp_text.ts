// What the extension says about MCP servers and their tools (pure, unit-tested): the rows of the
// "agentls: MCP Servers" quick pick, the permission question of an MCP call, and how a chat card
// names a call of an MCP tool (`mcp__SERVER__TOOL`, docs/protocol.md § MCP tool calls).

import type { McpCallParams, McpServerInfo, McpServerState } from './lsp_ext';

const STATE_ICON: Record<McpServerState, string> = {
  starting: '$(loading~spin)',
  running: '$(pass)',
  failed: '$(error)',
  stopped: '$(debug-stop)',
  disabled: '$(circle-slash)',
  needs_trust: '$(shield)',
  invalid: '$(warning)',
};

export function stateText(state: McpServerState): string {
  return state === 'needs_trust' ? 'needs trust' : state;
}

/** A server as a quick pick row: its name and state, its tools, and its last error (else what it runs). */
export function serverRow(s: McpServerInfo): { label: string; description: string; detail: string } {
  const tools = s.state === 'running' ? ` · ${s.tools.length} tool${s.tools.length === 1 ? '' : 's'}` : '';
  const origin = s.origin ? ` (${s.origin})` : '';
  const detail = s.lastError
    ? `Last error: ${s.lastError}`
    : s.state === 'needs_trust'
      ? `${s.target}${origin}: a project's server starts once you trust the workspace`
      : `${s.target}${origin}`;
  return { label: `${STATE_ICON[s.state]} ${s.name}`, description: `${stateText(s.state)}${tools}`, detail };
}

/** Whether `agentls.mcpRestart` can restart it (the others cannot start as configured). */
export function restartable(s: McpServerInfo): boolean {
  return s.state === 'running' || s.state === 'failed' || s.state === 'starting';
}

/** The rows of one server's tools. */
export function toolRows(s: McpServerInfo): { label: string; description: string; detail: string }[] {
  return s.tools.map((t) => ({
    label: t.name,
    description: `${t.toolName}${t.readOnlyHint ? ' · read-only' : ''}`,
    detail: t.description?.split('\n')[0] ?? '',
  }));
}

/** The server and tool of an MCP tool's name (`mcp__github__create_issue`); undefined for other tools. */
export function mcpTool(toolName: string): { server: string; tool: string } | undefined {
  const m = /^mcp__(.+?)__(.+)$/.exec(toolName);
  return m ? { server: m[1], tool: m[2] } : undefined;
}

/** Characters of the arguments shown in a permission question. */
const SHOWN_ARGUMENTS = 2000;

/** The arguments one per line (`name: value`, values as compact JSON): a modal dialog shows the
 *  lines as they are, where it would collapse the indentation of pretty-printed JSON. */
export function argumentLines(args: unknown): string {
  const value = args ?? {};
  if (typeof value !== 'object' || Array.isArray(value)) return JSON.stringify(value);
  const entries = Object.entries(value as Record<string, unknown>);
  return entries.length ? entries.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join('\n') : '(none)';
}

/** The permission question of an MCP call: the tool and server, the arguments, what "always" stores. */
export function mcpQuestion(call: McpCallParams, cwd: string): { message: string; detail: string; always: string; what: string } {
  let args = argumentLines(call.arguments);
  if (args.length > SHOWN_ARGUMENTS) args = `${args.slice(0, SHOWN_ARGUMENTS)}…`;
  const what = `${call.server}: ${call.tool}`;
  return {
    message: `agentls wants to call the tool "${call.tool}" of the MCP server "${call.server}"`,
    detail:
      `Arguments:\n${args}\n\n${call.readOnlyHint ? 'The server says this tool only reads.\n' : ''}in ${cwd}\n\n` +
      `"Always allow" lets the tool "${call.tool}" of "${call.server}" run without asking in this project.`,
    always: `Always allow "${what}"`,
    what,
  };
}
