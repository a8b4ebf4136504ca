//! Fuzzes the apply_patch parser and applier: any patch against any file text must return a
//! result or an error, never panic, and the hunks it returns must reproduce the output.
#![no_main]

use agentls::tools::apply_patch::{PatchOp, apply_chunks, parse_patch};
use agentls::workspace::{apply_hunks, check_hunks};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else { return };
    // First line: the file text (with `\x01` standing for line breaks); the rest: the patch.
    let (file, patch) = input.split_once('\n').unwrap_or(("", input));
    let file = file.replace('\u{1}', "\n");
    let Ok(ops) = parse_patch(patch) else { return };
    for op in &ops {
        if let PatchOp::Update { chunks, path, .. } = op
            && let Ok((out, hunks)) = apply_chunks(&file, chunks, path)
        {
            assert!(check_hunks(&file, &hunks).is_ok());
            assert_eq!(apply_hunks(&file, &hunks), *out);
        }
    }
});
