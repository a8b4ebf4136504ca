// The status bar item: idle / working (current tool) / waiting for review / waiting for
// permission / server stopped. A click opens the chat.

import * as vscode from 'vscode';

export interface StatusFacts {
  server: 'starting' | 'running' | 'stopped' | 'missing';
  busy: boolean;
  currentTool?: string;
  pendingReviewFiles: number;
  pendingPermissions: number;
}

export function statusText(s: StatusFacts): { text: string; tooltip: string; warn: boolean } {
  if (s.server === 'missing') return { text: '$(warning) agentls: not installed', tooltip: 'The agentls server was not found', warn: true };
  if (s.server === 'stopped') return { text: '$(error) agentls: stopped', tooltip: 'The agentls server is not running (agentls: Restart Server)', warn: true };
  if (s.server === 'starting') return { text: '$(loading~spin) agentls', tooltip: 'Starting the agentls server', warn: false };
  if (s.pendingPermissions) return { text: '$(shield) agentls: waiting for permission', tooltip: 'A command waits for your permission', warn: true };
  if (s.pendingReviewFiles) {
    const n = s.pendingReviewFiles;
    return { text: `$(diff) agentls: ${n} change${n === 1 ? '' : 's'} to review`, tooltip: 'Proposed changes wait for your review', warn: true };
  }
  if (s.busy) return { text: `$(loading~spin) agentls: ${s.currentTool ?? 'working'}`, tooltip: 'The agent is working (click to open the chat)', warn: false };
  return { text: '$(comment-discussion) agentls', tooltip: 'agentls: idle (click to open the chat)', warn: false };
}

export class StatusDisplay implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('agentls.status', vscode.StatusBarAlignment.Left, 10);

  constructor() {
    this.item.name = 'agentls';
    this.item.command = 'agentls.vscode.openChat';
    this.item.show();
  }

  update(facts: StatusFacts): void {
    const s = statusText(facts);
    this.item.text = s.text;
    this.item.tooltip = s.tooltip;
    this.item.backgroundColor = s.warn ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
