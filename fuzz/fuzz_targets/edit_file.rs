//! Fuzzes edit_file's replacement engine (`tools::edit_file::edit_text`): any text, old and new
//! string give a result or an error (with the closest-region search of its not-found message),
//! never a panic. A result is exactly the replacement: where neither side has a carriage return,
//! the text with the first (or, with replace_all, every) occurrence of old_string replaced, and
//! a unique replacement only when old_string occurs once.
//! Input: `text \0 old_string \0 new_string` (UTF-8); replace_all when the text's length is even.
#![no_main]

use agentls::tools::edit_file::edit_text;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else { return };
    let mut parts = input.splitn(3, '\u{0}');
    let (Some(text), Some(old), Some(new)) = (parts.next(), parts.next(), parts.next()) else { return };
    let replace_all = text.len() % 2 == 0;
    let result = edit_text(text, old, new, replace_all);
    let plain = ![text, old, new].iter().any(|s| s.contains('\r'));
    if !plain {
        if let Ok((_, count)) = result {
            assert!(count >= 1);
        }
        return;
    }
    let occurrences = if old.is_empty() { 0 } else { text.matches(old).count() };
    match result {
        Ok((out, count)) => {
            assert_eq!(count, occurrences);
            let expected = if replace_all { text.replace(old, new) } else { text.replacen(old, new, 1) };
            assert_eq!(out, expected);
            assert!(replace_all || count == 1, "a unique replacement needs a unique match");
        }
        Err(_) => assert!(
            old.is_empty() || old == new || occurrences == 0 || (!replace_all && occurrences > 1),
            "refused an edit that applies: {occurrences} occurrences"
        ),
    }
});
