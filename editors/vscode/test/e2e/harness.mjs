// The end-to-end harness: a scripted fake provider, code-server (the real VS Code workbench and
// extension host) with the packaged .vsix installed, the real agentls binary, and Debian's
// chromium driven by playwright-core. Everything lives in a fresh directory per run.

import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { join } from 'node:path';

export function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (scripts/test-vscode sets it)`);
  return v;
}

export async function until(what, check, timeoutMs = 30_000, intervalMs = 100) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${last.message})` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export class FakeProvider {
  constructor(dir, turns) {
    this.dir = dir;
    writeFileSync(join(dir, 'turns.json'), JSON.stringify(turns));
    this.requestsFile = join(dir, 'requests.jsonl');
    this.proc = spawn('python3', [join(env('REPO'), 'tests/editors/fake_provider_cli.py'), '--script', join(dir, 'turns.json'),
      '--requests', this.requestsFile, '--port-file', join(dir, 'port'), '--stdin-lifetime'], { stdio: ['pipe', 'inherit', 'inherit'] });
  }

  async start() {
    const portFile = join(this.dir, 'port');
    this.port = await until('the fake provider', () => existsSync(portFile) && readFileSync(portFile, 'utf8').trim(), 20_000);
    return this;
  }

  get baseUrl() {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Every request body the model got so far. */
  requests() {
    if (!existsSync(this.requestsFile)) return [];
    return readFileSync(this.requestsFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  }

  stop() {
    this.proc.stdin.end();
    this.proc.kill('SIGTERM');
  }
}

/**
 * code-server on a workspace, with the .vsix installed and the server's test environment: its own
 * HOME and XDG_CONFIG_HOME, so the server's trust store and user config are the run's, never the
 * real user's. VS Code's Workspace Trust is off unless `workspaceTrust` is set.
 */
export class CodeServer {
  constructor(dir, { settings, workspaceTrust = false }) {
    this.dir = dir;
    this.workspaceTrust = workspaceTrust;
    this.home = join(dir, 'home');
    this.userData = join(dir, 'user-data');
    this.extensions = join(dir, 'extensions');
    for (const d of [this.home, join(this.userData, 'User'), this.extensions]) mkdirSync(d, { recursive: true });
    writeFileSync(join(this.userData, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
  }

  /** The server's trust store (`$XDG_CONFIG_HOME/agentls/trust.toml`) for this run. */
  get trustStore() {
    return join(this.home, '.config', 'agentls', 'trust.toml');
  }

  baseEnv(provider) {
    return {
      PATH: process.env.PATH,
      HOME: this.home,
      XDG_CONFIG_HOME: join(this.home, '.config'),
      XDG_DATA_HOME: join(this.home, '.local', 'share'),
      ANTHROPIC_API_KEY: 'sk-ant-fake-key',
      ANTHROPIC_BASE_URL: provider.baseUrl,
      AGENTLS_CONFIG: join(this.dir, 'no-user-config.toml'),
      AGENTLS_DATA_DIR: join(this.dir, 'agentls-data'),
      AGENTLS_CLIENT_TIMEOUT_MS: '5000',
      AGENTLS_LOG: 'agentls=info',
    };
  }

  args() {
    return ['--auth', 'none', '--disable-telemetry', '--disable-update-check', ...(this.workspaceTrust ? [] : ['--disable-workspace-trust']),
      '--disable-getting-started-override', '--extensions-dir', this.extensions, '--user-data-dir', this.userData];
  }

  install(vsix, provider) {
    execFileSync(env('CODE_SERVER'), [...this.args(), '--install-extension', vsix], { env: this.baseEnv(provider), stdio: ['ignore', 'pipe', 'inherit'] });
  }

  async start(workspace, provider) {
    this.port = await freePort();
    this.log = join(this.dir, 'code-server.log');
    writeFileSync(this.log, '');
    const out = (data) => writeFileSync(this.log, data, { flag: 'a' });
    this.proc = spawn(env('CODE_SERVER'), [...this.args(), '--bind-addr', `127.0.0.1:${this.port}`, workspace], {
      env: this.baseEnv(provider),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    this.proc.stdout.on('data', out);
    this.proc.stderr.on('data', out);
    await until('code-server to listen', async () => (await fetch(`http://127.0.0.1:${this.port}/healthz`)).ok, 60_000, 250);
    return `http://127.0.0.1:${this.port}/?folder=${encodeURIComponent(workspace)}`;
  }

  /** The extension's log ("agentls" output channel) of every extension host so far, oldest first. */
  extensionLog() {
    const logs = join(this.userData, 'logs');
    if (!existsSync(logs)) return '';
    const files = [];
    for (const session of readdirSync(logs).sort()) {
      for (const host of readdirSync(join(logs, session)).filter((d) => d.startsWith('exthost')).sort((a, b) => Number(a.slice(7)) - Number(b.slice(7)))) {
        const f = join(logs, session, host, 'agentls.agentls', 'agentls.log');
        if (existsSync(f)) files.push(f);
      }
    }
    return files.map((f) => readFileSync(f, 'utf8')).join('');
  }

  /** Pids of the `binary serve` processes under this code-server: the extension's server (its
   *  process guard, `binary __guard`, is not counted). */
  childrenRunning(binary) {
    const parent = (pid) => {
      try {
        return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[1]);
      } catch {
        return 0;
      }
    };
    const underUs = (pid) => {
      for (let p = pid, n = 0; p > 1 && n < 20; p = parent(p), n++) if (p === this.proc.pid) return true;
      return false;
    };
    return readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number).filter((pid) => {
      try {
        const [program, subcommand] = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return program === binary && subcommand === 'serve' && underUs(pid);
      } catch {
        return false;
      }
    });
  }

  /** The ids of the sessions the server stored (`$AGENTLS_DATA_DIR/sessions/<id>.jsonl`). */
  storedSessions() {
    const dir = join(this.dir, 'agentls-data', 'sessions');
    if (!existsSync(dir)) return [];
    return readdirSync(dir).filter((f) => f.endsWith('.jsonl')).map((f) => f.slice(0, -'.jsonl'.length)).sort();
  }

  stop() {
    if (this.proc?.pid) {
      try {
        process.kill(-this.proc.pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
  }
}

/** The workbench as the tests drive it: the palette, the chat view (a webview: nested iframes),
 *  screenshots into $ARTEFACTS. */
export class Workbench {
  constructor(page) {
    this.page = page;
  }

  shot(name) {
    return this.page.screenshot({ path: join(env('ARTEFACTS'), `${name}.png`) });
  }

  async palette(command) {
    await this.page.keyboard.press('F1');
    const input = this.page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill(`>${command}`);
    await this.page.locator('.quick-input-list .monaco-list-row', { hasText: command }).first().waitFor({ state: 'visible' });
    await this.page.keyboard.press('Enter');
  }

  chatFrame() {
    return until('the chat view', async () => {
      for (const f of this.page.frames()) {
        if (await f.$('#transcript').catch(() => null)) return f;
      }
      return undefined;
    }, 60_000, 250);
  }

  async chatText() {
    return (await this.chatFrame()).$eval('#transcript', (e) => e.innerText);
  }

  /** Sends `text` from the chat view's prompt box. */
  async send(text) {
    const f = await this.chatFrame();
    await f.locator('#prompt').click();
    await f.locator('#prompt').fill(text);
    await f.locator('#prompt').press('Enter');
  }

  /** A notification toast holding `text`. */
  toast(text) {
    return this.page.locator('.notification-toast', { hasText: text }).first();
  }
}

/** Workbench settings that keep the window quiet: no tips, start page, telemetry, updates,
 *  built-in chat or git. */
export const QUIET_SETTINGS = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'extensions.ignoreRecommendations': true,
  'telemetry.telemetryLevel': 'off',
  'chat.commandCenter.enabled': false,
  'window.commandCenter': false,
  'update.mode': 'none',
  'git.enabled': false,
};

/** code-server running the agentls binary under test with the scripted model, VS Code's
 *  workspace trust on and asked about at startup (`startupPrompt` 'always') or not ('never': the
 *  window opens in Restricted Mode until the user decides), the window otherwise quiet. */
export function trustingCodeServer(dir, startupPrompt) {
  return new CodeServer(dir, {
    workspaceTrust: true,
    settings: {
      'agentls.server.path': env('AGENTLS_BIN'),
      'agentls.model': 'claude-test',
      'security.workspace.trust.enabled': true,
      'security.workspace.trust.startupPrompt': startupPrompt,
      ...QUIET_SETTINGS,
    },
  });
}

/** Closes what a test file opened: a last screenshot `final` (if the workbench showed), the
 *  browser, code-server and the fake providers. */
export async function closeAll({ wb, browser, codeServer, providers = [] }, final) {
  if (wb) await wb.shot(final).catch(() => undefined);
  await browser?.close().catch(() => undefined);
  codeServer?.stop();
  for (const provider of providers) provider?.stop();
}

/** Installs the .vsix, starts code-server on `workspace` and opens it in chromium; resolves
 *  once the workbench shows. */
export async function openWorkbench(codeServer, workspace, provider) {
  codeServer.install(env('VSIX'), provider);
  const url = await codeServer.start(workspace, provider);
  const browser = await launchBrowser();
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(url);
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60_000 });
  return { browser, page, wb: new Workbench(page) };
}

export async function launchBrowser() {
  const require = createRequire(env('PLAYWRIGHT_CORE'));
  const { chromium } = require('playwright-core');
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
  });
}

export function freshDir(path) {
  rmSync(path, { recursive: true, force: true });
  mkdirSync(path, { recursive: true });
  return path;
}
