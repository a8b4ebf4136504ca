// Owns every session's chat model and which session the chat view shows. Events of any session
// are folded into that session's model; listeners hear the ops of every session.

import type { SessionInfo } from '../lsp_ext';
import { ChatModel, type ChatOp } from './model';

export type OpListener = (sessionId: string, op: ChatOp, changed: number[]) => void;
export type ActiveListener = (sessionId: string | undefined) => void;

export class ChatStore {
  private readonly models = new Map<string, ChatModel>();
  private active: string | undefined;
  private readonly opListeners: OpListener[] = [];
  private readonly activeListeners: ActiveListener[] = [];

  get activeId(): string | undefined {
    return this.active;
  }

  model(sessionId: string): ChatModel {
    let m = this.models.get(sessionId);
    if (!m) {
      m = new ChatModel();
      m.header.sessionId = sessionId;
      this.models.set(sessionId, m);
    }
    return m;
  }

  /** The first thing the user asked in a session this window has seen, for the session picker. */
  firstPrompt(sessionId: string): string | undefined {
    const e = this.models.get(sessionId)?.entries.find((x) => x.kind === 'user');
    return e?.kind === 'user' ? e.text.split('\n')[0] : undefined;
  }

  /** Starts a session's transcript over (before loading its stored history); the views showing
   *  it start over too. */
  reset(sessionId: string): ChatModel {
    const old = this.models.get(sessionId);
    const m = new ChatModel();
    m.header = { ...(old?.header ?? {}), sessionId, busy: false, currentTool: undefined };
    this.models.set(sessionId, m);
    if (sessionId === this.active) for (const l of this.activeListeners) l(this.active);
    return m;
  }

  activeModel(): ChatModel | undefined {
    return this.active ? this.model(this.active) : undefined;
  }

  apply(sessionId: string, op: ChatOp): void {
    const changed = this.model(sessionId).apply(op);
    for (const l of this.opListeners) l(sessionId, op, changed);
  }

  /** Updates a session's header from a listSessions / newSession answer. */
  describe(info: Partial<SessionInfo> & { sessionId: string }): void {
    const m = this.model(info.sessionId);
    m.header = {
      ...m.header,
      sessionId: info.sessionId,
      ...(info.model !== undefined ? { model: info.model } : {}),
      ...(info.reasoningEffort !== undefined ? { reasoningEffort: info.reasoningEffort } : {}),
      ...(info.approval !== undefined ? { approval: info.approval } : {}),
    };
    for (const l of this.activeListeners) if (info.sessionId === this.active) l(this.active);
  }

  setActive(sessionId: string | undefined): void {
    if (sessionId) this.model(sessionId);
    this.active = sessionId;
    for (const l of this.activeListeners) l(sessionId);
  }

  /** Forgets every session (the server that held them stopped). */
  clear(): void {
    for (const m of this.models.values()) m.header = { ...m.header, busy: false, currentTool: undefined };
    for (const l of this.activeListeners) l(this.active);
  }

  onOp(l: OpListener): { dispose(): void } {
    this.opListeners.push(l);
    return { dispose: () => this.opListeners.splice(this.opListeners.indexOf(l) >>> 0, 1) };
  }

  onActive(l: ActiveListener): { dispose(): void } {
    this.activeListeners.push(l);
    return { dispose: () => this.activeListeners.splice(this.activeListeners.indexOf(l) >>> 0, 1) };
  }
}
