// Finds the `agentls` binary: the `agentls.server.path` setting, else `agentls` on PATH, else
// cargo's install directory (editors started from a desktop often lack ~/.cargo/bin on PATH).

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export const INSTALL_COMMAND = 'cargo install --locked --path . (in the agentls checkout), or ./scripts/install';

function executable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

export type ServerLookup = { path: string } | { error: string };

export function findServer(setting: string | undefined, env: NodeJS.ProcessEnv = process.env): ServerLookup {
  const configured = setting?.trim();
  if (configured) {
    const expanded = configured.startsWith('~/') ? path.join(os.homedir(), configured.slice(2)) : configured;
    if (executable(expanded)) return { path: expanded };
    return { error: `The agentls server was not found at "${configured}" (setting agentls.server.path).` };
  }
  const name = process.platform === 'win32' ? 'agentls.exe' : 'agentls';
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir && executable(path.join(dir, name))) return { path: path.join(dir, name) };
  }
  const cargo = path.join(env.CARGO_HOME ?? path.join(os.homedir(), '.cargo'), 'bin', name);
  if (executable(cargo)) return { path: cargo };
  return { error: 'The agentls server is not installed (no agentls on PATH, and the setting agentls.server.path is empty).' };
}
