//! Loop detection (spec §2.10): repeating patterns of 1, 2 or 3 tool calls filling the window
//! (each pattern at least twice).
//!
//! Invariant: a signature is the tool name plus a hash of its canonical arguments, so the same
//! call with keys in another order is the same call.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use serde_json::Value;

use super::turn::Turn;

/// The signature of one tool call.
pub fn signature(name: &str, arguments: &Value) -> (String, u64) {
    let mut hasher = DefaultHasher::new();
    hash_canonical(arguments, &mut hasher);
    (name.to_string(), hasher.finish())
}

/// Hashes `value` with object keys in sorted order, whatever order its maps keep (serde_json
/// keeps insertion order when a dependency turns on `preserve_order`).
fn hash_canonical(value: &Value, hasher: &mut DefaultHasher) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by_key(|(key, _)| *key);
            b'{'.hash(hasher);
            for (key, value) in entries {
                key.hash(hasher);
                hash_canonical(value, hasher);
            }
        }
        Value::Array(items) => {
            b'['.hash(hasher);
            items.len().hash(hasher);
            items.iter().for_each(|item| hash_canonical(item, hasher));
        }
        other => other.to_string().hash(hasher),
    }
}

/// Signatures of the last `window` tool calls in `history`, oldest first.
pub fn recent_signatures(history: &[Turn], window: usize) -> Vec<(String, u64)> {
    let mut calls: Vec<(String, u64)> = history
        .iter()
        .rev()
        .filter_map(|t| match t {
            Turn::Assistant(a) => Some(a),
            _ => None,
        })
        .flat_map(|a| a.tool_calls.iter().rev())
        .take(window)
        .map(|c| signature(&c.name, &c.arguments))
        .collect();
    calls.reverse();
    calls
}

/// True when the last `window` tool calls repeat one pattern of length 1, 2 or 3.
pub fn detect_loop(history: &[Turn], window: usize) -> bool {
    if window == 0 {
        return false;
    }
    let recent = recent_signatures(history, window);
    is_repeating(&recent, window)
}

fn is_repeating<T: PartialEq>(recent: &[T], window: usize) -> bool {
    if recent.len() < window {
        return false;
    }
    // A pattern must fill the window at least twice: in a window of 2, two different calls are
    // not a loop.
    [1, 2, 3].into_iter().filter(|len| window.is_multiple_of(*len) && window / len >= 2).any(|len| {
        let pattern = &recent[..len];
        recent.chunks(len).all(|chunk| chunk == pattern)
    })
}

/// The warning injected as a steering turn when a loop is detected.
pub fn loop_warning(window: usize) -> String {
    format!(
        "Loop detected: the last {window} tool calls follow a repeating pattern. Try a different approach."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_of_one_two_three() {
        assert!(is_repeating(&[1; 10], 10));
        assert!(is_repeating(&[1, 2, 1, 2, 1, 2, 1, 2, 1, 2], 10));
        assert!(is_repeating(&[1, 2, 3, 1, 2, 3, 1, 2, 3], 9));
        assert!(!is_repeating(&[1, 2, 3, 1, 2, 3, 1, 2, 3, 1], 10), "10 is not a multiple of 3");
        assert!(!is_repeating(&[1, 2, 3, 4, 1, 2, 3, 4], 8));
        assert!(!is_repeating(&[1; 9], 10), "window not full yet");
        assert!(!is_repeating(&[1, 2], 2) && !is_repeating(&[1, 2, 3], 3), "a pattern must repeat");
        assert!(is_repeating(&[1, 1], 2) && is_repeating(&[1, 2, 1, 2], 4));
    }

    #[test]
    fn argument_order_does_not_matter() {
        let a: Value = serde_json::from_str(r#"{"a":1,"b":2}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b":2,"a":1}"#).unwrap();
        assert_eq!(signature("x", &a), signature("x", &b));
        assert_ne!(signature("x", &a), signature("y", &a));
    }
}
