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

/** Restarts a dead server at most `max` times in `windowMs`, and says what happened. */
export class RestartPolicy implements ErrorHandler {
  private readonly restarts: number[] = [];
  constructor(
    private readonly onClosed: (willRestart: boolean) => void,
    private readonly max = 3,
    private readonly windowMs = 3 * 60_000,
  ) {}

  error(): ErrorHandlerResult {
    return { action: ErrorAction.Continue, handled: true };
  }

  closed(): CloseHandlerResult {
    const now = Date.now();
    while (this.restarts.length && now - this.restarts[0] > this.windowMs) this.restarts.shift();
    if (this.restarts.length >= this.max) {
      this.onClosed(false);
      return {
        action: CloseAction.DoNotRestart,
        message: `agentls: the server stopped ${this.max + 1} times within ${this.windowMs / 60_000} minutes and is not restarted. Run "agentls: Restart Server" after checking "agentls: Show Log".`,
      };
    }
    this.restarts.push(now);
    this.onClosed(true);
    return { action: CloseAction.Restart, message: `agentls: the server stopped unexpectedly; restarting it (${this.restarts.length} of ${this.max}).` };
  }
}
