// `agentls/permission`: a modal prompt naming the command and its folder, answered with
// `agentls.resolvePermission`. Questions are asked one at a time, in arrival order.

import * as vscode from 'vscode';
import type { PermissionDecision, PermissionParams, ResolvePermissionParams } from './lsp_ext';

/** The rule "Always allow" stores: the command's first two words (docs/protocol.md § Permissions). */
export function alwaysRule(command: string): string {
  return command.trim().split(/\s+/).slice(0, 2).join(' ');
}

export class PermissionPrompter implements vscode.Disposable {
  private chain: Promise<unknown> = Promise.resolve();
  private waiting = 0;
  private readonly changed = new vscode.EventEmitter<number>();
  /** Fires with the number of questions waiting for an answer. */
  readonly onDidChange = this.changed.event;

  constructor(private readonly resolve: (p: ResolvePermissionParams) => Promise<void>) {}

  get pending(): number {
    return this.waiting;
  }

  ask(p: PermissionParams): void {
    this.waiting++;
    this.changed.fire(this.waiting);
    this.chain = this.chain
      .then(() => this.askOne(p))
      .catch((e: unknown) => void vscode.window.showErrorMessage(`agentls: ${e instanceof Error ? e.message : String(e)}`))
      .finally(() => {
        this.waiting--;
        this.changed.fire(this.waiting);
      });
  }

  private async askOne(p: PermissionParams): Promise<void> {
    const rule = alwaysRule(p.command);
    const once = 'Allow once';
    const always = `Always allow "${rule}"`;
    const deny = 'Deny…';
    const items = [
      ...(p.options.includes('allow_once') ? [once] : []),
      ...(p.options.includes('allow_always') ? [always] : []),
      ...(p.options.includes('deny') ? [deny] : []),
    ];
    const choice = await vscode.window.showWarningMessage(
      `agentls wants to run: ${p.command}`,
      { modal: true, detail: `in ${p.cwd}\n\n"Always allow" stores the rule "${rule}" for this project: later commands starting with it run without asking.` },
      ...items,
    );
    let decision: PermissionDecision;
    let feedback: string | undefined;
    if (choice === once) decision = 'allow_once';
    else if (choice === always) decision = 'allow_always';
    else {
      decision = 'deny';
      if (choice === deny) {
        const reason = await vscode.window.showInputBox({
          title: `Deny: ${p.command}`,
          prompt: 'Why? (optional: the agent is told)',
          ignoreFocusOut: true,
        });
        feedback = reason?.trim() || undefined;
      }
    }
    await this.resolve({ requestId: p.requestId, decision, ...(feedback ? { feedback } : {}) });
  }

  dispose(): void {
    this.changed.dispose();
  }
}
