// What the status bar item says for the extension's state (pure, unit-tested).

import type { ContextInfo } from './lsp_ext';

export interface StatusFacts {
  server: 'starting' | 'running' | 'stopped' | 'missing';
  busy: boolean;
  currentTool?: string;
  pendingReviewFiles: number;
  pendingPermissions: number;
  /** The active session's context use, when known. */
  context?: ContextInfo;
}

/** ` · 42%` and a tooltip line for the active session's context use. */
export function contextText(c: ContextInfo | undefined): { suffix: string; line: string } {
  if (!c || !c.contextWindow) return { suffix: '', line: '' };
  const percent = Math.floor((c.estimateTokens * 100) / c.contextWindow);
  const tokens = (n: number) => n.toLocaleString('en-US');
  return {
    suffix: ` · ${percent}%`,
    line: `\nContext: ~${tokens(c.estimateTokens)} of ${tokens(c.contextWindow)} tokens (${percent}%), estimate calibrated ×${c.calibration.toFixed(2)} by the provider's counts`,
  };
}

export function statusText(s: StatusFacts): { text: string; tooltip: string; warn: boolean } {
  if (s.server === 'missing') return { text: '$(warning) agentls: not installed', tooltip: 'The agentls server was not found', warn: true };
  if (s.server === 'stopped') return { text: '$(error) agentls: stopped', tooltip: 'The agentls server is not running (agentls: Restart Server)', warn: true };
  if (s.server === 'starting') return { text: '$(loading~spin) agentls', tooltip: 'Starting the agentls server', warn: false };
  if (s.pendingPermissions) return { text: '$(shield) agentls: waiting for permission', tooltip: 'A command waits for your permission', warn: true };
  if (s.pendingReviewFiles) {
    const n = s.pendingReviewFiles;
    return { text: `$(diff) agentls: ${n} change${n === 1 ? '' : 's'} to review`, tooltip: 'Proposed changes wait for your review', warn: true };
  }
  const context = contextText(s.context);
  if (s.busy) return { text: `$(loading~spin) agentls: ${s.currentTool ?? 'working'}${context.suffix}`, tooltip: `The agent is working (click to open the chat)${context.line}`, warn: false };
  return { text: `$(comment-discussion) agentls${context.suffix}`, tooltip: `agentls: idle (click to open the chat)${context.line}`, warn: false };
}
