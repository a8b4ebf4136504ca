//! Fuzzes edit_file's replacement engine: any text, old and new string must give a result or an
//! error, never a panic; a result contains the new string when something was replaced.
#![no_main]

use agentls::tools::edit_file::edit_text;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else { return };
    let mut parts = input.splitn(3, '\u{0}');
    let (Some(text), Some(old), Some(new)) = (parts.next(), parts.next(), parts.next()) else { return };
    let replace_all = text.len() % 2 == 0;
    if let Ok((out, count)) = edit_text(text, old, new, replace_all) {
        assert!(count >= 1);
        assert!(out.contains(new.trim_matches(['\r', '\n'])) || new.contains('\n'));
    }
});
