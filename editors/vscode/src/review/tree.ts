// The "Pending changes" tree: the shown review's files with op, +/- counts and decision state,
// and how many reviews wait behind it.

import * as vscode from 'vscode';
import type { ReviewController } from './controller';
import { lineCounts } from './hunks';

const OP = { create: 'A', modify: 'M', delete: 'D', rename: 'R' } as const;
const ICON = { create: 'diff-added', modify: 'diff-modified', delete: 'diff-removed', rename: 'diff-renamed' } as const;

type Node = { kind: 'file'; reviewId: string; file: number } | { kind: 'queued'; count: number };

export class PendingChangesTree implements vscode.TreeDataProvider<Node> {
  readonly onDidChangeTreeData: vscode.Event<void>;

  constructor(private readonly reviews: ReviewController) {
    this.onDidChangeTreeData = reviews.onDidChange;
  }

  getChildren(node?: Node): Node[] {
    if (node) return [];
    const [first, ...rest] = this.reviews.reviews;
    if (!first) return [];
    const files: Node[] = first.files.map((_, file) => ({ kind: 'file', reviewId: first.id, file }));
    return rest.length ? [...files, { kind: 'queued', count: rest.length }] : files;
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === 'queued') {
      const item = new vscode.TreeItem(`${node.count} more review${node.count > 1 ? 's' : ''} queued`);
      item.iconPath = new vscode.ThemeIcon('watch');
      return item;
    }
    const state = this.reviews.reviews.find((r) => r.id === node.reviewId);
    if (!state) return new vscode.TreeItem('');
    const f = state.files[node.file].file;
    const name = f.op === 'rename' && f.newUri ? `${vscode.workspace.asRelativePath(vscode.Uri.parse(f.uri))} → ${vscode.workspace.asRelativePath(vscode.Uri.parse(f.newUri))}` : vscode.workspace.asRelativePath(vscode.Uri.parse(f.uri));
    const item = new vscode.TreeItem(name);
    const { added, removed } = lineCounts(f);
    const summary = state.fileSummary(node.file);
    item.description = `${OP[f.op]}  +${added} −${removed}${summary ? `  · ${summary}` : ''}`;
    item.tooltip = `${f.op} ${f.path}: ${f.hunks.length} hunk${f.hunks.length === 1 ? '' : 's'}`;
    item.iconPath = state.fileDecided(node.file) ? new vscode.ThemeIcon('pass') : new vscode.ThemeIcon(ICON[f.op]);
    item.contextValue = state.fileDecided(node.file) ? 'decidedFile' : 'pendingFile';
    const ref = { reviewId: node.reviewId, file: node.file };
    item.command = { title: 'Open Change', command: 'agentls.vscode.openReviewFile', arguments: [ref] };
    return item;
  }
}
