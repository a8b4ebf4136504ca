// Summarises a chromium performance trace (BENCH_TRACE): wall time of the top-level slices per
// thread and per event name, so the stream's cost can be split between script, style, layout,
// paint, raster and compositing. Usage: node trace_summary.mjs TRACE.json [TOP]

import { readFileSync } from 'node:fs';

const [file, top = '25'] = process.argv.slice(2);
const raw = JSON.parse(readFileSync(file, 'utf8'));
const events = Array.isArray(raw) ? raw : raw.traceEvents;
const threads = new Map();
const procs = new Map();
for (const e of events) {
  if (e.ph !== 'M') continue;
  if (e.name === 'thread_name') threads.set(`${e.pid}:${e.tid}`, e.args.name);
  if (e.name === 'process_name') procs.set(e.pid, e.args.name);
}
// Self time per (thread, name): complete events, with children's time subtracted.
const self = new Map();
const byThread = new Map();
for (const e of events) if (e.ph === 'X' && e.dur !== undefined) (byThread.get(`${e.pid}:${e.tid}`) ?? byThread.set(`${e.pid}:${e.tid}`, []).get(`${e.pid}:${e.tid}`)).push(e);
for (const [key, list] of byThread) {
  list.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  const stack = [];
  for (const e of list) {
    while (stack.length && stack[stack.length - 1].ts + stack[stack.length - 1].dur <= e.ts) stack.pop();
    const parent = stack[stack.length - 1];
    const k = `${procs.get(e.pid) ?? e.pid} / ${threads.get(key) ?? e.tid} / ${e.name}`;
    self.set(k, (self.get(k) ?? 0) + e.dur);
    if (parent) {
      const pk = `${procs.get(parent.pid) ?? parent.pid} / ${threads.get(key) ?? parent.tid} / ${parent.name}`;
      self.set(pk, (self.get(pk) ?? 0) - Math.min(e.dur, parent.ts + parent.dur - e.ts));
    }
    stack.push(e);
  }
}
const rows = [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(top));
for (const [k, us] of rows) console.log(`${(us / 1000).toFixed(0).padStart(8)} ms  ${k}`);
