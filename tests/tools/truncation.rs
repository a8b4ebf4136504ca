//! Tool output truncation (spec §5, §9.5): limits, modes, order, markers verbatim, overrides.

use agentls::config::ConfigLayer;
use agentls::tools::truncate::{
    TruncationMode, TruncationPolicy, default_limit, truncate_lines, truncate_output,
};

#[test]
fn default_character_limits_and_modes_match_the_spec_table() {
    use TruncationMode::*;
    let table = [
        ("read_file", 50_000, HeadTail),
        ("shell", 30_000, HeadTail),
        ("grep", 20_000, Tail),
        ("glob", 20_000, Tail),
        ("edit_file", 10_000, Tail),
        ("apply_patch", 10_000, Tail),
        ("write_file", 1_000, Tail),
        ("spawn_agent", 20_000, HeadTail),
    ];
    for (tool, chars, mode) in table {
        let limit = default_limit(tool);
        assert_eq!((limit.max_chars, limit.mode), (chars, mode), "{tool}");
    }
}

#[test]
fn default_line_limits_match_the_spec_table() {
    let lines: Vec<_> = ["shell", "grep", "glob", "read_file", "edit_file"]
        .iter()
        .map(|t| default_limit(t).max_lines)
        .collect();
    assert_eq!(lines, [Some(256), Some(200), Some(500), None, None]);
}

#[test]
fn head_tail_marker_is_verbatim() {
    let output = format!("{}{}", "a".repeat(60), "b".repeat(60));
    let truncated = truncate_output(&output, 100, TruncationMode::HeadTail);
    let expected = format!(
        "{}\n\n[WARNING: Tool output was truncated. 20 characters were removed from the middle. \
         The full output is available in the event stream. \
         If you need to see specific parts, re-run the tool with more targeted parameters.]\n\n{}",
        "a".repeat(50),
        "b".repeat(50)
    );
    assert_eq!(truncated, expected);
}

#[test]
fn tail_marker_is_verbatim() {
    let output = format!("{}{}", "a".repeat(30), "b".repeat(100));
    let truncated = truncate_output(&output, 100, TruncationMode::Tail);
    let expected = format!(
        "[WARNING: Tool output was truncated. First 30 characters were removed. \
         The full output is available in the event stream.]\n\n{}",
        "b".repeat(100)
    );
    assert_eq!(truncated, expected);
}

#[test]
fn output_within_the_limit_is_untouched() {
    assert_eq!(truncate_output("short", 5, TruncationMode::HeadTail), "short");
    assert_eq!(truncate_lines("a\nb\nc", 3), "a\nb\nc");
}

#[test]
fn limits_count_characters_not_bytes() {
    let output = "é".repeat(10);
    assert_eq!(truncate_output(&output, 10, TruncationMode::Tail), output);
    let truncated = truncate_output(&output, 4, TruncationMode::HeadTail);
    assert!(truncated.starts_with("éé\n\n[WARNING: Tool output was truncated. 6 characters"));
    assert!(truncated.ends_with("]\n\néé"));
}

#[test]
fn line_marker_is_verbatim() {
    let output: Vec<String> = (1..=10).map(|i| i.to_string()).collect();
    let joined = output.join("\n");
    let truncated = truncate_lines(&joined, 4);
    assert_eq!(truncated, "1\n2\n[... 6 lines omitted ...]\n9\n10");
}

#[test]
fn characters_are_truncated_before_lines() {
    // Two 10 MB lines: line truncation alone would pass them through.
    let huge = format!("{}\n{}", "x".repeat(10_000_000), "y".repeat(10_000_000));
    let policy = TruncationPolicy::default();
    let shown = policy.truncate("shell", &huge);
    assert!(shown.chars().count() < 31_000, "character truncation must run first");
    assert!(shown.contains("characters were removed from the middle"));

    // Many short lines: character truncation leaves them, line truncation then applies.
    let many: Vec<String> = (0..1_000).map(|i| format!("line {i}")).collect();
    let joined = many.join("\n");
    let shown = policy.truncate("shell", &joined);
    assert!(shown.contains("[... 744 lines omitted ...]"), "{}", &shown[..200]);
    assert_eq!(shown.lines().count(), 257);
}

#[test]
fn char_then_line_on_the_same_output_keeps_both_markers() {
    let lines: Vec<String> = (0..5_000).map(|i| format!("{i:08}")).collect();
    let joined = lines.join("\n");
    let policy = TruncationPolicy::default();
    let shown = policy.truncate("grep", &joined);
    assert!(shown.starts_with("[WARNING: Tool output was truncated. First"));
    assert!(shown.contains("lines omitted ...]"));
    assert!(shown.ends_with("00004999"));
}

#[test]
fn limits_are_overridable_from_configuration() {
    let layer: ConfigLayer =
        toml::from_str("[tool_output_limits]\nread_file = 10\n\n[tool_line_limits]\nshell = 2\ngrep = 0\n")
            .unwrap();
    let policy = TruncationPolicy::new(
        layer.tool_output_limits.unwrap_or_default(),
        layer.tool_line_limits.unwrap_or_default(),
    );
    assert_eq!(policy.limit("read_file").max_chars, 10);
    assert_eq!(policy.limit("shell").max_lines, Some(2));
    assert_eq!(policy.limit("grep").max_lines, None, "0 turns line truncation off");
    assert_eq!(policy.truncate("shell", "a\nb\nc\nd"), "a\n[... 2 lines omitted ...]\nd");
    assert!(policy.truncate("read_file", "0123456789ABC").contains("3 characters were removed"));
}

#[test]
fn unknown_tools_get_a_fallback_limit() {
    let limit = default_limit("my_custom_tool");
    assert_eq!((limit.max_chars, limit.mode, limit.max_lines), (30_000, TruncationMode::HeadTail, None));
}

#[test]
fn the_character_marker_survives_the_line_pass() {
    let lines: Vec<String> = (1..=100_000).map(|i| i.to_string()).collect();
    let joined = lines.join("\n");
    let policy = TruncationPolicy::default();
    let shown = policy.truncate("shell", &joined);
    let shown_lines: Vec<&str> = shown.lines().collect();
    assert_eq!(shown_lines.len(), 256 + 2, "head + tail + both markers");
    assert!(shown_lines[128].starts_with("[WARNING: Tool output was truncated. "), "{}", shown_lines[128]);
    assert!(shown_lines[129].starts_with("[... ") && shown_lines[129].ends_with(" lines omitted ...]"));
    assert_eq!((shown_lines[0], shown_lines[257]), ("1", "100000"));
}
