//! Prompts are code: each profile's base prompt and each tool's description names only tools and
//! parameters the profile offers (never another agent's argument name that only the alias table
//! accepts), states only the defaults the schemas declare and the tools apply, and shows only
//! output formats the tools produce. Formats are checked against each tool's real output on
//! `tests/fixtures/prompts`; the patch example of the openai prompt goes through the real parser.
//!
//! What the checker reads as a claim:
//! - a code span that is an identifier (`grep`, `glob_filter`): a tool name or a parameter name;
//! - in a bullet that starts with a tool's name (its subject), parameters must be that tool's;
//! - `` `value` (default `` where the value is in an enum of the subject's parameter: the
//!   schema's default;
//! - a code span with a placeholder (`N`, `line` or digits for a number, `text`, `path`) and
//!   punctuation (`N | text`, `path:N:text`): an output line of the subject tool;
//! - `N seconds` in the shell bullet: the profile's default timeout.

use crate::support::tools_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use agentls::profiles::ProfileKind;
use agentls::tools::Tool;
use agentls::tools::aliases::{declared_parameters, normalize_arguments};
use agentls::tools::apply_patch::parse_patch;
use agentls::tools::registry::ToolRegistry;
use regex::Regex;
use serde_json::{Map, Value, json};
use tools_support::Fixture;

/// What the checker knows of one tool.
struct ToolInfo {
    name: String,
    description: String,
    declared: Vec<String>,
    /// Parameter → its enum values.
    enums: BTreeMap<String, Vec<String>>,
    /// Parameter → its schema default.
    defaults: BTreeMap<String, Value>,
}

impl ToolInfo {
    fn of(tool: &Arc<dyn Tool>) -> Self {
        let schema = tool.parameters();
        let properties = schema["properties"].as_object().cloned().unwrap_or_default();
        let enums = properties
            .iter()
            .filter_map(|(name, p)| {
                let values = p["enum"].as_array()?.iter().filter_map(Value::as_str).map(String::from);
                Some((name.clone(), values.collect()))
            })
            .collect();
        let defaults = properties
            .iter()
            .filter_map(|(name, p)| Some((name.clone(), p.get("default")?.clone())))
            .collect();
        Self {
            name: tool.name().to_string(),
            description: tool.description().to_string(),
            declared: declared_parameters(&schema),
            enums,
            defaults,
        }
    }

    fn declares(&self, word: &str) -> bool {
        self.declared.iter().any(|d| d == word)
    }

    fn is_enum_value(&self, word: &str) -> bool {
        self.enums.values().any(|values| values.iter().any(|v| v == word))
    }

    /// The parameter `word` is renamed to by the alias table when this tool is called with it.
    fn alias_of(&self, word: &str) -> Option<String> {
        let mut args = Map::new();
        args.insert(word.to_string(), Value::Null);
        normalize_arguments(&mut args, &self.declared);
        args.keys().find(|k| *k != word).cloned()
    }
}

/// Every tool and parameter name of every profile, aliases included: a code span naming one of
/// these is a claim about a tool.
struct Universe {
    tools: BTreeSet<String>,
    all: Vec<ToolInfo>,
}

impl Universe {
    fn new() -> Self {
        let all: Vec<ToolInfo> =
            ProfileKind::ALL.iter().flat_map(|p| p.tools()).map(|t| ToolInfo::of(&t)).collect();
        Self { tools: all.iter().map(|t| t.name.clone()).collect(), all }
    }

    fn is_tool(&self, word: &str) -> bool {
        self.tools.contains(word) || agentls::tools::aliases::tool_alias(word).next().is_some()
    }

    fn is_parameter(&self, word: &str) -> bool {
        self.all.iter().any(|t| t.declares(word) || t.alias_of(word).is_some())
    }
}

/// The outputs of one profile's tools on the fixture, by tool.
type Outputs = BTreeMap<String, Vec<String>>;

/// The calls each tool is rendered with; the first is the tool's base call.
fn fixture_calls(tool: &str) -> Vec<Value> {
    match tool {
        "read_file" => vec![json!({"file_path": "src/lib.rs"})],
        "grep" => vec![
            json!({"pattern": "fn "}),
            json!({"pattern": "fn ", "output_mode": "content"}),
            json!({"pattern": "fn ", "output_mode": "files_with_matches"}),
            json!({"pattern": "fn ", "output_mode": "count"}),
        ],
        "glob" => vec![json!({"pattern": "**/*.rs"})],
        "list_dir" => vec![json!({"path": ".", "depth": 2})],
        "read_many_files" => vec![json!({"paths": ["src/lib.rs", "README.md"]})],
        "shell" => vec![json!({"command": "echo hello"})],
        _ => Vec::new(),
    }
}

fn copy_fixture(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("fixture dir") {
        let entry = entry.expect("fixture entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_fixture(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy fixture file");
        }
    }
}

async fn render(profile: ProfileKind, tools: &[ToolInfo], problems: &mut Vec<String>) -> Outputs {
    let fx = Fixture::new();
    copy_fixture(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/prompts"), fx.root());
    let mut registry = ToolRegistry::new();
    for tool in profile.tools() {
        registry.register(tool);
    }
    let mut outputs = Outputs::new();
    for tool in tools {
        let calls = fixture_calls(&tool.name);
        for call in &calls {
            let outcome = registry.execute_value(&tool.name, call.clone(), &fx.ctx).await;
            assert!(
                !outcome.is_error,
                "{profile}: fixture call {} {call} failed: {}",
                tool.name, outcome.content
            );
            outputs.entry(tool.name.clone()).or_default().push(outcome.content);
        }
        // A default the schema declares is what the tool does when the parameter is left out.
        let Some(base) = calls.first() else { continue };
        for (parameter, default) in &tool.defaults {
            if base.get(parameter).is_some() {
                continue;
            }
            let mut explicit = base.clone();
            explicit[parameter] = default.clone();
            let with = registry.execute_value(&tool.name, explicit, &fx.ctx).await;
            let without = registry.execute_value(&tool.name, base.clone(), &fx.ctx).await;
            if with.content != without.content {
                problems.push(format!(
                    "{profile}: `{}` declares `{parameter}` defaults to {default}, but leaving it out gives \
                     another result",
                    tool.name
                ));
            }
        }
    }
    outputs
}

/// The bullets (list items) and paragraphs of a markdown text, fenced blocks left out, and the
/// fenced blocks.
fn split_markdown(text: &str) -> (Vec<String>, Vec<String>) {
    let mut bullets: Vec<String> = Vec::new();
    let mut fences = Vec::new();
    let mut fence: Option<String> = None;
    let mut open = false;
    let item = Regex::new(r"^(\s*[-*]|\s*\d+\.)\s+").expect("regex");
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            match fence.take() {
                Some(block) => fences.push(block),
                None => fence = Some(String::new()),
            }
            open = false;
            continue;
        }
        if let Some(block) = fence.as_mut() {
            block.push_str(line);
            block.push('\n');
            continue;
        }
        if line.trim().is_empty() || line.starts_with('#') {
            open = false;
            continue;
        }
        if let Some(marker) = item.find(line) {
            bullets.push(line[marker.end()..].to_string());
            open = true;
        } else if open {
            let last = bullets.last_mut().expect("an open bullet");
            last.push(' ');
            last.push_str(line.trim());
        } else {
            bullets.push(line.to_string());
            open = true;
        }
    }
    (bullets, fences)
}

fn code_spans(text: &str) -> Vec<&str> {
    let span = Regex::new(r"`([^`]+)`").expect("regex");
    span.captures_iter(text).filter_map(|c| c.get(1)).map(|m| m.as_str()).collect()
}

fn is_identifier(span: &str) -> bool {
    let mut chars = span.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

const PLACEHOLDERS: &[&str] = &["N", "line", "text", "path"];

/// The regex of the output lines a format example stands for, when `span` is one.
fn format_regex(span: &str) -> Option<Regex> {
    let span = span.trim();
    let words = Regex::new(r"[A-Za-z_]+|\d+|[^A-Za-z_\d]+").expect("regex");
    let tokens: Vec<&str> = words.find_iter(span).map(|m| m.as_str()).collect();
    let has_placeholder =
        tokens.iter().any(|t| PLACEHOLDERS.contains(t) || t.chars().all(|c| c.is_ascii_digit()));
    let has_punctuation = span.chars().any(|c| !c.is_alphanumeric() && c != '_' && c != ' ');
    if !has_placeholder || !has_punctuation || is_identifier(span) {
        return None;
    }
    let mut pattern = String::from(r"^\s*");
    for token in tokens {
        pattern.push_str(match token {
            "N" | "line" => r"\s*\d+",
            "text" => r".*",
            "path" => r"[^\s:]+",
            digits if digits.chars().all(|c| c.is_ascii_digit()) => r"\s*\d+",
            literal => {
                pattern.push_str(&regex::escape(literal));
                continue;
            }
        });
    }
    pattern.push('$');
    Some(Regex::new(&pattern).expect("format regex"))
}

/// One profile as the checker sees it: its tools and their rendered outputs.
struct Checker<'a> {
    profile: ProfileKind,
    tools: &'a [ToolInfo],
    universe: &'a Universe,
    outputs: &'a Outputs,
}

impl Checker<'_> {
    /// Checks one prompt text; `forced_subject` is the tool a description belongs to.
    fn check(&self, origin: &str, text: &str, forced_subject: Option<&ToolInfo>, problems: &mut Vec<String>) {
        let Self { profile, tools, universe, outputs } = *self;
        let offered = |word: &str| tools.iter().find(|t| t.name == word);
        let default_claim = Regex::new(r"`(\w+)` \(default").expect("regex");
        let seconds = Regex::new(r"(\d+) seconds").expect("regex");
        let (bullets, _) = split_markdown(text);
        for bullet in &bullets {
            let subject = forced_subject.or_else(|| {
                bullet.strip_prefix('`').and_then(|rest| rest.split('`').next()).and_then(offered)
            });
            let mut problem = |what: String| problems.push(format!("{origin}: {what}\n    in: {bullet}"));
            for span in code_spans(bullet) {
                if is_identifier(span) {
                    if let Some(t) = subject
                        && t.name != span
                        && let Some(canonical) = t.alias_of(span)
                    {
                        problem(format!(
                            "`{span}` is not a parameter of `{}`: its schema calls it `{canonical}` (the \
                             alias table only forgives the model)",
                            t.name
                        ));
                    } else if universe.is_tool(span) && offered(span).is_none() {
                        problem(format!(
                            "names the tool `{span}`, which the {profile} profile does not offer"
                        ));
                    } else if offered(span).is_none() && universe.is_parameter(span) {
                        match subject {
                            Some(t) if !t.declares(span) && !t.is_enum_value(span) => {
                                problem(format!("`{span}` is not a parameter of `{}`", t.name))
                            }
                            None if !tools.iter().any(|t| t.declares(span)) => {
                                problem(format!("no tool of the {profile} profile has a parameter `{span}`"))
                            }
                            _ => {}
                        }
                    }
                } else if let Some(format) = format_regex(span) {
                    let shown: Vec<&String> = match subject {
                        Some(t) => outputs.get(&t.name).map(|o| o.iter().collect()).unwrap_or_default(),
                        None => outputs.values().flatten().collect(),
                    };
                    let name = subject.map_or("any tool".to_string(), |t| format!("`{}`", t.name));
                    if shown.is_empty() {
                        problem(format!(
                            "shows the format `{span}` for {name}, which has no fixture call to check it"
                        ));
                    } else if !shown.iter().any(|out| out.lines().any(|l| format.is_match(l))) {
                        let sample: Vec<&str> = shown.iter().flat_map(|o| o.lines()).take(3).collect();
                        problem(format!(
                            "shows the format `{span}`, but no output of {name} has a line of that form; its \
                             lines look like {sample:?}"
                        ));
                    }
                }
            }
            if let Some(t) = subject {
                for claim in default_claim.captures_iter(bullet) {
                    let value = &claim[1];
                    for (parameter, values) in &t.enums {
                        if !values.iter().any(|v| v == value) {
                            continue;
                        }
                        let declared = t.defaults.get(parameter).and_then(Value::as_str);
                        if declared != Some(value) {
                            problem(format!(
                                "says `{}` defaults `{parameter}` to `{value}`; the schema says {declared:?}",
                                t.name
                            ));
                        }
                    }
                }
                if t.name == "shell" {
                    let default_seconds = profile.default_shell_timeout_ms() / 1000;
                    for claim in seconds.captures_iter(bullet) {
                        if claim[1].parse::<u64>().ok() != Some(default_seconds) {
                            problem(format!(
                                "says the shell times out after {} seconds; the {profile} default is {default_seconds}",
                                &claim[1]
                            ));
                        }
                    }
                }
            }
        }
    }
}

/// Every problem of `profile`'s base prompt (`prompt`) and tool descriptions.
async fn problems_of(profile: ProfileKind, prompt: &str) -> Vec<String> {
    let universe = Universe::new();
    let tools: Vec<ToolInfo> = profile.tools().iter().map(ToolInfo::of).collect();
    let mut problems = Vec::new();
    let outputs = render(profile, &tools, &mut problems).await;
    let checker = Checker { profile, tools: &tools, universe: &universe, outputs: &outputs };
    checker.check(&format!("src/profiles/prompts/{profile}.md"), prompt, None, &mut problems);
    for tool in &tools {
        let origin = format!("{profile} tool `{}` description", tool.name);
        checker.check(&origin, &tool.description, Some(tool), &mut problems);
    }
    problems
}

#[tokio::test]
async fn every_prompt_names_only_what_its_tools_offer_and_shows_their_real_formats() {
    let mut problems = Vec::new();
    for profile in ProfileKind::CODING {
        problems.extend(problems_of(profile, profile.base_prompt()).await);
    }
    assert!(problems.is_empty(), "prompts that lie about their tools:\n{}", problems.join("\n"));
}

#[test]
fn the_openai_patch_example_is_a_patch_the_tool_parses() {
    let (_, fences) = split_markdown(ProfileKind::OpenAi.base_prompt());
    let patches: Vec<&String> = fences.iter().filter(|f| f.starts_with("*** Begin Patch")).collect();
    assert_eq!(patches.len(), 1, "the openai prompt shows one patch");
    let ops = parse_patch(patches[0]).unwrap_or_else(|e| panic!("the prompt's patch does not parse: {e}"));
    assert_eq!(ops.len(), 1);
}

/// The checker catches each of the Anthropic prompt's old mistakes (so the test above can fail).
#[tokio::test]
async fn the_checker_catches_a_wrong_parameter_default_and_format() {
    let old = "\
- `read_file` returns line-numbered content (`   12→text`). Use `offset`/`limit` for large files.
- `grep` takes a regular expression and an `output_mode`: `files_with_matches` (default, just paths), `content` (matching lines) or `count`. Narrow it with `path` and `glob`.
- `shell` runs a bash command with a default timeout of 10 seconds; pass `timeout_ms` for longer jobs.
- Use `apply_patch` to edit, with `expected_replacements` when a text occurs twice.
";
    let problems = problems_of(ProfileKind::Anthropic, old).await;
    let expected = [
        "shows the format `   12→text`, but no output of `read_file` has a line of that form",
        "`glob` is not a parameter of `grep`: its schema calls it `glob_filter`",
        "says `grep` defaults `output_mode` to `files_with_matches`; the schema says Some(\"content\")",
        "says the shell times out after 10 seconds; the anthropic default is 120",
        "names the tool `apply_patch`, which the anthropic profile does not offer",
        "no tool of the anthropic profile has a parameter `expected_replacements`",
    ];
    assert_eq!(problems.len(), expected.len(), "{problems:#?}");
    for (problem, want) in problems.iter().zip(expected) {
        assert!(problem.contains(want), "expected {want:?}, got {problem:?}");
    }
}
