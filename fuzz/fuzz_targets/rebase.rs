//! Fuzzes the three-way rebase (`workspace::rebase`) with any base, agent ("ours") and current
//! ("theirs") texts. It must not panic; a conflict names lines of the current text; a clean
//! rebase keeps both sides' changes: it does not depend on which side is which, and every byte
//! is accounted for — the result holds the base's bytes plus what each side's hunks added minus
//! what they removed, an edit made on both sides counted once.
//! Input: `base \0 ours \0 theirs` (UTF-8).
#![no_main]

use std::collections::HashMap;

use agentls::workspace::{Hunk, compute_hunks, rebase, split_lines};
use libfuzzer_sys::fuzz_target;

fn counts(text: &str) -> HashMap<u8, i64> {
    let mut counts = HashMap::new();
    for byte in text.bytes() {
        *counts.entry(byte).or_insert(0) += 1;
    }
    counts
}

fn add(into: &mut HashMap<u8, i64>, text: &str, sign: i64) {
    for byte in text.bytes() {
        *into.entry(byte).or_insert(0) += sign;
    }
}

fn same_edit(a: &Hunk, b: &Hunk) -> bool {
    a.old_range == b.old_range && a.new_text == b.new_text
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else { return };
    let mut parts = input.splitn(3, '\0');
    let (Some(base), Some(ours), Some(theirs)) = (parts.next(), parts.next(), parts.next()) else { return };
    match rebase(base, ours, theirs) {
        Ok(merged) => {
            assert_eq!(rebase(base, theirs, ours).as_ref(), Ok(&merged), "a clean rebase is symmetric");
            let our_hunks = compute_hunks(base, ours, None);
            let their_hunks = compute_hunks(base, theirs, None);
            let mut expected = counts(base);
            for hunk in our_hunks
                .iter()
                .chain(their_hunks.iter().filter(|t| !our_hunks.iter().any(|o| same_edit(o, t))))
            {
                add(&mut expected, &hunk.new_text, 1);
                add(&mut expected, &base[hunk.old_range.clone()], -1);
            }
            expected.retain(|_, n| *n != 0);
            assert_eq!(counts(&merged), expected, "the merge holds both sides' changes: {merged:?}");
        }
        Err(conflict) => {
            let lines = split_lines(theirs).len() + 1;
            for range in conflict.lines.split(", ") {
                for number in range.split('-') {
                    let number: usize = number.parse().expect("a line number");
                    assert!((1..=lines).contains(&number), "line {number} of {lines}: {conflict:?}");
                }
            }
        }
    }
});
