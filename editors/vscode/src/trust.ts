// `agentls/trustRequired`: agentls's folder trust follows VS Code's Workspace Trust, one decision
// for both. In a trusted workspace the folder is trusted for agentls at once
// (`agentls.trustFolder`) and the log says so; in Restricted Mode a warning names the keys the
// server ignores and opens VS Code's trust management, and every root that asked is trusted when
// VS Code's trust is granted. What to do is decided in `trust_decision.ts`.

import * as vscode from 'vscode';
import type { TrustFolderParams, TrustFolderResult, TrustRequiredParams } from './lsp_ext';
import { grantedText, PendingTrust, TrustButton, trustAction, trustWarning, type TrustFacts } from './trust_decision';

export class TrustBroker implements vscode.Disposable {
  private readonly pending = new PendingTrust();
  private readonly disposables: vscode.Disposable[];

  constructor(
    private readonly trustFolder: (p: TrustFolderParams) => Promise<TrustFolderResult>,
    private readonly output: vscode.LogOutputChannel,
  ) {
    this.disposables = [vscode.workspace.onDidGrantWorkspaceTrust(() => void this.grantPending())];
  }

  private facts(rootUri: string): TrustFacts {
    return {
      workspaceTrusted: vscode.workspace.isTrusted,
      workspaceTrustEnabled: vscode.workspace.getConfiguration('security.workspace.trust').get<boolean>('enabled', true),
      inWorkspace: vscode.workspace.getWorkspaceFolder(vscode.Uri.parse(rootUri)) !== undefined,
    };
  }

  /** The server's `agentls/trustRequired`. */
  required(p: TrustRequiredParams): void {
    const action = trustAction(this.facts(p.rootUri));
    if (action === 'grant') {
      void this.grant(p, 'VS Code trusts this workspace');
      return;
    }
    if (!this.pending.add(p)) return;
    const message = trustWarning(p, action);
    this.output.warn(message);
    if (action === 'askWorkspace') {
      void vscode.window.showWarningMessage(message, TrustButton.manage).then((choice) => {
        if (choice) void vscode.commands.executeCommand('workbench.trust.manage');
      });
      return;
    }
    void vscode.window.showWarningMessage(message, TrustButton.trustFolder).then(async (choice) => {
      if (!choice) return;
      for (const asked of this.pending.take((q) => q.rootUri === p.rootUri)) {
        if (await this.grant(asked, `you chose ${TrustButton.trustFolder}`)) void vscode.window.showInformationMessage(grantedText(asked, 'you trusted it'));
      }
    });
  }

  /** VS Code's trust was granted: every root it now covers is trusted for agentls too. */
  private async grantPending(): Promise<void> {
    for (const p of this.pending.take((q) => trustAction(this.facts(q.rootUri)) === 'grant')) {
      if (await this.grant(p, 'you trusted the workspace in VS Code')) void vscode.window.showInformationMessage(grantedText(p, 'you trusted the workspace'));
    }
  }

  private async grant(p: TrustRequiredParams, why: string): Promise<boolean> {
    try {
      const r = await this.trustFolder({ rootUri: p.rootUri });
      if (!r.trusted) throw new Error('the server did not trust it');
      this.output.info(grantedText(p, why));
      return true;
    } catch (e) {
      const message = `agentls: could not trust ${p.file}: ${e instanceof Error ? e.message : String(e)}`;
      this.output.error(message);
      void vscode.window.showErrorMessage(message, TrustButton.showLog).then((c) => c && this.output.show());
      return false;
    }
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
