// Messages between the extension host and the chat webview.

import type { ChatOp, ChatSnapshot } from './model';

export type ToWebview =
  | { type: 'reset'; snapshot: ChatSnapshot | undefined; serverState: string }
  | { type: 'ops'; ops: ChatOp[] }
  | { type: 'serverState'; state: string }
  | { type: 'focus' };

export type FromWebview =
  | { type: 'ready' }
  | { type: 'send'; text: string }
  /** The prompt box got focus or a first keystroke since the last send. */
  | { type: 'typing' }
  | { type: 'stop' }
  | { type: 'newSession' }
  | { type: 'switchSession' }
  | { type: 'selectModel' }
  | { type: 'setReasoningEffort' }
  /** "Undo this turn" on turn `turnId` (which also reverts `laterTurns` later turns). */
  | { type: 'undoTurn'; turnId: number; laterTurns: number }
  | { type: 'redoTurn' };
