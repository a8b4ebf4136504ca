// The status bar item: idle / working (current tool) / waiting for review / waiting for
// permission / server stopped. A click opens the chat.

import * as vscode from 'vscode';
import { statusText, type StatusFacts } from './status_text';

export type { StatusFacts } from './status_text';

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
