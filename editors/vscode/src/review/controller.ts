// Reviews in VS Code's own diff editor. Each `agentls/review` is queued; the first one is shown:
// its files in the Pending changes tree, one diff at a time (left: the buffer as it is, right:
// the proposal, editable), Accept/Reject CodeLens above each hunk. The decisions live in a
// ReviewState; once every file is decided the review is resolved with `agentls.resolveReview`
// and the next one opens. The extension never writes the user's files.

import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ResolveReviewParams, ReviewFile, ReviewParams } from '../lsp_ext';
import { outcome, ReviewState, wholeFileOnly, type Decision } from './hunks';
import { ProposalFs, REVIEW_SCHEME } from './memfs';

export interface HunkRef { reviewId: string; file: number; hunk?: number }

interface Pending {
  state: ReviewState;
  left: vscode.Uri[];
  right: vscode.Uri[];
}

export interface ReviewHost {
  resolve(params: ResolveReviewParams): Promise<void>;
  /** Tells the chat what became of the call's proposal. */
  reported(sessionId: string, callId: string, result: string): void;
}

const OP_LABEL: Record<ReviewFile['op'], string> = { create: 'new file', modify: 'proposed', delete: 'delete', rename: 'rename' };

export class ReviewController implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly queue: Pending[] = [];
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires when reviews arrive, progress or go. */
  readonly onDidChange = this.changed.event;
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly acceptedDecoration = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    borderWidth: '0 0 0 3px',
    borderStyle: 'solid',
    borderColor: new vscode.ThemeColor('testing.iconPassed'),
    overviewRulerColor: new vscode.ThemeColor('testing.iconPassed'),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  private readonly rejectedDecoration = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    borderWidth: '0 0 0 3px',
    borderStyle: 'dashed',
    borderColor: new vscode.ThemeColor('errorForeground'),
  });
  private readonly disposables: vscode.Disposable[] = [];
  private busy: Promise<unknown> = Promise.resolve();
  /** Counts the servers whose reviews were abandoned: a review arriving from an older one is dropped. */
  private epoch = 0;

  constructor(
    private readonly fs: ProposalFs,
    private readonly host: ReviewHost,
  ) {
    this.disposables.push(
      this.changed,
      this.acceptedDecoration,
      this.rejectedDecoration,
      vscode.window.onDidChangeVisibleTextEditors(() => this.decorate()),
    );
  }

  /** Reviews waiting, the shown one first. */
  get reviews(): readonly ReviewState[] {
    return this.queue.map((p) => p.state);
  }

  /** Files not yet decided, over every queued review. */
  pendingFiles(): number {
    return this.queue.reduce((n, p) => n + p.state.undecidedFiles().length, 0);
  }

  async add(review: ReviewParams): Promise<void> {
    const epoch = this.epoch;
    const key = `proposal-${review.reviewId.replace(/[^A-Za-z0-9]/g, '').slice(0, 8) || 'review'}`;
    const bases: string[] = [];
    const left: vscode.Uri[] = [];
    const right: vscode.Uri[] = [];
    for (const f of review.files) {
      const rel = relativePath(f.newUri ?? f.uri, f.path);
      const original = vscode.Uri.parse(f.uri);
      if (f.op === 'create') {
        bases.push('');
        const empty = vscode.Uri.from({ scheme: REVIEW_SCHEME, path: `/${key}/before/${rel}` });
        this.fs.set(empty, '');
        left.push(empty);
      } else {
        bases.push(await currentText(original));
        left.push(original);
      }
      right.push(vscode.Uri.from({ scheme: REVIEW_SCHEME, path: `/${key}/${f.op === 'delete' ? 'deleted/' : ''}${rel}` }));
    }
    // its server died while the base texts were read
    if (epoch !== this.epoch) {
      for (const u of left) if (u.scheme === REVIEW_SCHEME) this.fs.delete(u);
      return;
    }
    const pending: Pending = { state: new ReviewState(review, bases), left, right };
    pending.state.files.forEach((_, i) => this.fs.set(right[i], pending.state.proposedText(i)));
    this.queue.push(pending);
    await this.refresh();
    if (this.queue[0] === pending) await this.open(pending, 0);
  }

  /** Opens a file of a review in the diff editor. */
  async openFile(ref: HunkRef | undefined): Promise<void> {
    const p = ref ? this.find(ref.reviewId) : this.queue[0];
    if (p) await this.open(p, ref?.file ?? p.state.undecidedFiles()[0] ?? 0);
  }

  private async open(p: Pending, file: number): Promise<void> {
    const f = p.state.files[file].file;
    const name = path.basename(vscode.Uri.parse(f.newUri ?? f.uri).path);
    const title =
      f.op === 'rename'
        ? `${path.basename(vscode.Uri.parse(f.uri).path)} → ${name} (agentls: rename)`
        : `${name} (agentls: ${OP_LABEL[f.op]})`;
    await vscode.commands.executeCommand('vscode.diff', p.left[file], p.right[file], title, { preview: false });
    this.decorate();
  }

  acceptHunk(ref?: HunkRef): Promise<void> {
    return this.serial(() => this.decideHunk(ref, 'accepted'));
  }

  rejectHunk(ref?: HunkRef): Promise<void> {
    return this.serial(() => this.decideHunk(ref, 'rejected'));
  }

  acceptFile(ref?: HunkRef | vscode.Uri): Promise<void> {
    return this.serial(() => this.decideFile(this.fileRef(ref), 'accepted'));
  }

  rejectFile(ref?: HunkRef | vscode.Uri): Promise<void> {
    return this.serial(() => this.decideFile(this.fileRef(ref), 'rejected'));
  }

  acceptAll(): Promise<void> {
    return this.serial(async () => {
      const p = this.queue[0];
      if (!p) return void vscode.window.showInformationMessage('agentls: no changes to review.');
      p.state.acceptAll(p.right.map((u) => this.proposalText(u)));
      await this.advance(p);
    });
  }

  rejectAll(): Promise<void> {
    return this.serial(async () => {
      const p = this.queue[0];
      if (!p) return void vscode.window.showInformationMessage('agentls: no changes to review.');
      const reason = await askReason('Reject all proposed changes');
      if (reason === undefined || !this.queue.includes(p)) return;
      p.state.rejectAll(reason);
      await this.advance(p);
    });
  }

  /** Drops the review of a tool call that ended without it (the turn was cancelled). */
  /** `agentSession`: the subagent's session id when the call was a subagent's (call ids are
   *  unique per session, not per tree). */
  async closeForCall(callId: string, message: string, agentSession?: string): Promise<void> {
    const p = this.queue.find((q) => q.state.review.callId === callId && q.state.review.agent?.sessionId === agentSession);
    if (!p) return;
    await this.drop(p);
    void vscode.window.showInformationMessage(`agentls: ${message}`);
  }

  /** Closes every review at once (their server is gone): none of them is resolved, even one the
   *  user is deciding right now. Returns how many there were; their editors close afterwards. */
  abandonAll(message: string): number {
    this.epoch++;
    const abandoned = this.queue.splice(0);
    if (!abandoned.length) return 0;
    void (async () => {
      for (const p of abandoned) await this.close(p);
      await this.refresh();
    })().catch(() => undefined);
    void vscode.window.showWarningMessage(`agentls: ${message}`);
    return abandoned.length;
  }

  // ---- CodeLens ----

  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    const at = this.locate(doc.uri);
    if (!at) return [];
    const { p, file } = at;
    const s = p.state;
    const f = s.files[file];
    const ref = { reviewId: s.id, file };
    const lens = (line: number, title: string, command?: string, args?: unknown[]): vscode.CodeLens =>
      new vscode.CodeLens(new vscode.Range(clampLine(doc, line), 0, clampLine(doc, line), 0), {
        title,
        command: command ?? '',
        arguments: args,
      });
    if (wholeFileOnly(f.file)) {
      if (s.fileDecided(file)) return [lens(0, f.fileDecision === 'rejected' ? '✗ Rejected' : '✓ Accepted')];
      const what = f.file.op === 'delete' ? 'deletion' : f.file.op === 'create' ? 'new file' : 'rename';
      return [
        lens(0, `Accept ${what}`, 'agentls.vscode.acceptFile', [ref]),
        lens(0, `Reject ${what}`, 'agentls.vscode.rejectFile', [ref]),
      ];
    }
    const ranges = s.proposedRanges(file);
    return f.file.hunks.flatMap((h, i) => {
      const r = ranges[i];
      if (!r) return [];
      const d = f.decisions[i];
      if (d === 'accepted') return [lens(r.start, `✓ Accepted (hunk ${i + 1} of ${f.file.hunks.length})`)];
      if (d === 'rejected') {
        const why = f.reasons[i] ? `: ${f.reasons[i]}` : '';
        return [lens(r.start, `✗ Rejected (hunk ${i + 1} of ${f.file.hunks.length})${why}`)];
      }
      const hunkRef = { ...ref, hunk: h.index };
      return [
        lens(r.start, 'Accept', 'agentls.vscode.acceptHunk', [hunkRef]),
        lens(r.start, 'Reject', 'agentls.vscode.rejectHunk', [hunkRef]),
      ];
    });
  }

  // ---- internals ----

  private serial(work: () => Promise<void>): Promise<void> {
    const next = this.busy.then(work, work);
    this.busy = next.catch(() => undefined);
    return next;
  }

  private find(reviewId: string): Pending | undefined {
    return this.queue.find((p) => p.state.id === reviewId);
  }

  private locate(uri: vscode.Uri): { p: Pending; file: number } | undefined {
    const key = uri.toString();
    for (const p of this.queue) {
      const file = p.right.findIndex((u) => u.toString() === key);
      if (file >= 0) return { p, file };
    }
    return undefined;
  }

  /** A file from a CodeLens or tree item (HunkRef), an editor title button (its Uri), or the active editor. */
  private fileRef(ref: HunkRef | vscode.Uri | undefined): HunkRef | undefined {
    if (ref instanceof vscode.Uri) {
      const at = this.locate(ref);
      return at ? { reviewId: at.p.state.id, file: at.file } : this.activeRef();
    }
    if (ref && 'reviewId' in ref) return { reviewId: ref.reviewId, file: ref.file };
    return this.activeRef();
  }

  /** The review file and hunk under the cursor of the active proposal editor. */
  private activeRef(): HunkRef | undefined {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return undefined;
    const at = this.locate(editor.document.uri);
    if (!at) return undefined;
    const line = editor.selection.active.line;
    const ranges = at.p.state.proposedRanges(at.file);
    const f = at.p.state.files[at.file];
    const undecided = ranges.map((r, i) => ({ r, i })).filter(({ r, i }) => r && f.decisions[i] === undefined);
    const containing = undecided.find(({ r }) => r && line >= r.start && line < r.start + Math.max(1, r.lines));
    const below = undecided.find(({ r }) => r && r.start >= line);
    const pick = containing ?? below ?? undecided[undecided.length - 1];
    return { reviewId: at.p.state.id, file: at.file, hunk: pick?.i };
  }

  private async decideHunk(ref: HunkRef | undefined, decision: Decision): Promise<void> {
    ref = ref ?? this.activeRef();
    const p = ref && this.find(ref.reviewId);
    if (!ref || !p) {
      void vscode.window.showInformationMessage('agentls: put the cursor on a proposed change in the review diff first.');
      return;
    }
    const f = p.state.files[ref.file];
    if (wholeFileOnly(f.file) || ref.hunk === undefined) return this.decideFile(ref, decision);
    if (f.decisions[ref.hunk] !== undefined) return;
    let reason: string | undefined;
    if (decision === 'rejected') {
      reason = await askReason(`Reject hunk ${ref.hunk + 1} of ${f.file.path}`);
      if (reason === undefined || !this.queue.includes(p)) return;
    }
    const before = p.state.proposedRanges(ref.file)[ref.hunk];
    p.state.decideHunk(ref.file, ref.hunk, decision, reason);
    if (decision === 'rejected' && before) {
      // The proposal side drops the rejected hunk, so it shows what will be applied.
      const h = f.file.hunks[ref.hunk];
      await this.replaceLines(p.right[ref.file], before.start, before.lines, h.oldText);
    }
    if (p.state.fileDecided(ref.file)) p.state.noteEditedText(ref.file, this.proposalText(p.right[ref.file]));
    await this.advance(p, ref.file);
  }

  private async decideFile(ref: HunkRef | undefined, decision: Decision): Promise<void> {
    const p = ref && this.find(ref.reviewId);
    if (!ref || !p) {
      void vscode.window.showInformationMessage('agentls: open a proposed change (Pending changes) first.');
      return;
    }
    const f = p.state.files[ref.file];
    if (decision === 'rejected') {
      const reason = await askReason(`Reject the changes to ${f.file.path}`);
      if (reason === undefined || !this.queue.includes(p)) return;
      p.state.decideFile(ref.file, 'rejected', { reason });
      this.fs.set(p.right[ref.file], f.file.op === 'delete' ? f.base : p.state.proposedText(ref.file));
      await this.reloadClean(p.right[ref.file]);
    } else {
      p.state.decideFile(ref.file, 'accepted', { editedText: this.proposalText(p.right[ref.file]) });
    }
    await this.advance(p, ref.file);
  }

  /** After a decision: the next undecided file opens, or the review is resolved. */
  private async advance(p: Pending, lastFile?: number): Promise<void> {
    // abandoned meanwhile (its server died): nothing is sent for it
    if (!this.queue.includes(p)) return;
    await this.refresh();
    if (!p.state.complete()) {
      if (lastFile !== undefined && p.state.fileDecided(lastFile)) {
        const next = p.state.undecidedFiles()[0];
        if (next !== undefined) await this.open(p, next);
      }
      return;
    }
    if (!this.queue.includes(p)) return;
    const params = p.state.resolveParams();
    try {
      await this.host.resolve(params);
      const { sessionId, callId } = p.state.review;
      // a review the server could not tie to a call has no call in the chat to report on
      if (callId !== null) this.host.reported(sessionId, callId, outcome(p.state));
    } catch (e) {
      void vscode.window.showErrorMessage(`agentls: the review could not be sent: ${e instanceof Error ? e.message : String(e)}`);
    }
    await this.drop(p);
  }

  private async drop(p: Pending): Promise<void> {
    const i = this.queue.indexOf(p);
    if (i < 0) return;
    const wasShown = i === 0;
    this.queue.splice(i, 1);
    await this.close(p);
    await this.refresh();
    if (wasShown && this.queue[0]) await this.open(this.queue[0], 0);
  }

  /** Closes a review's diff editors and forgets its proposal documents. */
  private async close(p: Pending): Promise<void> {
    const right = new Set(p.right.map((u) => u.toString()));
    for (const doc of vscode.workspace.textDocuments) {
      if (right.has(doc.uri.toString()) && doc.isDirty) await doc.save();
    }
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => {
      const input = t.input;
      return input instanceof vscode.TabInputTextDiff && right.has(input.modified.toString());
    });
    if (tabs.length) await vscode.window.tabGroups.close(tabs, true);
    for (const u of [...p.right, ...p.left]) if (u.scheme === REVIEW_SCHEME) this.fs.delete(u);
  }

  private async refresh(): Promise<void> {
    await vscode.commands.executeCommand('setContext', 'agentls.reviewPending', this.queue.length > 0);
    this.changed.fire();
    this.decorate();
  }

  /** The proposal side as the user left it (unsaved edits included). */
  private proposalText(uri: vscode.Uri): string {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    return doc ? doc.getText() : new TextDecoder().decode(this.fs.readFile(uri));
  }

  private async replaceLines(uri: vscode.Uri, start: number, lines: number, text: string): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(uri);
    const range = doc.validateRange(new vscode.Range(start, 0, start + lines, 0));
    const edit = new vscode.WorkspaceEdit();
    edit.replace(uri, range, text);
    await vscode.workspace.applyEdit(edit);
    await doc.save();
  }

  private async reloadClean(uri: vscode.Uri): Promise<void> {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    if (!doc) return;
    const text = new TextDecoder().decode(this.fs.readFile(uri));
    if (doc.getText() !== text) {
      const edit = new vscode.WorkspaceEdit();
      edit.replace(uri, doc.validateRange(new vscode.Range(0, 0, doc.lineCount + 1, 0)), text);
      await vscode.workspace.applyEdit(edit);
    }
    if (doc.isDirty) await doc.save();
  }

  private decorate(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      const at = this.locate(editor.document.uri);
      if (!at) {
        if (editor.document.uri.scheme === REVIEW_SCHEME) {
          editor.setDecorations(this.acceptedDecoration, []);
          editor.setDecorations(this.rejectedDecoration, []);
        }
        continue;
      }
      const s = at.p.state;
      const f = s.files[at.file];
      const ranges = s.proposedRanges(at.file);
      const accepted: vscode.Range[] = [];
      const rejected: vscode.Range[] = [];
      f.decisions.forEach((d, i) => {
        const r = ranges[i];
        if (!r || !d) return;
        const range = new vscode.Range(clampLine(editor.document, r.start), 0, clampLine(editor.document, r.start + Math.max(1, r.lines) - 1), 0);
        (d === 'accepted' ? accepted : rejected).push(range);
      });
      editor.setDecorations(this.acceptedDecoration, accepted);
      editor.setDecorations(this.rejectedDecoration, rejected);
    }
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}

function clampLine(doc: vscode.TextDocument, line: number): number {
  return Math.max(0, Math.min(line, doc.lineCount - 1));
}

async function currentText(uri: vscode.Uri): Promise<string> {
  try {
    return (await vscode.workspace.openTextDocument(uri)).getText();
  } catch {
    return '';
  }
}

function relativePath(uri: string, fallback: string): string {
  try {
    const rel = vscode.workspace.asRelativePath(vscode.Uri.parse(uri), false);
    return rel.replace(/^\/+/, '');
  } catch {
    return fallback.replace(/^\/+/, '');
  }
}

async function askReason(title: string): Promise<string | undefined> {
  return vscode.window.showInputBox({
    title,
    prompt: 'Why? (optional: the agent is told; Enter to reject without a reason, Escape to go back)',
    placeHolder: 'e.g. keep the old name, it is part of the public API',
    ignoreFocusOut: true,
  });
}
