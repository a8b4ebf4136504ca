// Bundles the extension (Node, CommonJS, `vscode` external) and the chat view's script (browser,
// IIFE) into dist/ with esbuild; `--production` minifies. `--tests` instead compiles the unit
// tests to out/test/ (they import the pure modules under src/ that do not need `vscode`) and
// leaves dist/ alone.
import * as esbuild from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';

const production = process.argv.includes('--production');
const tests = process.argv.includes('--tests');
const common = { bundle: true, minify: production, sourcemap: !production, logLevel: 'warning', legalComments: 'none' };

if (!tests) {
  rmSync('dist', { recursive: true, force: true });
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
} else {
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
