// What the status bar item says for the extension's state (pure, unit-tested).

export interface StatusFacts {
  server: 'starting' | 'running' | 'stopped' | 'missing';
  busy: boolean;
  currentTool?: string;
  pendingReviewFiles: number;
  pendingPermissions: number;
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
  if (s.busy) return { text: `$(loading~spin) agentls: ${s.currentTool ?? 'working'}`, tooltip: 'The agent is working (click to open the chat)', warn: false };
  return { text: '$(comment-discussion) agentls', tooltip: 'agentls: idle (click to open the chat)', warn: false };
}
