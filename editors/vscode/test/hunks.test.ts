// Hunk bookkeeping: what the proposal side shows for the decisions taken, and the
// `agentls.resolveReview` arguments every combination of decisions produces.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { composeText, hunkRanges, locateHunks, outcome, ReviewState, splitLines } from '../src/review/hunks';
import type { ReviewFile, ReviewParams } from '../src/lsp_ext';

const recorded = JSON.parse(readFileSync(join(__dirname, '../../test/fixtures/recorded_session.json'), 'utf8')) as {
  messages: { method: string; params: unknown }[];
};
/** The review the real server sent: notes.txt, hunk 0 two→TWO, hunk 1 seven→SEVEN. */
const review = recorded.messages.find((m) => m.method === 'agentls/review')?.params as ReviewParams;
const base = 'one\ntwo\nthree\nfour\nfive\nsix\nseven\nunsaved line\n';
const notes = review.files[0];

function state(files: ReviewFile[] = review.files, bases: string[] = [base]): ReviewState {
  return new ReviewState({ ...review, files }, bases);
}

const created: ReviewFile = { uri: 'file:///ws/new.txt', path: 'new.txt', op: 'create', diff: '', hunks: [{ index: 0, oldStart: 0, oldLines: 0, newStart: 0, newLines: 2, oldText: '', newText: 'a\nb\n' }] };
const deleted: ReviewFile = { uri: 'file:///ws/old.txt', path: 'old.txt', op: 'delete', diff: '', hunks: [{ index: 0, oldStart: 0, oldLines: 1, newStart: 0, newLines: 0, oldText: 'x\n', newText: '' }] };
const renamed: ReviewFile = { uri: 'file:///ws/a.txt', newUri: 'file:///ws/b.txt', path: 'a.txt', op: 'rename', diff: '', hunks: [] };

test('lines keep their terminators', () => {
  assert.deepEqual(splitLines('a\nb\n\nc'), ['a\n', 'b\n', '\n', 'c']);
  assert.deepEqual(splitLines(''), []);
});

test('the proposal is the base with every hunk applied; a rejected hunk is left out', () => {
  const s = state();
  assert.equal(s.proposedText(0), 'one\nTWO\nthree\nfour\nfive\nsix\nSEVEN\nunsaved line\n');
  s.decideHunk(0, 1, 'rejected', 'keep seven');
  assert.equal(s.proposedText(0), 'one\nTWO\nthree\nfour\nfive\nsix\nseven\nunsaved line\n');
});

test('hunks are found where they moved when the buffer changed above them', () => {
  const moved = `added 1\nadded 2\n${base}`;
  assert.deepEqual(locateHunks(moved, notes.hunks), [3, 8]);
  assert.equal(composeText(moved, notes.hunks, () => true), `added 1\nadded 2\none\nTWO\nthree\nfour\nfive\nsix\nSEVEN\nunsaved line\n`);
  assert.deepEqual(locateHunks('nothing in common\n', notes.hunks), [undefined, undefined]);
});

test('hunk ranges follow earlier hunks that change the line count', () => {
  const grow = [
    { index: 0, oldStart: 0, oldLines: 1, newStart: 0, newLines: 3, oldText: 'a\n', newText: 'A\nA2\nA3\n' },
    { index: 1, oldStart: 2, oldLines: 1, newStart: 4, newLines: 1, oldText: 'c\n', newText: 'C\n' },
  ];
  assert.deepEqual(hunkRanges('a\nb\nc\n', grow, () => true), [{ start: 0, lines: 3 }, { start: 4, lines: 1 }]);
  assert.deepEqual(hunkRanges('a\nb\nc\n', grow, (i) => i !== 0), [{ start: 0, lines: 1 }, { start: 2, lines: 1 }]);
});

test('all hunks accepted: accept, no files listed', () => {
  const s = state();
  s.decideHunk(0, 0, 'accepted');
  assert.equal(s.complete(), false);
  s.decideHunk(0, 1, 'accepted');
  assert.equal(s.complete(), true);
  assert.deepEqual(s.resolveParams(), { reviewId: review.reviewId, decision: 'accept' });
});

test('one hunk accepted, the other rejected with a reason', () => {
  const s = state();
  s.decideHunk(0, 0, 'accepted');
  s.decideHunk(0, 1, 'rejected', '  keep seven lowercase ');
  assert.deepEqual(s.resolveParams(), {
    reviewId: review.reviewId,
    decision: 'accept',
    files: [{ uri: notes.uri, acceptedHunks: [0] }],
    feedback: 'notes.txt, hunk 1: keep seven lowercase',
  });
  assert.equal(s.fileSummary(0), '1/2 hunks accepted');
});

test('every hunk rejected: reject, with the reasons', () => {
  const s = state();
  s.decideHunk(0, 0, 'rejected');
  s.decideHunk(0, 1, 'rejected', 'no');
  assert.deepEqual(s.resolveParams(), { reviewId: review.reviewId, decision: 'reject', feedback: 'notes.txt, hunk 1: no' });
});

test('file accepted after the user edited the proposal: finalText', () => {
  const s = state();
  const edited = 'one\nTwo (edited)\nthree\nfour\nfive\nsix\nSEVEN\nunsaved line\n';
  s.decideFile(0, 'accepted', { editedText: edited });
  assert.deepEqual(s.resolveParams(), { reviewId: review.reviewId, decision: 'accept', files: [{ uri: notes.uri, finalText: edited }] });
  assert.equal(s.fileSummary(0), 'accepted with your edits');
});

test('file accepted with the proposal unchanged: no finalText', () => {
  const s = state();
  s.decideFile(0, 'accepted', { editedText: s.proposedText(0) });
  assert.deepEqual(s.resolveParams(), { reviewId: review.reviewId, decision: 'accept' });
});

test('a hunk rejected, then the rest of the file accepted with an edit elsewhere', () => {
  const s = state();
  s.decideHunk(0, 1, 'rejected', 'keep seven');
  const edited = `${s.proposedText(0)}one more line\n`;
  s.decideFile(0, 'accepted', { editedText: edited });
  assert.deepEqual(s.resolveParams(), { reviewId: review.reviewId, decision: 'accept', files: [{ uri: notes.uri, finalText: edited }], feedback: 'notes.txt, hunk 1: keep seven' });
});

test('edits noticed when the last hunk is decided', () => {
  const s = state();
  s.decideHunk(0, 0, 'accepted');
  s.decideHunk(0, 1, 'accepted');
  s.noteEditedText(0, 'mine\n');
  assert.deepEqual(s.resolveParams(), { reviewId: review.reviewId, decision: 'accept', files: [{ uri: notes.uri, finalText: 'mine\n' }] });
});

test('file rejected with a reason', () => {
  const s = state();
  s.decideFile(0, 'rejected', { reason: 'not now' });
  assert.deepEqual(s.resolveParams(), { reviewId: review.reviewId, decision: 'reject', feedback: 'notes.txt: not now' });
});

test('reject all with a reason: the reason alone is the feedback', () => {
  const s = state([notes, created], [base, '']);
  s.rejectAll('wrong approach');
  assert.deepEqual(s.resolveParams(), { reviewId: review.reviewId, decision: 'reject', feedback: 'wrong approach' });
});

test('accept all takes each file\'s edited text into account', () => {
  const s = state([notes, created], [base, '']);
  s.acceptAll([undefined, 'a\nb\nc\n']);
  assert.deepEqual(s.resolveParams(), { reviewId: review.reviewId, decision: 'accept', files: [{ uri: created.uri, finalText: 'a\nb\nc\n' }] });
});

test('create: accepted whole, or rejected whole', () => {
  const a = state([created], ['']);
  assert.equal(a.proposedText(0), 'a\nb\n');
  a.decideHunk(0, 0, 'accepted');
  assert.deepEqual(a.resolveParams(), { reviewId: review.reviewId, decision: 'accept' });
  const r = state([created], ['']);
  r.decideFile(0, 'rejected', { reason: 'no new files' });
  assert.deepEqual(r.resolveParams(), { reviewId: review.reviewId, decision: 'reject', feedback: 'new.txt: no new files' });
});

test('delete: the proposal is empty; accepted, or rejected alongside an accepted file', () => {
  const a = state([deleted], ['x\n']);
  assert.equal(a.proposedText(0), '');
  a.decideFile(0, 'accepted', { editedText: 'typed into the empty side\n' });
  assert.deepEqual(a.resolveParams(), { reviewId: review.reviewId, decision: 'accept' }, 'no finalText for a delete');
  const mixed = state([notes, deleted], [base, 'x\n']);
  mixed.decideFile(0, 'accepted');
  mixed.decideFile(1, 'rejected');
  assert.deepEqual(mixed.resolveParams(), { reviewId: review.reviewId, decision: 'accept', files: [{ uri: deleted.uri, acceptedHunks: [] }] });
});

test('rename without content change: decided as a whole', () => {
  const a = state([renamed], ['same\n']);
  assert.equal(a.complete(), false);
  a.decideHunk(0, 0, 'accepted');
  assert.equal(a.complete(), true);
  assert.deepEqual(a.resolveParams(), { reviewId: review.reviewId, decision: 'accept' });
  const r = state([renamed, notes], ['same\n', base]);
  r.decideFile(0, 'rejected', { reason: 'keep the name' });
  r.decideFile(1, 'accepted');
  assert.deepEqual(r.resolveParams(), { reviewId: review.reviewId, decision: 'accept', files: [{ uri: renamed.uri, acceptedHunks: [] }], feedback: 'a.txt: keep the name' });
});

test('rename with hunks: per hunk like a modify', () => {
  const withHunk: ReviewFile = { ...renamed, hunks: [{ index: 0, oldStart: 0, oldLines: 1, newStart: 0, newLines: 1, oldText: 'a\n', newText: 'b\n' }, { index: 1, oldStart: 2, oldLines: 1, newStart: 2, newLines: 1, oldText: 'c\n', newText: 'C\n' }] };
  const s = state([withHunk], ['a\nx\nc\n']);
  s.decideHunk(0, 0, 'accepted');
  s.decideHunk(0, 1, 'rejected');
  assert.deepEqual(s.resolveParams(), { reviewId: review.reviewId, decision: 'accept', files: [{ uri: renamed.uri, acceptedHunks: [0] }] });
});

test('several files: the undecided ones are listed in order', () => {
  const s = state([notes, created, deleted], [base, '', 'x\n']);
  s.decideFile(1, 'accepted');
  assert.deepEqual(s.undecidedFiles(), [0, 2]);
});

test('the outcome the chat card shows', () => {
  const partly = state();
  partly.decideHunk(0, 0, 'accepted');
  partly.decideHunk(0, 1, 'rejected');
  assert.equal(outcome(partly), 'partly accepted (1/2 hunks accepted)');
  const all = state();
  all.acceptAll();
  assert.equal(outcome(all), 'accepted');
  const none = state();
  none.rejectAll();
  assert.equal(outcome(none), 'rejected');
  const edited = state();
  edited.decideFile(0, 'accepted', { editedText: 'mine\n' });
  assert.equal(outcome(edited), 'accepted with your edits');
});
