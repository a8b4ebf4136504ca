// Folder trust, decided once (pure, unit-tested): VS Code's Workspace Trust is the user's decision
// about the folders of a window, and agentls's own trust (the server's trust store) follows it,
// so the user is never asked twice about one folder. Only a folder no VS Code decision covers (a
// root outside the workspace, or Workspace Trust turned off) gets a question of its own.

import { dirname } from 'node:path';
import type { TrustRequiredParams } from './lsp_ext';

export interface TrustFacts {
  /** `vscode.workspace.isTrusted`. */
  workspaceTrusted: boolean;
  /** `security.workspace.trust.enabled`: when off, VS Code trusts every folder without asking anyone. */
  workspaceTrustEnabled: boolean;
  /** The root is one of the window's workspace folders, or inside one. */
  inWorkspace: boolean;
}

/**
 * What to do when the server says a root needs trust:
 * - `grant`: the user trusted this workspace in VS Code; trust the folder for agentls at once.
 * - `askWorkspace`: the workspace is in Restricted Mode; point the user at VS Code's trust
 *   management, and grant when VS Code's trust is granted.
 * - `askFolder`: no decision of the user covers the folder; ask about the folder itself.
 */
export type TrustAction = 'grant' | 'askWorkspace' | 'askFolder';

export function trustAction(f: TrustFacts): TrustAction {
  if (!f.inWorkspace || !f.workspaceTrustEnabled) return 'askFolder';
  return f.workspaceTrusted ? 'grant' : 'askWorkspace';
}

/** The button of each question. */
export const TrustButton = { manage: 'Manage Workspace Trust', trustFolder: 'Trust Folder', showLog: 'Show Log' } as const;

function ignoredList(p: TrustRequiredParams): string {
  return p.ignored.map((i) => `${i.key} (${i.reason})`).join('; ');
}

/** The warning naming every ignored key, and what makes them apply. */
export function trustWarning(p: TrustRequiredParams, action: Exclude<TrustAction, 'grant'>): string {
  const n = p.ignored.length;
  const what = `agentls ignores ${n === 1 ? 'a setting' : `${n} settings`} of ${p.file} until you trust ${action === 'askWorkspace' ? 'this workspace' : 'the folder'}: ${ignoredList(p)}.`;
  return action === 'askWorkspace'
    ? `${what} VS Code is in Restricted Mode; trusting the workspace trusts the folder for agentls too.`
    : `${what} To trust it, choose ${TrustButton.trustFolder} or run: ${p.command}`;
}

/** The log line of a grant: what was trusted, why, and what applies from now on. */
export function grantedText(p: TrustRequiredParams, why: string): string {
  return `agentls trusts ${dirname(p.file)} (${why}): sessions started from now on use all of ${p.file}, including ${p.ignored.map((i) => i.key).join(', ')}.`;
}

/**
 * The roots that asked for trust and are not trusted yet, by root URI. A root asks again after a
 * server restart; the user is warned about it once per window.
 */
export class PendingTrust {
  private readonly waiting = new Map<string, TrustRequiredParams>();
  private readonly warned = new Set<string>();

  /** Records a root's request; true when the user has not been warned about this root yet. */
  add(p: TrustRequiredParams): boolean {
    this.waiting.set(p.rootUri, p);
    if (this.warned.has(p.rootUri)) return false;
    this.warned.add(p.rootUri);
    return true;
  }

  /** Every waiting root `keep` accepts, taken out of the queue. */
  take(keep: (p: TrustRequiredParams) => boolean): TrustRequiredParams[] {
    const out = [...this.waiting.values()].filter(keep);
    for (const p of out) this.waiting.delete(p.rootUri);
    return out;
  }

  get size(): number {
    return this.waiting.size;
  }
}
