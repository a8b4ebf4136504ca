// Builds the LanguageClient: how the server is started, what the client announces
// (experimental.agentls, including that it resolves folder trust itself), and the middleware that serves the `agentls` configuration section in
// the server's own spelling.

import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  type ClientCapabilities,
  type CloseHandlerResult,
  type ErrorHandler,
  type ErrorHandlerResult,
  type LanguageClientOptions,
  type ServerOptions,
  type StaticFeature,
} from 'vscode-languageclient/node';
import { serverLayer, SETTING_KEYS, type UserSettings } from './config';
import { CLIENT_CAPABILITY } from './lsp_ext';
import { RestartBudget, type Limit } from './recovery';

/** Reads the settings the user set (defaults are left to the server's own configuration). */
export function userSettings(): UserSettings {
  const cfg = vscode.workspace.getConfiguration('agentls');
  const out: Record<string, unknown> = {};
  for (const [key, field] of SETTING_KEYS) {
    const i = cfg.inspect(key);
    // the narrowest scope that sets it wins, even with null ("the server's configuration")
    const v = [i?.workspaceFolderValue, i?.workspaceValue, i?.globalValue].find((x) => x !== undefined);
    if (v !== undefined) out[field] = v;
  }
  return out as UserSettings;
}

class AgentlsCapability implements StaticFeature {
  getState(): { kind: 'static' } {
    return { kind: 'static' };
  }
  fillClientCapabilities(caps: ClientCapabilities): void {
    caps.experimental = { ...(caps.experimental as object | undefined), agentls: CLIENT_CAPABILITY };
  }
  initialize(): void {}
  clear(): void {}
}

export function createClient(
  serverPath: string,
  env: NodeJS.ProcessEnv,
  outputChannel: vscode.LogOutputChannel,
  errorHandler: ErrorHandler,
): LanguageClient {
  const serverOptions: ServerOptions = { command: serverPath, args: ['serve', '--stdio'], options: { env } };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file' }],
    outputChannel,
    initializationOptions: () => serverLayer(userSettings()),
    errorHandler,
    middleware: {
      workspace: {
        configuration: (params, token, next) => {
          if (params.items.some((i) => i.section === 'agentls')) {
            return params.items.map((i) => (i.section === 'agentls' ? serverLayer(userSettings()) : null));
          }
          return next(params, token);
        },
      },
    },
  };
  const client = new LanguageClient('agentls', 'agentls', serverOptions, clientOptions);
  client.registerFeature(new AgentlsCapability());
  return client;
}

/** Restarts a dead server within its budget (3 times in 3 minutes). `onClosed` hears each death
 *  with the restart that follows (n of max) or none, and tells the user; when the budget is spent
 *  the client's own error message is not shown (the extension's offers Restart Server and Show Log). */
export class RestartPolicy implements ErrorHandler {
  constructor(
    private readonly onClosed: (restart: { n: number; max: number } | undefined, limit: Limit) => void,
    private readonly budget = new RestartBudget(),
  ) {}

  error(): ErrorHandlerResult {
    return { action: ErrorAction.Continue, handled: true };
  }

  closed(): CloseHandlerResult {
    const n = this.budget.take(Date.now());
    const limit: Limit = { stops: this.budget.max + 1, minutes: this.budget.windowMs / 60_000 };
    if (n === undefined) {
      this.onClosed(undefined, limit);
      return {
        action: CloseAction.DoNotRestart,
        handled: true,
        message: `agentls: the server stopped ${limit.stops} times within ${limit.minutes} minutes and is not restarted.`,
      };
    }
    this.onClosed({ n, max: this.budget.max }, limit);
    return { action: CloseAction.Restart, message: `agentls: the server stopped unexpectedly; restarting it (${n} of ${this.budget.max}).` };
  }
}
