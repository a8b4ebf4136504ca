// Entry point: builds the one Ctx that owns the extension's state and registers the commands.

import type * as vscode from 'vscode';
import { registerCommands } from './commands';
import { Ctx } from './ctx';

let ctx: Ctx | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  ctx = new Ctx(context);
  context.subscriptions.push(ctx, ...registerCommands(ctx));
  await ctx.start();
}

export async function deactivate(): Promise<void> {
  await ctx?.deactivate();
  ctx = undefined;
}
