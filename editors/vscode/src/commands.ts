// One function per palette command. IDs are `agentls.vscode.*`: the server's own commands
// (`agentls.newSession`, `agentls.prompt`, …) are registered by the language client itself.

import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import type { Entry } from './chat/model';
import type { HunkRef } from './review/controller';
import { showMcpServers } from './mcp';

type Handler = (...args: never[]) => unknown;

export function registerCommands(ctx: Ctx): vscode.Disposable[] {
  const commands: Record<string, Handler> = {
    'agentls.vscode.openChat': () => ctx.chat.reveal(),
    'agentls.vscode.ask': () => ask(ctx),
    'agentls.vscode.askAboutSelection': () => askAboutSelection(ctx),
    'agentls.vscode.steer': () => steer(ctx),
    'agentls.vscode.cancel': () => ctx.stop(),
    'agentls.vscode.newSession': async () => {
      await ctx.newSession();
      await ctx.chat.reveal();
    },
    'agentls.vscode.switchSession': async () => {
      await ctx.switchSession();
      await ctx.chat.reveal();
    },
    'agentls.vscode.selectModel': () => ctx.selectModel(),
    'agentls.vscode.setReasoningEffort': () => ctx.setReasoningEffort(),
    'agentls.vscode.setApprovalMode': () => ctx.setApprovalMode(),
    'agentls.vscode.showTranscript': () => showTranscript(ctx),
    'agentls.vscode.acceptAll': () => ctx.reviews.acceptAll(),
    'agentls.vscode.rejectAll': () => ctx.reviews.rejectAll(),
    'agentls.vscode.acceptFile': (ref?: HunkRef | vscode.Uri) => ctx.reviews.acceptFile(ref),
    'agentls.vscode.rejectFile': (ref?: HunkRef | vscode.Uri) => ctx.reviews.rejectFile(ref),
    'agentls.vscode.acceptHunk': (ref?: HunkRef) => ctx.reviews.acceptHunk(ref),
    'agentls.vscode.rejectHunk': (ref?: HunkRef) => ctx.reviews.rejectHunk(ref),
    'agentls.vscode.openReviewFile': (ref?: HunkRef) => ctx.reviews.openFile(ref),
    'agentls.vscode.showLog': () => ctx.showLog(),
    'agentls.vscode.restartServer': () => ctx.restart(),
    'agentls.vscode.compact': () => ctx.compact(),
    'agentls.vscode.mcpServers': () => showMcpServers(ctx),
    'agentls.vscode.undoTurn': () => ctx.undoTurn(),
    'agentls.vscode.rewindTurn': () => ctx.undoTurn(true),
    'agentls.vscode.redoTurn': () => ctx.redoTurn(),
  };
  return Object.entries(commands).map(([id, handler]) =>
    vscode.commands.registerCommand(id, async (...args: unknown[]) => {
      try {
        await (handler as (...a: unknown[]) => unknown)(...args);
      } catch (e) {
        void vscode.window.showErrorMessage(`agentls: ${e instanceof Error ? e.message : String(e)}`);
      }
    }),
  );
}

async function ask(ctx: Ctx): Promise<void> {
  const text = await vscode.window.showInputBox({ title: 'agentls: ask', prompt: 'What should the agent do?', ignoreFocusOut: true });
  if (!text?.trim()) return;
  await ctx.chat.reveal();
  await ctx.send(text);
}

async function askAboutSelection(ctx: Ctx): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.uri.scheme !== 'file') {
    void vscode.window.showInformationMessage('agentls: select some code in a file first.');
    return;
  }
  const sel = editor.selection;
  const lines = sel.isEmpty ? `line ${sel.active.line + 1}` : `lines ${sel.start.line + 1}-${sel.end.line + 1}`;
  const text = await vscode.window.showInputBox({ title: `agentls: ask about ${vscode.workspace.asRelativePath(editor.document.uri)}, ${lines}`, prompt: 'What should the agent do with the selection?', ignoreFocusOut: true });
  if (!text?.trim()) return;
  await ctx.chat.reveal();
  const range = { start: { line: sel.start.line, character: sel.start.character }, end: { line: sel.end.line, character: sel.end.character } };
  await ctx.prompt({ text, context: { uri: editor.document.uri.toString(), ...(sel.isEmpty ? {} : { range }) } });
}

async function steer(ctx: Ctx): Promise<void> {
  if (!ctx.store.activeModel()?.header.busy) {
    void vscode.window.showInformationMessage('agentls: no turn is running; use Ask.');
    return;
  }
  const text = await vscode.window.showInputBox({ title: 'agentls: steer the running turn', prompt: 'Injected before the next model call', ignoreFocusOut: true });
  if (text?.trim()) await ctx.steer(text);
}

/** The active session as a markdown document. */
export function transcriptMarkdown(entries: readonly Entry[]): string {
  const out: string[] = [];
  for (const e of entries) {
    switch (e.kind) {
      case 'user':
        out.push(`## ${e.steering ? 'You (steering)' : 'You'}\n\n${e.text}\n`);
        break;
      case 'assistant':
        out.push(`## agentls\n\n${e.text}\n${e.reasoning ? `\n<details><summary>Reasoning</summary>\n\n${e.reasoning}\n\n</details>\n` : ''}`);
        break;
      case 'tool':
        out.push(`- **${e.toolName}** \`${e.summary}\`: ${e.status}${e.durationMs !== undefined ? ` in ${e.durationMs} ms` : ''}${e.review ? `, ${e.review}` : ''}${e.error ? ` (${e.error})` : ''}\n`);
        break;
      case 'notice':
        out.push(`> ${e.level}: ${e.text}\n`);
        break;
      case 'turn_end':
        out.push(`*${e.reason} · ${e.inputTokens} in / ${e.outputTokens} out tokens*\n`);
        break;
    }
  }
  return out.join('\n');
}

async function showTranscript(ctx: Ctx): Promise<void> {
  const model = ctx.store.activeModel();
  if (!model) {
    void vscode.window.showInformationMessage('agentls: no session yet.');
    return;
  }
  const doc = await vscode.workspace.openTextDocument({ language: 'markdown', content: `# agentls session ${model.header.sessionId ?? ''}\n\n${transcriptMarkdown(model.entries)}` });
  await vscode.window.showTextDocument(doc, { preview: false });
}
