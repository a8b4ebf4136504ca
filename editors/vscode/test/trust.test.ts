// Folder trust: VS Code's Workspace Trust decides for agentls too (one decision, not two), the
// warnings name what the server ignores, and every sensitive setting is restricted in Restricted Mode.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CLIENT_CAPABILITY, type TrustRequiredParams } from '../src/lsp_ext';
import { grantedText, PendingTrust, trustAction, trustWarning } from '../src/trust_decision';

const asked: TrustRequiredParams = {
  rootUri: 'file:///home/u/stranger',
  file: '/home/u/stranger/.agentls.toml',
  ignored: [
    { key: 'providers.anthropic.base_url', reason: 'would send your API key to http://127.0.0.1:9' },
    { key: 'shell.permission', reason: 'would run every command without asking' },
  ],
  command: 'agentls trust /home/u/stranger',
};

test('the client announces that it resolves folder trust itself', () => {
  assert.equal(CLIENT_CAPABILITY.trust, true);
});

test('a trusted workspace grants at once; Restricted Mode asks VS Code; anything else asks about the folder', () => {
  const cases = [
    [{ workspaceTrusted: true, workspaceTrustEnabled: true, inWorkspace: true }, 'grant'],
    [{ workspaceTrusted: false, workspaceTrustEnabled: true, inWorkspace: true }, 'askWorkspace'],
    // a root outside the window's folders: VS Code's decision does not cover it
    [{ workspaceTrusted: true, workspaceTrustEnabled: true, inWorkspace: false }, 'askFolder'],
    [{ workspaceTrusted: false, workspaceTrustEnabled: true, inWorkspace: false }, 'askFolder'],
    // Workspace Trust turned off: VS Code trusts everything without anyone deciding
    [{ workspaceTrusted: true, workspaceTrustEnabled: false, inWorkspace: true }, 'askFolder'],
  ] as const;
  assert.deepEqual(
    cases.map(([facts]) => trustAction(facts)),
    cases.map(([, action]) => action),
  );
});

test('the warnings name every ignored key with its reason, and how to trust', () => {
  assert.equal(
    trustWarning(asked, 'askWorkspace'),
    'agentls ignores 2 settings of /home/u/stranger/.agentls.toml until you trust this workspace: providers.anthropic.base_url (would send your API key to http://127.0.0.1:9); shell.permission (would run every command without asking). VS Code is in Restricted Mode; trusting the workspace trusts the folder for agentls too.',
  );
  assert.equal(
    trustWarning({ ...asked, ignored: asked.ignored.slice(0, 1) }, 'askFolder'),
    'agentls ignores a setting of /home/u/stranger/.agentls.toml until you trust the folder: providers.anthropic.base_url (would send your API key to http://127.0.0.1:9). To trust it, choose Trust Folder or run: agentls trust /home/u/stranger',
  );
  assert.equal(
    grantedText(asked, 'VS Code trusts this workspace'),
    'agentls trusts /home/u/stranger (VS Code trusts this workspace): sessions started from now on use all of /home/u/stranger/.agentls.toml, including providers.anthropic.base_url, shell.permission.',
  );
});

test('pending roots: one warning per root, the latest request kept, taken once', () => {
  const pending = new PendingTrust();
  const other = { ...asked, rootUri: 'file:///elsewhere', file: '/elsewhere/.agentls.toml' };
  assert.equal(pending.add(asked), true);
  assert.equal(pending.add(other), true);
  // the server restarted and asks again: no second warning, still one entry
  const again = { ...asked, ignored: asked.ignored.slice(1) };
  assert.equal(pending.add(again), false);
  assert.equal(pending.size, 2);
  assert.deepEqual(pending.take((p) => p.rootUri === asked.rootUri), [again]);
  assert.deepEqual(pending.take(() => true), [other]);
  assert.deepEqual(pending.take(() => true), []);
});

// The compiled tests run from out/test/; the manifest is a file of the repository.
const manifest = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')) as {
  capabilities: { untrustedWorkspaces: { supported: string; description: string; restrictedConfigurations: string[] } };
  contributes: { configuration: { properties: Record<string, unknown> } };
};

/**
 * Every setting, decided: restricted when a workspace's value could start a program, redirect
 * requests or loosen a permission (Restricted Mode then uses only the user's value). A new
 * setting fails this test until it is decided here.
 */
const decided: Record<string, { restricted: boolean; why: string }> = {
  'agentls.server.path': { restricted: true, why: 'the program the extension starts' },
  'agentls.provider': { restricted: true, why: 'where prompts, code and the API key are sent' },
  'agentls.profile': { restricted: false, why: 'tools and prompt; `code` mode\'s python asks permission as shell does' },
  'agentls.approval': { restricted: true, why: '`auto` applies edits without review' },
  'agentls.shell.permission': { restricted: true, why: '`allow` runs every command without asking' },
  'agentls.shell.allow': { restricted: true, why: 'commands that run without asking' },
  'agentls.model': { restricted: false, why: 'a model of the provider the user chose' },
  'agentls.reasoningEffort': { restricted: false, why: 'a request parameter' },
  'agentls.maxTurns': { restricted: false, why: 'a budget, not a permission' },
  'agentls.maxToolRoundsPerInput': { restricted: false, why: 'a budget, not a permission' },
  'agentls.loopDetection.enabled': { restricted: false, why: 'advice to the model' },
  'agentls.loopDetection.window': { restricted: false, why: 'advice to the model' },
  'agentls.oneCallPerStep': { restricted: false, why: 'fewer calls per response' },
  'agentls.contextWindowTokens': { restricted: false, why: 'a size estimate' },
  'agentls.toolLineLimits': { restricted: false, why: 'how much output the model sees' },
  'agentls.toolOutputLimits': { restricted: false, why: 'how much output the model sees' },
  'agentls.submitMode': { restricted: false, why: 'how a turn ends; every tool keeps its permission' },
  'agentls.maxSteps': { restricted: false, why: 'a budget, not a permission' },
  'agentls.timeLimitSecs': { restricted: false, why: 'a budget, not a permission' },
  'agentls.context.autoCompact': { restricted: false, why: 'when the conversation is summarised' },
  'agentls.context.autoCompactPercent': { restricted: false, why: 'when the conversation is summarised' },
  'agentls.context.keepExchanges': { restricted: false, why: 'what a summary keeps' },
  'agentls.context.charsPerToken': { restricted: false, why: 'a size estimate' },
  'agentls.context.compactionModel': { restricted: false, why: 'a model of the same provider' },
};

test('Restricted Mode is limited support, and restricts exactly the sensitive settings', () => {
  const trust = manifest.capabilities.untrustedWorkspaces;
  assert.equal(trust.supported, 'limited');
  assert.deepEqual(Object.keys(manifest.contributes.configuration.properties).sort(), Object.keys(decided).sort(), 'every setting is decided above');
  const sensitive = Object.entries(decided).filter(([, d]) => d.restricted).map(([k]) => k);
  assert.deepEqual([...trust.restrictedConfigurations].sort(), sensitive.sort());
  // the description says what is limited, by setting name
  for (const key of sensitive) assert.ok(trust.description.includes(key), `the description names ${key}`);
});
