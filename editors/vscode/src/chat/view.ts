// The chat webview view: a strict-CSP page running dist/webview.js. It shows the active session
// of the ChatStore; ops are batched (coalesced) and posted at most once per frame.

import * as vscode from 'vscode';
import { coalesce } from './coalesce';
import type { FromWebview, ToWebview } from './messages';
import type { ChatOp } from './model';
import type { ChatStore } from './store';

export interface ChatActions {
  send(text: string): Promise<void>;
  /** The user started writing a prompt (`agentls/userTyping`). */
  userTyping(): void;
  stop(): Promise<void>;
  newSession(): Promise<void>;
  switchSession(): Promise<void>;
  selectModel(): Promise<void>;
  setReasoningEffort(): Promise<void>;
  /** The chat's "Undo this turn" (with every later turn) and "Redo"; a refusal is shown in the chat. */
  undoTurnFromChat(turnId: number, laterTurns: number): Promise<void>;
  redoTurnFromChat(): Promise<void>;
}

const FRAME_MS = 16;

export class ChatView implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly viewId = 'agentls.chat';
  private view: vscode.WebviewView | undefined;
  private ready = false;
  private queue: ChatOp[] = [];
  private timer: NodeJS.Timeout | undefined;
  private serverState = '';
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly store: ChatStore,
    private readonly actions: ChatActions,
  ) {
    this.disposables.push(
      store.onOp((sessionId, op) => {
        if (sessionId !== store.activeId || !this.ready) return;
        this.queue.push(op);
        this.timer ??= setTimeout(() => this.flush(), FRAME_MS);
      }),
      store.onActive(() => this.reset()),
    );
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    view.webview.options = { enableScripts: true, localResourceRoots: [dist, vscode.Uri.joinPath(this.extensionUri, 'media')] };
    view.webview.html = this.html(view.webview);
    view.webview.onDidReceiveMessage((m: FromWebview) => this.onMessage(m), undefined, this.disposables);
    view.onDidDispose(() => {
      this.view = undefined;
      this.ready = false;
    }, undefined, this.disposables);
  }

  /** Shows the view and puts the cursor in its prompt box. */
  async reveal(): Promise<void> {
    await vscode.commands.executeCommand(`${ChatView.viewId}.focus`);
    this.post({ type: 'focus' });
  }

  setServerState(state: string): void {
    this.serverState = state;
    this.post({ type: 'serverState', state });
  }

  private onMessage(m: FromWebview): void {
    const run = (p: Promise<void>): void => {
      p.catch((e: unknown) => void vscode.window.showErrorMessage(`agentls: ${e instanceof Error ? e.message : String(e)}`));
    };
    switch (m.type) {
      case 'ready':
        this.ready = true;
        this.reset();
        break;
      case 'send':
        run(this.actions.send(m.text));
        break;
      case 'typing':
        this.actions.userTyping();
        break;
      case 'stop':
        run(this.actions.stop());
        break;
      case 'newSession':
        run(this.actions.newSession());
        break;
      case 'switchSession':
        run(this.actions.switchSession());
        break;
      case 'selectModel':
        run(this.actions.selectModel());
        break;
      case 'setReasoningEffort':
        run(this.actions.setReasoningEffort());
        break;
      case 'undoTurn':
        run(this.actions.undoTurnFromChat(m.turnId, m.laterTurns));
        break;
      case 'redoTurn':
        run(this.actions.redoTurnFromChat());
        break;
    }
  }

  private reset(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue = [];
    const model = this.store.activeModel();
    this.post({ type: 'reset', snapshot: model?.snapshot(), serverState: this.serverState });
  }

  private flush(): void {
    this.timer = undefined;
    if (!this.queue.length) return;
    const ops = coalesce(this.queue);
    this.queue = [];
    this.post({ type: 'ops', ops });
  }

  private post(m: ToWebview): void {
    if (this.view && this.ready) void this.view.webview.postMessage(m);
  }

  private html(webview: vscode.Webview): string {
    const nonce = [...crypto.getRandomValues(new Uint8Array(18))].map((b) => b.toString(16).padStart(2, '0')).join('');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', 'chat.css'));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `font-src ${webview.cspSource}`,
      `img-src ${webview.cspSource} data:`,
      `script-src 'nonce-${nonce}'`,
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>agentls</title>
</head>
<body>
<header id="header">
  <button id="model" class="chip" title="Select the session's model"></button>
  <button id="effort" class="chip" title="Set the session's reasoning effort"></button>
  <span class="spacer"></span>
  <button id="sessions" class="icon" title="Switch session (open and stored sessions)">Sessions</button>
  <button id="new-session" class="icon" title="New session">New</button>
</header>
<div id="server-state" hidden></div>
<main id="transcript" aria-live="polite"></main>
<div id="empty">Ask agentls to change something in this workspace. Every edit it proposes opens in the diff editor for your review.</div>
<footer id="composer">
  <textarea id="prompt" rows="2" aria-label="Prompt"></textarea>
  <div class="buttons">
    <button id="stop" hidden title="Stop the running turn">Stop</button>
    <button id="send" class="primary">Send</button>
  </div>
</footer>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const d of this.disposables) d.dispose();
  }
}
