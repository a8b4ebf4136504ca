// `agentls/permission`: a modal prompt naming the command and its folder, answered with
// `agentls.resolvePermission`. Questions are asked one at a time, in arrival order. When their
// server dies they are dropped: the queued ones are never shown, and the answer to one already
// on screen (an extension cannot close a modal dialog) is not sent to the next server.

import * as vscode from 'vscode';
import type { PermissionDecision, PermissionParams, ResolvePermissionParams } from './lsp_ext';
import { mcpQuestion } from './mcp_text';

/** The rule "Always allow" stores: the command's first two words (docs/protocol.md § Permissions). */
export function alwaysRule(command: string): string {
  return command.trim().split(/\s+/).slice(0, 2).join(' ');
}

/** The question: a command with its folder, or an MCP call with its arguments (docs/protocol.md § Permissions). */
function question(p: PermissionParams): { message: string; detail: string; always: string; what: string } {
  if (p.mcp) return mcpQuestion(p.mcp, p.cwd);
  const rule = alwaysRule(p.command);
  return {
    message: `agentls wants to run: ${p.command}`,
    detail: `in ${p.cwd}\n\n"Always allow" stores the rule "${rule}" for this project: later commands starting with it run without asking.`,
    always: `Always allow "${rule}"`,
    what: p.command,
  };
}

export class PermissionPrompter implements vscode.Disposable {
  private chain: Promise<unknown> = Promise.resolve();
  /** Questions asked and not yet answered, by request id. */
  private readonly open = new Map<string, PermissionParams>();
  /** Counts the servers whose questions were dropped: a question of an older one is stale. */
  private epoch = 0;
  private readonly changed = new vscode.EventEmitter<number>();
  /** Fires with the number of questions waiting for an answer. */
  readonly onDidChange = this.changed.event;

  constructor(private readonly resolve: (p: ResolvePermissionParams) => Promise<void>) {}

  get pending(): number {
    return this.open.size;
  }

  ask(p: PermissionParams): void {
    const epoch = this.epoch;
    this.open.set(p.requestId, p);
    this.changed.fire(this.open.size);
    this.chain = this.chain
      .then(() => (epoch === this.epoch ? this.askOne(p, epoch) : undefined))
      .catch((e: unknown) => void vscode.window.showErrorMessage(`agentls: ${e instanceof Error ? e.message : String(e)}`))
      .finally(() => {
        if (this.open.get(p.requestId) === p) this.open.delete(p.requestId);
        this.changed.fire(this.open.size);
      });
  }

  /** Drops every question (their server is gone); returns them. None of them is answered. */
  dropAll(): PermissionParams[] {
    this.epoch++;
    const dropped = [...this.open.values()];
    this.open.clear();
    this.changed.fire(0);
    return dropped;
  }

  private async askOne(p: PermissionParams, epoch: number): Promise<void> {
    const q = question(p);
    const once = 'Allow once';
    const deny = 'Deny…';
    const items = [
      ...(p.options.includes('allow_once') ? [once] : []),
      ...(p.options.includes('allow_always') ? [q.always] : []),
      ...(p.options.includes('deny') ? [deny] : []),
    ];
    const choice = await vscode.window.showWarningMessage(q.message, { modal: true, detail: q.detail }, ...items);
    let decision: PermissionDecision;
    let feedback: string | undefined;
    if (choice === once) decision = 'allow_once';
    else if (choice === q.always) decision = 'allow_always';
    else {
      decision = 'deny';
      if (choice === deny) {
        const reason = await vscode.window.showInputBox({
          title: `Deny: ${q.what}`,
          prompt: 'Why? (optional: the agent is told)',
          ignoreFocusOut: true,
        });
        feedback = reason?.trim() || undefined;
      }
    }
    if (epoch !== this.epoch) {
      void vscode.window.showInformationMessage(`agentls: the question about "${p.command}" came from a server that has stopped: your answer was not sent, and the command did not run.`);
      return;
    }
    await this.resolve({ requestId: p.requestId, decision, ...(feedback ? { feedback } : {}) });
  }

  dispose(): void {
    this.changed.dispose();
  }
}
