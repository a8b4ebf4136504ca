// Bundles the extension (Node, CommonJS, `vscode` external) and the chat view's script (browser,
// IIFE) with esbuild; `--tests` also compiles the unit tests to out/test/ (they import the pure
// modules under src/ that do not need `vscode`). `--production` minifies.
import * as esbuild from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';

const production = process.argv.includes('--production');
const tests = process.argv.includes('--tests');
rmSync('dist', { recursive: true, force: true });
const common = { bundle: true, minify: production, sourcemap: !production, logLevel: 'warning', legalComments: 'none' };

await esbuild.build({
  ...common,
  entryPoints: ['src/extension.ts'],
  outfile: 'dist/extension.js',
  platform: 'node',
  format: 'cjs',
  target: 'node18',
  external: ['vscode'],
});
await esbuild.build({
  ...common,
  entryPoints: ['webview/main.ts'],
  outfile: 'dist/webview.js',
  platform: 'browser',
  format: 'iife',
  target: 'es2020',
});
if (tests) {
  const entryPoints = readdirSync('test').filter((f) => f.endsWith('.test.ts')).map((f) => `test/${f}`);
  await esbuild.build({
    bundle: true,
    entryPoints,
    outdir: 'out/test',
    platform: 'node',
    format: 'cjs',
    target: 'node18',
    sourcemap: 'inline',
    logLevel: 'warning',
  });
}
