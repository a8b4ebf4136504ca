// "agentls: MCP Servers": a quick pick of the MCP servers a session in the workspace uses
// (`agentls.mcpServers`), each with its state, tools and last error; picking one shows its tools
// and offers Restart (`agentls.mcpRestart`). Nothing here waits on a server: the list is what
// the server knows now.

import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import { ServerCommand, type McpServerInfo } from './lsp_ext';
import { restartable, serverRow, stateText, toolRows } from './mcp_text';

type ServerItem = vscode.QuickPickItem & { server: McpServerInfo };
type ActionItem = vscode.QuickPickItem & { restart?: true };

export async function showMcpServers(ctx: Ctx): Promise<void> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const rootUri = folder?.uri.toString();
  const list = await ctx.exec(ServerCommand.mcpServers, rootUri ? { rootUri } : {});
  if (!list.servers.length) {
    void vscode.window.showInformationMessage('agentls: no MCP servers are configured (add them to .mcp.json or [mcp_servers] in your agentls config).');
    return;
  }
  const picked = await vscode.window.showQuickPick<ServerItem>(
    list.servers.map((server) => ({ ...serverRow(server), server })),
    { title: 'agentls: MCP servers', placeHolder: 'Pick a server to see its tools or restart it', matchOnDescription: true, matchOnDetail: true },
  );
  if (!picked) return;
  const server = picked.server;
  const items: ActionItem[] = [
    ...(restartable(server) ? [{ label: '$(debug-restart) Restart', description: `end "${server.name}" and start it again`, restart: true as const }] : []),
    ...(server.tools.length ? [{ label: 'Tools', kind: vscode.QuickPickItemKind.Separator }] : []),
    ...toolRows(server),
  ];
  if (!items.length) {
    void vscode.window.showInformationMessage(`agentls: the MCP server "${server.name}" is ${stateText(server.state)}${server.lastError ? `: ${server.lastError}` : ''}`);
    return;
  }
  const action = await vscode.window.showQuickPick<ActionItem>(items, {
    title: `MCP server ${server.name}: ${stateText(server.state)}`,
    placeHolder: server.lastError ? `Last error: ${server.lastError}` : server.target,
  });
  if (!action?.restart) return;
  const restarted = await ctx.exec(ServerCommand.mcpRestart, { name: server.name, ...(rootUri ? { rootUri } : {}) });
  ctx.output.info(`restarted the MCP server ${restarted.name}: ${restarted.state}`);
  void vscode.window.showInformationMessage(`agentls: the MCP server "${restarted.name}" is ${stateText(restarted.state)}.`);
}
