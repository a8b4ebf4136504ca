// The extension's state, in one owner: the language client's lifetime (start, restart, stop, and
// carrying on when the server dies: the session that was open is reopened on the next one), the
// chat store, the review queue, the permission prompter, folder trust and the status bar, and the
// session operations the commands and the chat view share.

import * as vscode from 'vscode';
import { ExecuteCommandRequest, State, type LanguageClient } from 'vscode-languageclient/node';
import { ChatView, type ChatActions } from './chat/view';
import { ChatStore } from './chat/store';
import type { ChatOp } from './chat/model';
import { createClient, RestartPolicy } from './client';
import {
  DiagnosticsRequest,
  EventNotification,
  PermissionNotification,
  ReviewNotification,
  SaveDocumentsRequest,
  ServerCommand,
  TrustRequiredNotification,
  UserTypingNotification,
  type CommandParams,
  type CommandResult,
  type CommandType,
  type ConfigureParams,
  type ContextInfo,
  type HistoryEntry,
  type PromptParams,
  type ResumeSessionResult,
  type SessionInfo,
  type TurnsReverted,
} from './lsp_ext';
import { PermissionPrompter } from './permission';
import { ReviewController } from './review/controller';
import { ProposalFs, REVIEW_SCHEME } from './review/memfs';
import { PendingChangesTree } from './review/tree';
import { lossNotice, mergeLoss, reopenNotice, sessionLabel, type Limit, type Loss } from './recovery';
import { findServer, INSTALL_COMMAND } from './server_path';
import { diagnostics, saveDocuments } from './server_requests';
import { StatusDisplay, type StatusFacts } from './status';
import { TrustBroker } from './trust';

export class Ctx implements ChatActions, vscode.Disposable {
  readonly store = new ChatStore();
  readonly output = vscode.window.createOutputChannel('agentls', { log: true });
  readonly chat: ChatView;
  readonly reviews: ReviewController;
  readonly permissions: PermissionPrompter;
  private readonly trust: TrustBroker;
  private readonly status = new StatusDisplay();
  private client: LanguageClient | undefined;
  private server: StatusFacts['server'] = 'starting';
  /** The last context figures of each session (from `agentls.listSessions`). */
  private readonly contexts = new Map<string, ContextInfo>();
  private readonly disposables: vscode.Disposable[] = [];
  private readonly activatedAt = Date.now();
  /** The session to reopen once the next server is up, and what went down with the last one.
   *  `failed`: a server died while reopening it, so it is not tried again. */
  private reopen: { sessionId: string; loss: Loss; failed?: boolean } | undefined;
  /** The session being reopened, and the reopening (a message sent meanwhile waits for it). */
  private reopeningId: string | undefined;
  private reopening: Promise<void> | undefined;
  /** The client restarts the server that just died (its passing Stopped state is not shown). */
  private restartPending = false;

  constructor(extension: vscode.ExtensionContext) {
    const fs = new ProposalFs();
    this.reviews = new ReviewController(fs, {
      resolve: async (params) => void (await this.exec(ServerCommand.resolveReview, params)),
      reported: (sessionId, callId, result) => this.store.apply(sessionId, { kind: 'review_result', callId, result }),
    });
    this.permissions = new PermissionPrompter(async (params) => {
      try {
        await this.exec(ServerCommand.resolvePermission, params);
      } catch (e) {
        // the question was already resolved (the turn was cancelled meanwhile): nothing to do
        this.output.info(`resolvePermission: ${e instanceof Error ? e.message : String(e)}`);
      }
    });
    this.trust = new TrustBroker((params) => this.exec(ServerCommand.trustFolder, params), this.output);
    this.chat = new ChatView(extension.extensionUri, this.store, this);
    this.disposables.push(
      this.output,
      this.status,
      this.reviews,
      this.permissions,
      this.trust,
      this.chat,
      vscode.workspace.registerFileSystemProvider(REVIEW_SCHEME, fs, { isCaseSensitive: true }),
      vscode.languages.registerCodeLensProvider({ scheme: REVIEW_SCHEME }, this.reviews),
      vscode.window.registerTreeDataProvider('agentls.pendingChanges', new PendingChangesTree(this.reviews)),
      vscode.window.registerWebviewViewProvider(ChatView.viewId, this.chat, { webviewOptions: { retainContextWhenHidden: true } }),
      this.reviews.onDidChange(() => this.updateStatus()),
      this.permissions.onDidChange(() => this.updateStatus()),
      this.store.onOp((sessionId, op) => this.onOp(sessionId, op)),
      this.store.onActive(() => this.updateStatus()),
      vscode.workspace.onDidChangeConfiguration((e) => this.onConfigChange(e)),
    );
    this.updateStatus();
  }

  // ---- server lifetime ----

  async start(): Promise<void> {
    const found = findServer(vscode.workspace.getConfiguration('agentls').get<string>('server.path'));
    if ('error' in found) {
      this.setServer('missing');
      this.output.error(found.error);
      const open = 'Open Setting';
      void vscode.window
        .showErrorMessage(`agentls: ${found.error} Install it with: ${INSTALL_COMMAND}`, open, 'Show Log')
        .then((choice) => {
          if (choice === open) void vscode.commands.executeCommand('workbench.action.openSettings', 'agentls.server.path');
          else if (choice) this.output.show();
        });
      return;
    }
    this.output.info(`starting ${found.path} serve --stdio`);
    const policy = new RestartPolicy((restart, limit) => this.onServerDied(restart, limit));
    const client = createClient(found.path, process.env, this.output, policy);
    this.client = client;
    client.onNotification(EventNotification, (e) => this.store.apply(e.sessionId, e));
    client.onNotification(ReviewNotification, (r) => {
      void this.reviews.add(r).catch((e: unknown) => this.output.error(`review: ${String(e)}`));
    });
    client.onNotification(PermissionNotification, (p) => this.permissions.ask(p));
    client.onNotification(TrustRequiredNotification, (p) => this.trust.required(p));
    client.onRequest(SaveDocumentsRequest, (p) => saveDocuments(p));
    client.onRequest(DiagnosticsRequest, (p) => diagnostics(p));
    this.disposables.push(
      client.onDidChangeState((e) => {
        if (e.newState === State.Running) {
          this.setServer('running');
          // start() settles once the client's handlers are attached and `initialized` is sent
          this.reopening = client.start().then(() => this.reopenSession(), () => undefined);
        } else if (e.newState === State.Starting) {
          this.restartPending = false;
          this.setServer('starting');
        } else if (!this.restartPending) this.setServer('stopped');
      }),
    );
    this.setServer('starting');
    try {
      await client.start();
      this.output.info(`activation to initialize reply: ${Date.now() - this.activatedAt} ms`);
      this.setServer('running');
    } catch (e) {
      this.setServer('stopped');
      void vscode.window.showErrorMessage(`agentls: the server did not start: ${e instanceof Error ? e.message : String(e)}`, 'Show Log').then((c) => c && this.output.show());
    }
  }

  async restart(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      // a server that died has already told the chat, and its session waits to be reopened
      if (this.server === 'running' || this.server === 'starting') this.loseServer('restart');
      try {
        await client.stop(5000);
      } catch {
        // already dead
      }
      await client.dispose();
    }
    await this.start();
  }

  /** The server died by itself; `restart`: the client restarts it (n of max), else the budget is spent. */
  private onServerDied(restart: Loss['restart'], limit: Limit): void {
    this.output.warn(`the server stopped unexpectedly; ${restart ? `restarting it (${restart.n} of ${restart.max})` : `not restarted: it stopped ${limit.stops} times within ${limit.minutes} minutes`}`);
    this.restartPending = restart !== undefined;
    this.setServer(restart ? 'starting' : 'stopped');
    this.loseServer('crash', restart, limit);
    if (restart) return;
    const again = 'Restart Server';
    const log = 'Show Log';
    void vscode.window
      .showErrorMessage(`agentls: the server stopped ${limit.stops} times within ${limit.minutes} minutes and was not restarted. "Show Log" shows why; "Restart Server" starts it again and reopens your session.`, again, log)
      .then((choice) => {
        if (choice === again) void this.restart();
        else if (choice === log) this.output.show();
      });
  }

  /** Closes what the server that went down left open (nothing of it is answered to the next
   *  one), tells the chat, and remembers the active session to reopen on the next server. */
  private loseServer(cause: Loss['cause'], restart?: Loss['restart'], limit?: Limit): void {
    const active = this.store.activeId;
    const dropped = this.permissions.dropAll();
    for (const p of dropped) this.output.info(`permission question ${p.requestId} ("${p.command}") dropped: its server went down; no answer will be sent`);
    const loss: Loss = {
      cause,
      restart,
      turnRunning: active ? this.store.model(active).header.busy : false,
      reviews: this.reviews.abandonAll(
        cause === 'crash'
          ? 'the agentls server stopped; the changes it proposed were not applied and their reviews were closed.'
          : 'the server was restarted; its pending reviews were closed.',
      ),
      permissions: dropped.map((p) => p.command),
    };
    this.store.clear();
    if (!active) return;
    const earlier = this.reopen?.sessionId === active ? this.reopen : undefined;
    this.reopen = { sessionId: active, loss: earlier ? mergeLoss(earlier.loss, loss) : loss, failed: earlier?.failed || this.reopeningId === active };
    const text = lossNotice(loss, limit);
    this.store.apply(active, cause === 'crash' || loss.turnRunning ? { kind: 'interrupted', text } : { kind: 'notice', level: 'info', text });
  }

  /** Reopens, on the server that just started, the session that was active when the last one went
   *  down: its history as the server has it replaces the chat's, and the chat says what happened. */
  private async reopenSession(): Promise<void> {
    const pending = this.reopen;
    if (!pending) return;
    this.reopen = undefined;
    const { sessionId, loss } = pending;
    const label = sessionLabel(sessionId, this.store.firstPrompt(sessionId));
    const notReopened = (reason: string): void => {
      this.output.warn(`session ${sessionId} was not reopened: ${reason}`);
      this.store.apply(sessionId, { kind: 'notice', level: 'warning', text: reopenNotice(loss, label, { reopened: false, reason }) });
    };
    if (pending.failed) return notReopened('the server stopped while reopening it');
    this.reopeningId = sessionId;
    try {
      const { result, history } = await this.resume(sessionId);
      // reopened: a death from here on (during the header refresh, say) is not one while reopening
      this.reopeningId = undefined;
      this.store.apply(sessionId, { kind: 'notice', level: 'info', text: reopenNotice(loss, label, { reopened: true, historyEntries: history?.length }) });
      this.store.describe({ sessionId, model: result.model });
      this.output.info(`reopened session ${sessionId} (${history ? `${history.length} history entries` : 'its history was not sent'})`);
      await this.refreshHeader(sessionId).catch(() => undefined);
    } catch (e) {
      // the new server died too: its death remembered the session (as failed)
      if (this.server !== 'running') return;
      notReopened(e instanceof Error ? e.message : String(e));
    } finally {
      this.reopeningId = undefined;
    }
  }

  private setServer(state: StatusFacts['server']): void {
    this.server = state;
    this.chat.setServerState(
      state === 'missing' ? 'The agentls server is not installed: see the notification, or set agentls.server.path.' : state === 'stopped' ? 'The agentls server is not running. Run "agentls: Restart Server".' : '',
    );
    this.updateStatus();
  }

  private updateStatus(): void {
    const header = this.store.activeModel()?.header;
    this.status.update({
      server: this.server,
      busy: header?.busy ?? false,
      currentTool: header?.currentTool,
      pendingReviewFiles: this.reviews.pendingFiles(),
      pendingPermissions: this.permissions.pending,
      context: this.store.activeId ? this.contexts.get(this.store.activeId) : undefined,
    });
  }

  /** Fetches a session's context figures (`agentls.listSessions`) for the status bar. */
  private async refreshContext(sessionId: string): Promise<void> {
    const info = (await this.listSessions()).find((s) => s.sessionId === sessionId);
    if (info?.context) this.contexts.set(sessionId, info.context);
    this.updateStatus();
  }

  /** Compacts the active session's conversation (after its current turn). */
  async compact(): Promise<void> {
    const sessionId = this.store.activeId;
    if (!sessionId) throw new Error('no session yet: there is nothing to compact');
    if (!this.supports(ServerCommand.compact)) throw new Error('this agentls server cannot compact conversations; update it');
    await this.exec(ServerCommand.compact, { sessionId });
  }

  /** Undoes the active session's latest turn that changed files (with `rewind`, the
   * conversation too) and says what changed. */
  async undoTurn(rewind = false): Promise<void> {
    const sessionId = this.store.activeId;
    if (!sessionId) throw new Error('no session yet: there is nothing to undo');
    const result = await this.exec(ServerCommand.undoTurn, rewind ? { sessionId, rewind } : { sessionId });
    void vscode.window.showInformationMessage(revertedText('Undid', result));
  }

  /** Redoes what the active session's latest undo reverted. */
  async redoTurn(): Promise<void> {
    const sessionId = this.store.activeId;
    if (!sessionId) throw new Error('no session yet: there is nothing to redo');
    const result = await this.exec(ServerCommand.redoTurn, { sessionId });
    void vscode.window.showInformationMessage(revertedText('Redid', result));
  }

  /** The chat's "Undo this turn": reverts turn `turnId` and every later one (asked first when
   *  there are later ones); what it did, or why it was refused, is told in the chat. */
  async undoTurnFromChat(turnId: number, laterTurns: number): Promise<void> {
    const sessionId = this.store.activeId;
    if (!sessionId) return;
    if (laterTurns > 0) {
      const later = laterTurns === 1 ? 'the later turn' : `the ${laterTurns} later turns`;
      const answer = await vscode.window.showWarningMessage(
        `Undo turn ${turnId} and ${later}?`,
        { modal: true, detail: `Undo reverts the files this turn changed and those of ${later}, keeping your own edits since.` },
        'Undo',
      );
      if (answer !== 'Undo') return;
    }
    await this.revertFromChat(sessionId, 'Undid', () => this.exec(ServerCommand.undoTurn, { sessionId, turnId }));
  }

  /** The chat's "Redo": re-applies what the latest undo reverted. */
  async redoTurnFromChat(): Promise<void> {
    const sessionId = this.store.activeId;
    if (!sessionId) return;
    await this.revertFromChat(sessionId, 'Redid', () => this.exec(ServerCommand.redoTurn, { sessionId }));
  }

  private async revertFromChat(sessionId: string, verb: string, run: () => Promise<TurnsReverted>): Promise<void> {
    try {
      this.store.apply(sessionId, { kind: 'notice', level: 'info', text: revertedText(verb, await run()) });
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      this.store.apply(sessionId, { kind: 'notice', level: 'warning', text: `agentls: ${verb === 'Undid' ? 'undo' : 'redo'} refused: ${why}` });
    }
  }

  private onOp(sessionId: string, op: ChatOp): void {
    if (op.kind === 'tool_call_end' && op.data.status !== 'ok') {
      const agent = 'agent' in op ? op.agent?.sessionId : undefined;
      void this.reviews.closeForCall(op.data.call_id, `the review of "${op.data.summary}" was closed: the call ended (${op.data.status}).`, agent);
    }
    if (sessionId === this.store.activeId && (op.kind === 'user_input' || op.kind === 'tool_call_start' || op.kind === 'tool_call_end' || op.kind === 'processing_end' || op.kind === 'session_end')) {
      this.updateStatus();
    }
    if (op.kind === 'session_start' || op.kind === 'assistant_text_end' || op.kind === 'compaction' || op.kind === 'processing_end') {
      void this.refreshContext(sessionId).catch(() => undefined);
    }
  }

  private onConfigChange(e: vscode.ConfigurationChangeEvent): void {
    if (!e.affectsConfiguration('agentls')) return;
    if (e.affectsConfiguration('agentls.server.path')) {
      void vscode.window.showInformationMessage('agentls: the server path changed.', 'Restart Server').then((c) => c && this.restart());
      return;
    }
    // The server pulls the `agentls` section again (its pull model) and names any bad value in a
    // warning; applies to new sessions.
    void this.client?.sendNotification('workspace/didChangeConfiguration', { settings: null });
  }

  // ---- server commands ----

  private requireClient(): LanguageClient {
    if (!this.client || this.server !== 'running') throw new Error('the agentls server is not running');
    return this.client;
  }

  /** Runs a server command: its one argument and its result are the command's types (the
   *  server's answer is trusted to be what docs/protocol.md says; test/protocol.test.ts checks
   *  the types against its examples). */
  async exec<C extends CommandType<never, unknown>>(command: C, params: CommandParams<C>): Promise<CommandResult<C>> {
    const result: CommandResult<C> = await this.requireClient().sendRequest(ExecuteCommandRequest.type, { command: command.command, arguments: [params] });
    return result;
  }

  supports(command: CommandType<never, unknown>): boolean {
    return this.client?.initializeResult?.capabilities.executeCommandProvider?.commands.includes(command.command) ?? false;
  }

  async listSessions(): Promise<SessionInfo[]> {
    return (await this.exec(ServerCommand.listSessions, {})).sessions;
  }

  private async refreshHeader(sessionId: string): Promise<void> {
    const info = (await this.listSessions()).find((s) => s.sessionId === sessionId);
    if (info) this.store.describe(info);
  }

  async newSession(): Promise<void> {
    const root = vscode.workspace.workspaceFolders?.[0]?.uri.toString();
    const r = await this.exec(ServerCommand.newSession, root ? { rootUri: root } : {});
    this.store.describe({ sessionId: r.sessionId, model: r.model });
    this.store.setActive(r.sessionId);
    await this.refreshHeader(r.sessionId).catch(() => undefined);
  }

  private async activeSession(): Promise<string> {
    await this.reopening;
    if (!this.store.activeId) await this.newSession();
    return this.store.activeId as string;
  }

  /** The user started writing a prompt: the server opens the provider's connection while they
   *  type (a running server only; nothing waits for it). */
  userTyping(): void {
    if (this.client?.state !== State.Running) return;
    const sessionId = this.store.activeId;
    void this.client.sendNotification(UserTypingNotification, sessionId ? { sessionId } : {}).catch(() => undefined);
  }

  /** Sends the chat box's text: a prompt, or steering while a turn runs. */
  async send(text: string): Promise<void> {
    const sessionId = await this.activeSession();
    if (this.store.model(sessionId).header.busy) {
      await this.exec(ServerCommand.steer, { sessionId, text });
      return;
    }
    await this.prompt({ sessionId, text });
  }

  async prompt(params: PromptParams): Promise<void> {
    const sessionId = params.sessionId ?? (await this.activeSession());
    try {
      await this.exec(ServerCommand.prompt, { ...params, sessionId });
    } catch (e) {
      // The session is gone (closed, or its server restarted): start a new one once.
      if ((e as { data?: unknown }).data !== 'sessionId') throw e;
      await this.newSession();
      await this.exec(ServerCommand.prompt, { ...params, sessionId: this.store.activeId });
    }
  }

  async steer(text: string): Promise<void> {
    const sessionId = this.store.activeId;
    if (!sessionId) throw new Error('no session is running');
    await this.exec(ServerCommand.steer, { sessionId, text });
  }

  async stop(): Promise<void> {
    const sessionId = this.store.activeId;
    if (sessionId) await this.exec(ServerCommand.cancel, { sessionId });
  }

  async configure(params: Omit<ConfigureParams, 'sessionId'>): Promise<void> {
    const sessionId = await this.activeSession();
    const info = await this.exec(ServerCommand.configure, { sessionId, ...params });
    this.store.describe(info);
  }

  async switchSession(): Promise<void> {
    const sessions = await this.listSessions();
    type Item = vscode.QuickPickItem & { session?: SessionInfo };
    const items: Item[] = [
      { label: '$(add) New session', alwaysShow: true },
      ...sessions.map((s) => ({
        label: `${s.open ? '$(circle-filled)' : '$(history)'} ${s.title ?? this.store.firstPrompt(s.sessionId) ?? s.sessionId.slice(0, 8)}`,
        description: [s.model, s.open ? s.state : 'stored', s.created?.replace('T', ' ').slice(0, 16)].filter(Boolean).join(' · '),
        detail: vscode.Uri.parse(s.rootUri).fsPath,
        session: s,
      })),
    ];
    const pick = await vscode.window.showQuickPick(items, { title: 'agentls: switch session', placeHolder: 'Open and stored sessions' });
    if (!pick) return;
    if (!pick.session) return this.newSession();
    const s = pick.session;
    if (s.open) {
      this.store.describe(s);
      this.store.setActive(s.sessionId);
      return;
    }
    const { result: r } = await this.resume(s.sessionId);
    if (r.resumed) this.store.apply(r.sessionId, { kind: 'notice', level: 'info', text: `Resumed a stored session${r.turns !== undefined ? ` (${r.turns} history entries)` : ''}.` });
    this.store.describe({ ...s, sessionId: r.sessionId, model: r.model });
    this.store.setActive(r.sessionId);
    await this.refreshHeader(r.sessionId).catch(() => undefined);
  }

  /** Opens a stored session on the server; when it was not open, its history as the server has it
   *  (the stored transcript is the truth) replaces what the chat held of it. */
  private async resume(sessionId: string): Promise<{ result: ResumeSessionResult; history?: HistoryEntry[] }> {
    const result = await this.exec(ServerCommand.resumeSession, { sessionId });
    if (!result.resumed || !this.supports(ServerCommand.history)) return { result };
    const { entries, undone, redoable } = await this.exec(ServerCommand.history, { sessionId: result.sessionId });
    this.store.reset(result.sessionId);
    this.store.apply(result.sessionId, { kind: 'history', entries, undone, redoable });
    return { result, history: entries };
  }

  async selectModel(): Promise<void> {
    const current = this.store.activeModel()?.header.model ?? vscode.workspace.getConfiguration('agentls').get<string>('model') ?? '';
    const model = await vscode.window.showInputBox({ title: 'agentls: model for this session', value: current, prompt: 'Applies from the next model call (agentls.model sets the default for new sessions)' });
    if (model?.trim()) await this.configure({ model: model.trim() });
  }

  async setReasoningEffort(): Promise<void> {
    const current = this.store.activeModel()?.header.reasoningEffort ?? 'default';
    const pick = await vscode.window.showQuickPick(['default', 'minimal', 'low', 'medium', 'high'].map((label) => ({ label, description: label === current ? 'current' : undefined })), { title: 'agentls: reasoning effort for this session' });
    if (pick) await this.configure({ reasoningEffort: pick.label as ConfigureParams['reasoningEffort'] });
  }

  async setApprovalMode(): Promise<void> {
    const current = this.store.activeModel()?.header.approval;
    const modes = [
      { label: 'review', detail: 'Every change opens in the diff editor for your review before it is applied' },
      { label: 'auto', detail: 'Changes are applied to your buffers at once' },
      { label: 'deny', detail: 'Changes are refused; the agent only reads and answers' },
    ].map((m) => ({ ...m, description: m.label === current ? 'current' : undefined }));
    const pick = await vscode.window.showQuickPick(modes, { title: 'agentls: approval mode for this session' });
    if (pick) await this.configure({ approval: pick.label as ConfigureParams['approval'] });
  }

  showLog(): void {
    this.output.show();
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }

  async deactivate(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) await client.stop(3000).catch(() => undefined);
  }
}

/** One line saying what an undo or a redo did. */
export function revertedText(verb: string, result: TurnsReverted): string {
  const files = result.files.map((f) => vscode.workspace.asRelativePath(vscode.Uri.parse(f.uri)));
  const left = result.notCovered.map((f) => `${vscode.workspace.asRelativePath(vscode.Uri.parse(f.uri))} (${f.reason})`);
  let text = `agentls: ${verb} turn ${result.turnIds.join(', ')}: ${files.length ? files.join(', ') : 'no file to change'}.`;
  if (left.length) text += ` Not covered, left as they are: ${left.join(', ')}.`;
  return text;
}
