// When the server dies (pure, unit-tested): the restart budget, what went down with the server,
// and what the chat says when it stopped and when its session was reopened on the next one.
// Nothing the dead server asked (a review, a permission question) is answered to the next one:
// those are counted here as dropped, and the user is told.

/** Restarts of a dead server: at most `max` within `windowMs`. */
export class RestartBudget {
  private readonly times: number[] = [];
  constructor(
    readonly max = 3,
    readonly windowMs = 3 * 60_000,
  ) {}

  /** Takes a restart at `now` (ms): its number (1 … max), or undefined when the budget is spent. */
  take(now: number): number | undefined {
    while (this.times.length && now - this.times[0] > this.windowMs) this.times.shift();
    if (this.times.length >= this.max) return undefined;
    this.times.push(now);
    return this.times.length;
  }
}

/** What went down with a server. */
export interface Loss {
  /** `crash`: it stopped by itself; `restart`: the user restarted it. */
  cause: 'crash' | 'restart';
  /** A crash: the automatic restart that follows (n of max), or none (the budget is spent). */
  restart?: { n: number; max: number };
  /** A turn was running (it is interrupted). */
  turnRunning: boolean;
  /** Reviews closed without applying anything. */
  reviews: number;
  /** The commands whose permission questions were dropped (they did not run). */
  permissions: string[];
}

/** The restart budget that was spent, for the text that says it. */
export interface Limit { stops: number; minutes: number }

/** A later loss before the session was reopened: the first cause, everything dropped by either. */
export function mergeLoss(first: Loss, then: Loss): Loss {
  return {
    cause: first.cause === 'crash' || then.cause === 'crash' ? 'crash' : 'restart',
    restart: then.restart,
    turnRunning: first.turnRunning || then.turnRunning,
    reviews: first.reviews + then.reviews,
    permissions: [...first.permissions, ...then.permissions],
  };
}

/** How the chat names a session: its first prompt's first line (shortened), else its id's start. */
export function sessionLabel(sessionId: string, firstPrompt?: string): string {
  const line = firstPrompt?.split('\n')[0].trim();
  if (!line) return sessionId.slice(0, 8);
  return `"${line.length > 60 ? `${line.slice(0, 59)}…` : line}"`;
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** What was dropped, as sentences ('' when nothing was). */
function dropped(loss: Loss): string {
  const out: string[] = [];
  if (loss.turnRunning) out.push('The turn that was running was interrupted.');
  if (loss.reviews) out.push(`${plural(loss.reviews, 'review was', 'reviews were')} closed: nothing of ${loss.reviews === 1 ? 'it' : 'them'} was applied.`);
  if (loss.permissions.length) {
    const commands = loss.permissions.map((c) => `"${c}"`).join(', ');
    out.push(`The permission ${loss.permissions.length === 1 ? 'question' : 'questions'} for ${commands} ${loss.permissions.length === 1 ? 'was' : 'were'} dropped: nothing ran.`);
  }
  return out.join(' ');
}

/** What the chat says at once, when the server stopped. `limit`: a crash not restarted. */
export function lossNotice(loss: Loss, limit?: Limit): string {
  const what =
    loss.cause === 'restart'
      ? 'agentls is being restarted.'
      : loss.restart
        ? `agentls stopped unexpectedly; restarting it (${loss.restart.n} of ${loss.restart.max})…`
        : `agentls stopped unexpectedly${limit ? ` ${plural(limit.stops, 'time', 'times')} within ${plural(limit.minutes, 'minute', 'minutes')}` : ''} and was not restarted. Run "agentls: Restart Server" to start it again and reopen this session; "agentls: Show Log" shows why it stopped.`;
  return [what, dropped(loss)].filter(Boolean).join(' ');
}

export type ReopenOutcome =
  | { reopened: true; historyEntries?: number }
  | { reopened: false; reason: string };

/** What the chat says once the next server is up and the session was reopened (or not). */
export function reopenNotice(loss: Loss, label: string, outcome: ReopenOutcome): string {
  const restarted = loss.cause === 'crash' ? 'agentls stopped unexpectedly and was restarted' : 'agentls was restarted';
  if (!outcome.reopened) {
    return [
      `${restarted}; session ${label} could not be reopened: ${outcome.reason}.`,
      dropped(loss),
      'Your next message starts a new session; "agentls: Switch Session" lists the stored ones.',
    ].filter(Boolean).join(' ');
  }
  const history = outcome.historyEntries === undefined ? '' : ` with its history (${plural(outcome.historyEntries, 'entry', 'entries')})`;
  return [`${restarted}; session ${label} reopened${history}.`, dropped(loss)].filter(Boolean).join(' ');
}
