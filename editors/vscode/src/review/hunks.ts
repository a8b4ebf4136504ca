// Hunk bookkeeping of one review, as data: which hunks of which files the user accepted or
// rejected (and why), what the right side of each diff must show for those decisions, and the
// `agentls.resolveReview` arguments they produce. No `vscode` here: the controller feeds it the
// editor's texts and renders what it says.

import type { ResolveReviewFile, ResolveReviewParams, ReviewFile, ReviewHunk, ReviewParams } from '../lsp_ext';

export type Decision = 'accepted' | 'rejected';

/** Splits text into lines that keep their terminators, so joining them gives the text back. */
export function splitLines(text: string): string[] {
  const lines: string[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      lines.push(text.slice(start, i + 1));
      start = i + 1;
    }
  }
  if (start < text.length) lines.push(text.slice(start));
  return lines;
}

/**
 * Where each hunk's old lines sit in `base`: at `oldStart` when the text there is the hunk's
 * `oldText`, else at the nearest place that holds it (the buffer moved since the agent read it),
 * else `undefined` (the hunk cannot be shown on this text; the server rebases it when accepted).
 */
export function locateHunks(base: string, hunks: readonly ReviewHunk[]): (number | undefined)[] {
  const lines = splitLines(base);
  const at = (start: number, h: ReviewHunk): boolean =>
    start >= 0 && start + h.oldLines <= lines.length && lines.slice(start, start + h.oldLines).join('') === h.oldText;
  let floor = 0;
  return hunks.map((h) => {
    let found: number | undefined;
    if (start_ok(h.oldStart)) found = h.oldStart;
    else {
      for (let d = 1; d <= lines.length && found === undefined; d++) {
        if (start_ok(h.oldStart - d)) found = h.oldStart - d;
        else if (start_ok(h.oldStart + d)) found = h.oldStart + d;
      }
    }
    if (found !== undefined) floor = found + h.oldLines;
    return found;
    function start_ok(s: number): boolean {
      return s >= floor && at(s, h);
    }
  });
}

/** `base` with the hunks for which `include(i)` holds applied (hunks that cannot be located are skipped). */
export function composeText(base: string, hunks: readonly ReviewHunk[], include: (index: number) => boolean): string {
  const lines = splitLines(base);
  const starts = locateHunks(base, hunks);
  const out: string[] = [];
  let cursor = 0;
  hunks.forEach((h, i) => {
    const start = starts[i];
    if (start === undefined || !include(i)) return;
    out.push(...lines.slice(cursor, start), h.newText);
    cursor = start + h.oldLines;
  });
  out.push(...lines.slice(cursor));
  return out.join('');
}

/** The 0-based line range each hunk covers in `composeText(base, hunks, include)`. */
export function hunkRanges(
  base: string,
  hunks: readonly ReviewHunk[],
  include: (index: number) => boolean,
): ({ start: number; lines: number } | undefined)[] {
  const starts = locateHunks(base, hunks);
  let shift = 0;
  return hunks.map((h, i) => {
    const start = starts[i];
    if (start === undefined) return undefined;
    const lines = include(i) ? h.newLines : h.oldLines;
    const range = { start: start + shift, lines };
    shift += lines - h.oldLines;
    return range;
  });
}

export interface FileState {
  readonly file: ReviewFile;
  /** The text the proposal is shown against (the buffer's text when the review arrived). */
  readonly base: string;
  readonly decisions: (Decision | undefined)[];
  readonly reasons: (string | undefined)[];
  /** Set when the user edited the proposed side before accepting: sent as `finalText`. */
  finalText?: string;
  /** A whole-file decision for files without hunks (a pure rename, an empty create). */
  fileDecision?: Decision;
  fileReason?: string;
}

/** Whether a file is decided only as a whole (no per-hunk choice makes sense). */
export function wholeFileOnly(file: ReviewFile): boolean {
  return file.op === 'create' || file.op === 'delete' || file.hunks.length === 0;
}

export class ReviewState {
  readonly files: FileState[];
  /** A reason given for the whole review (Reject All). */
  reviewReason?: string;

  constructor(
    readonly review: ReviewParams,
    bases: readonly string[],
  ) {
    this.files = review.files.map((file, i) => ({
      file,
      base: bases[i] ?? '',
      decisions: file.hunks.map(() => undefined),
      reasons: file.hunks.map(() => undefined),
    }));
  }

  get id(): string {
    return this.review.reviewId;
  }

  /** What the proposed side shows now: every hunk not rejected applied (the user's edits aside). */
  proposedText(fileIndex: number): string {
    const f = this.files[fileIndex];
    if (f.file.op === 'delete') return '';
    return composeText(f.base, f.file.hunks, (i) => f.decisions[i] !== 'rejected');
  }

  /** Line ranges of the hunks on the proposed side as it is now. */
  proposedRanges(fileIndex: number): ({ start: number; lines: number } | undefined)[] {
    const f = this.files[fileIndex];
    return hunkRanges(f.base, f.file.hunks, (i) => f.decisions[i] !== 'rejected');
  }

  decideHunk(fileIndex: number, hunkIndex: number, decision: Decision, reason?: string): void {
    const f = this.files[fileIndex];
    if (wholeFileOnly(f.file)) {
      this.decideFile(fileIndex, decision, { reason });
      return;
    }
    f.decisions[hunkIndex] = decision;
    f.reasons[hunkIndex] = decision === 'rejected' ? nonEmpty(reason) : undefined;
  }

  /**
   * Decides every undecided hunk of a file (all of them for `reject`). `editedText` is the
   * proposed side as the user left it: when it differs from what the decisions give, the file is
   * accepted with that text.
   */
  decideFile(fileIndex: number, decision: Decision, opts: { reason?: string; editedText?: string } = {}): void {
    const f = this.files[fileIndex];
    if (decision === 'rejected') {
      f.decisions.fill('rejected');
      f.finalText = undefined;
      f.fileReason = nonEmpty(opts.reason);
    } else {
      for (let i = 0; i < f.decisions.length; i++) f.decisions[i] ??= 'accepted';
      if (opts.editedText !== undefined && f.file.op !== 'delete' && opts.editedText !== this.proposedText(fileIndex)) {
        f.finalText = opts.editedText;
      }
    }
    f.fileDecision = decision;
  }

  /** Takes the user's edits of the proposed side into account once all of a file's hunks are decided. */
  noteEditedText(fileIndex: number, editedText: string): void {
    const f = this.files[fileIndex];
    if (f.file.op === 'delete' || !this.fileDecided(fileIndex)) return;
    if (f.decisions.some((d) => d === 'accepted') || f.decisions.length === 0) {
      f.finalText = editedText !== this.proposedText(fileIndex) ? editedText : undefined;
    }
  }

  /** Rejects every undecided file; `reason` is the feedback for all of them. */
  rejectAll(reason?: string): void {
    this.reviewReason = nonEmpty(reason);
    this.files.forEach((_, i) => {
      if (!this.fileDecided(i)) this.decideFile(i, 'rejected');
    });
  }

  /** Accepts every undecided hunk and file; `editedTexts[i]` is file i's proposed side as the user left it. */
  acceptAll(editedTexts: readonly (string | undefined)[] = []): void {
    this.files.forEach((_, i) => {
      if (!this.fileDecided(i)) this.decideFile(i, 'accepted', { editedText: editedTexts[i] });
    });
  }

  fileDecided(fileIndex: number): boolean {
    const f = this.files[fileIndex];
    if (f.fileDecision !== undefined) return true;
    return f.decisions.length > 0 && f.decisions.every((d) => d !== undefined);
  }

  complete(): boolean {
    return this.files.every((_, i) => this.fileDecided(i));
  }

  undecidedFiles(): number[] {
    return this.files.map((_, i) => i).filter((i) => !this.fileDecided(i));
  }

  /** A short label of a file's state for the tree: `accepted`, `rejected`, `2/3 accepted`, `1 of 3 decided`. */
  fileSummary(fileIndex: number): string {
    const f = this.files[fileIndex];
    const accepted = f.decisions.filter((d) => d === 'accepted').length;
    const decided = f.decisions.filter((d) => d !== undefined).length;
    if (!this.fileDecided(fileIndex)) return decided ? `${decided} of ${f.decisions.length} hunks decided` : '';
    if (f.finalText !== undefined) return 'accepted with your edits';
    if (f.decisions.length === 0) return f.fileDecision === 'rejected' ? 'rejected' : 'accepted';
    if (accepted === f.decisions.length) return 'accepted';
    if (accepted === 0) return 'rejected';
    return `${accepted}/${f.decisions.length} hunks accepted`;
  }

  /** The `agentls.resolveReview` arguments for the decisions taken (call once `complete()`). */
  resolveParams(): ResolveReviewParams {
    const files: ResolveReviewFile[] = [];
    let anyAccepted = false;
    for (const f of this.files) {
      const all = f.decisions.length;
      const accepted = f.decisions.flatMap((d, i) => (d === 'accepted' ? [i] : []));
      const rejectedWhole = all === 0 ? f.fileDecision === 'rejected' : accepted.length === 0;
      if (rejectedWhole) {
        files.push({ uri: f.file.uri, acceptedHunks: [] });
        continue;
      }
      anyAccepted = true;
      if (f.finalText !== undefined) files.push({ uri: f.file.uri, finalText: f.finalText });
      else if (accepted.length < all) files.push({ uri: f.file.uri, acceptedHunks: accepted });
    }
    const feedback = this.feedback();
    const params: ResolveReviewParams = anyAccepted
      ? { reviewId: this.id, decision: 'accept', ...(files.length ? { files } : {}) }
      : { reviewId: this.id, decision: 'reject' };
    if (feedback) params.feedback = feedback;
    return params;
  }

  /** The user's reasons, one line each, naming the file and hunk they are about. */
  private feedback(): string | undefined {
    const lines: string[] = this.reviewReason ? [this.reviewReason] : [];
    for (const f of this.files) {
      if (f.fileReason) lines.push(`${f.file.path}: ${f.fileReason}`);
      f.reasons.forEach((r, i) => {
        if (r) lines.push(`${f.file.path}, hunk ${i}: ${r}`);
      });
    }
    const unique = [...new Set(lines)];
    return unique.length ? unique.join('\n') : undefined;
  }
}

function nonEmpty(s: string | undefined): string | undefined {
  const t = s?.trim();
  return t ? t : undefined;
}

/** Counts of added and removed lines of a file, for the tree. */
export function lineCounts(file: ReviewFile): { added: number; removed: number } {
  return file.hunks.reduce((acc, h) => ({ added: acc.added + h.newLines, removed: acc.removed + h.oldLines }), { added: 0, removed: 0 });
}

/** The review's outcome as the chat's tool card shows it. */
export function outcome(s: ReviewState): string {
  const summaries = s.files.map((_, i) => s.fileSummary(i));
  if (summaries.every((x) => x === 'rejected')) return 'rejected';
  if (summaries.every((x) => x === 'accepted')) return 'accepted';
  if (s.files.length === 1) return summaries[0].startsWith('accepted') ? summaries[0] : `partly accepted (${summaries[0]})`;
  return 'partly accepted';
}
