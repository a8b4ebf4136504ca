//! The search model's tool calls, typed: read from native function calls or from the seed's
//! nested-XML form (`<grep><pattern>…</pattern></grep>` in the response text), and the
//! definitions the model is offered.
//!
//! Invariant: both forms parse into the same [`SearchCall`]s, and every call echoes back as the
//! same tag ([`SearchCall::open_tag`]), so a model trained on either form sees the same results.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::llm::ToolDefinition;

/// `grep`: regex search, ripgrep-style output.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct GrepArgs {
    pub pattern: String,
    #[serde(default, alias = "path")]
    pub sub_dir: Option<String>,
    #[serde(default, alias = "glob_filter", alias = "include")]
    pub glob: Option<String>,
}

/// `read`: a file, whole or in line ranges.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct ReadArgs {
    #[serde(alias = "file", alias = "file_path")]
    pub path: String,
    #[serde(default, deserialize_with = "line_spec")]
    pub lines: Option<String>,
}

/// `list_directory`: a directory as an indented tree.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct ListArgs {
    #[serde(default)]
    pub path: Option<String>,
}

/// One file of a `finish` call.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct FinishFile {
    #[serde(alias = "file", alias = "file_path")]
    pub path: String,
    /// `1-15,40-60`; `None` is the whole file.
    #[serde(default, deserialize_with = "line_spec")]
    pub lines: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
struct FinishArgs {
    #[serde(default)]
    files: Vec<FinishFile>,
}

/// A call of the search model.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum SearchCall {
    Grep(GrepArgs),
    Read(ReadArgs),
    ListDirectory(ListArgs),
    Finish(Vec<FinishFile>),
}

/// The names of the search model's tools, in the order it is told about them.
pub(super) const TOOL_NAMES: [&str; 4] = ["grep", "read", "list_directory", "finish"];

/// Accepts a line spec as text (`"1-20,40-60"`), a number (`12`) or a list of either.
fn line_spec<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    fn text(value: &Value) -> Option<String> {
        match value {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Array(items) => {
                let parts: Vec<String> = items.iter().filter_map(text).collect();
                Some(parts.join(","))
            }
            _ => None,
        }
    }
    let value = Option::<Value>::deserialize(deserializer)?;
    Ok(value.as_ref().and_then(text).map(|s| s.trim().to_string()).filter(|s| !s.is_empty()))
}

impl SearchCall {
    /// A native function call `name(arguments)`.
    pub fn from_native(name: &str, arguments: &Value) -> Result<Self, String> {
        let invalid = |e: serde_json::Error| format!("invalid arguments for {name}: {e}");
        match name {
            "grep" => serde_json::from_value(arguments.clone()).map(Self::Grep).map_err(invalid),
            "read" => serde_json::from_value(arguments.clone()).map(Self::Read).map_err(invalid),
            "list_directory" => {
                serde_json::from_value(arguments.clone()).map(Self::ListDirectory).map_err(invalid)
            }
            "finish" => serde_json::from_value::<FinishArgs>(arguments.clone())
                .map(|args| Self::Finish(args.files))
                .map_err(invalid),
            other => Err(format!("unknown tool `{other}`; the tools are {}", TOOL_NAMES.join(", "))),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Self::Grep(_) => "grep",
            Self::Read(_) => "read",
            Self::ListDirectory(_) => "list_directory",
            Self::Finish(_) => "finish",
        }
    }

    /// A short line for the parent's progress: `grep new_id in src/ (*.rs)`, `read a.rs:1-9`.
    pub fn describe(&self) -> String {
        match self {
            Self::Grep(args) => {
                let mut line = format!("grep {}", args.pattern);
                if let Some(dir) = &args.sub_dir {
                    line.push_str(&format!(" in {dir}"));
                }
                if let Some(glob) = &args.glob {
                    line.push_str(&format!(" ({glob})"));
                }
                line
            }
            Self::Read(args) => match &args.lines {
                Some(lines) => format!("read {}:{lines}", args.path),
                None => format!("read {}", args.path),
            },
            Self::ListDirectory(args) => format!("list_directory {}", args.path.as_deref().unwrap_or(".")),
            Self::Finish(files) => {
                let files: Vec<String> = files
                    .iter()
                    .map(|f| match &f.lines {
                        Some(lines) => format!("{}:{lines}", f.path),
                        None => f.path.clone(),
                    })
                    .collect();
                format!("finish {}", files.join(" "))
            }
        }
    }

    /// The opening tag its result is wrapped in: the tool's name with the call's arguments as
    /// attributes, so the model sees which query each result answers.
    pub fn open_tag(&self) -> String {
        let mut attributes: Vec<(&str, &str)> = Vec::new();
        match self {
            Self::Grep(args) => {
                attributes.push(("pattern", &args.pattern));
                attributes.push(("sub_dir", args.sub_dir.as_deref().unwrap_or(".")));
                if let Some(glob) = &args.glob {
                    attributes.push(("glob", glob));
                }
            }
            Self::Read(args) => {
                attributes.push(("path", &args.path));
                if let Some(lines) = &args.lines {
                    attributes.push(("lines", lines));
                }
            }
            Self::ListDirectory(args) => attributes.push(("path", args.path.as_deref().unwrap_or("."))),
            Self::Finish(_) => {}
        }
        let mut tag = format!("<{}", self.name());
        for (key, value) in attributes {
            tag.push_str(&format!(" {key}=\"{}\"", escape(value)));
        }
        tag.push('>');
        tag
    }
}

/// `text` with the characters XML gives meaning to escaped.
pub(super) fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;").replace('>', "&gt;")
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// Removes every `<think>…</think>` block (an unclosed one runs to the end).
fn without_thinking(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<think>") {
        out.push_str(&rest[..start]);
        match rest[start..].find("</think>") {
            Some(end) => rest = &rest[start + end + "</think>".len()..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// The text between `<tag>` and the next `</tag>` in `body`, from `from` on, with where it ends.
fn element<'a>(body: &'a str, tag: &str, from: usize) -> Option<(&'a str, usize)> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = body[from..].find(&open)? + from + open.len();
    let end = body[start..].find(&close)? + start;
    Some((&body[start..end], end + close.len()))
}

fn child(body: &str, tag: &str) -> Option<String> {
    element(body, tag, 0).map(|(inner, _)| unescape(inner.trim())).filter(|v| !v.is_empty())
}

/// The calls written in the seed's XML form in `text`, in the order they appear. A call that
/// cannot be read is an error naming what is missing.
pub(super) fn parse_xml(text: &str) -> Vec<Result<SearchCall, String>> {
    let text = without_thinking(text);
    let mut calls = Vec::new();
    let mut at = 0;
    loop {
        let next = TOOL_NAMES
            .iter()
            .filter_map(|name| text[at..].find(&format!("<{name}>")).map(|i| (at + i, *name)))
            .min_by_key(|(i, _)| *i);
        let Some((start, name)) = next else { break };
        let Some((body, end)) = element(&text, name, start) else {
            calls.push(Err(format!("<{name}> is not closed with </{name}>")));
            break;
        };
        calls.push(xml_call(name, body));
        at = end;
    }
    calls
}

fn xml_call(name: &str, body: &str) -> Result<SearchCall, String> {
    match name {
        "grep" => Ok(SearchCall::Grep(GrepArgs {
            pattern: child(body, "pattern").ok_or("grep needs a <pattern>")?,
            sub_dir: child(body, "sub_dir").or_else(|| child(body, "path")),
            glob: child(body, "glob"),
        })),
        "read" => Ok(SearchCall::Read(ReadArgs {
            path: child(body, "path").or_else(|| child(body, "file")).ok_or("read needs a <path>")?,
            lines: child(body, "lines"),
        })),
        "list_directory" => Ok(SearchCall::ListDirectory(ListArgs { path: child(body, "path") })),
        _ => {
            let mut files = Vec::new();
            let mut at = 0;
            while let Some((file, end)) = element(body, "file", at) {
                files.push(finish_file(file)?);
                at = end;
            }
            Ok(SearchCall::Finish(files))
        }
    }
}

/// `<file><path>a.rs</path><lines>1-9</lines></file>`, or the short `<file>a.rs:1-9</file>`.
fn finish_file(body: &str) -> Result<FinishFile, String> {
    if let Some(path) = child(body, "path") {
        return Ok(FinishFile { path, lines: child(body, "lines") });
    }
    let text = unescape(body.trim());
    if text.is_empty() {
        return Err("a <file> of finish needs a <path>".into());
    }
    match text.rsplit_once(':') {
        Some((path, lines))
            if !lines.is_empty() && lines.chars().all(|c| c.is_ascii_digit() || ",- ".contains(c)) =>
        {
            Ok(FinishFile { path: path.to_string(), lines: Some(lines.to_string()) })
        }
        _ => Ok(FinishFile { path: text, lines: None }),
    }
}

/// The tools as native function definitions.
pub(super) fn definitions() -> Vec<ToolDefinition> {
    let lines = json!({"type": "string", "description": "Line ranges, 1-based and inclusive: \"10-40\" or \"1-20,55-80\"."});
    vec![
        ToolDefinition {
            name: "grep".into(),
            description: "Searches file contents with a regular expression (ripgrep syntax). Matching lines \
                          come back as path:line:text, the line before and after each as path-line-text, \
                          groups apart by --."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The regular expression."},
                    "sub_dir": {"type": "string", "description": "Directory to search, relative to the repository root (default \".\")."},
                    "glob": {"type": "string", "description": "Only files matching this glob, e.g. \"*.py\" or \"*.{ts,tsx}\"."}
                },
                "required": ["pattern"]
            })
            .into(),
        },
        ToolDefinition {
            name: "read".into(),
            description: "Reads a file, whole or in line ranges; lines come back as line|text.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file, relative to the repository root."},
                    "lines": lines
                },
                "required": ["path"]
            })
            .into(),
        },
        ToolDefinition {
            name: "list_directory".into(),
            description: "Lists a directory two levels deep as an indented tree; directories end in /."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The directory, relative to the repository root (default \".\")."}
                }
            })
            .into(),
        },
        ToolDefinition {
            name: "finish".into(),
            description: "Ends the search with the files and line ranges that answer the query.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "files": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "path": {"type": "string", "description": "The file, relative to the repository root."},
                                "lines": lines
                            },
                            "required": ["path"]
                        }
                    }
                },
                "required": ["files"]
            })
            .into(),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grep(pattern: &str, sub_dir: Option<&str>, glob: Option<&str>) -> SearchCall {
        SearchCall::Grep(GrepArgs {
            pattern: pattern.into(),
            sub_dir: sub_dir.map(Into::into),
            glob: glob.map(Into::into),
        })
    }

    #[test]
    fn the_xml_form_parses_in_order_with_thinking_left_out() {
        let text = "<think>\nMaybe <grep><pattern>ignored</pattern></grep> here.\n</think>\n\n\
            <grep>\n  <pattern>Vec<String> &amp; more</pattern>\n  <sub_dir>src/</sub_dir>\n</grep>\n\
            <list_directory>\n  <path>src/auth</path>\n</list_directory>\n\
            <read>\n  <path>src/a.rs</path>\n  <lines>1-20,40-60</lines>\n</read>\n\
            <grep><pattern>fn main</pattern><glob>*.{rs,toml}</glob></grep>";
        let calls: Vec<SearchCall> = parse_xml(text).into_iter().map(Result::unwrap).collect();
        assert_eq!(
            calls,
            vec![
                grep("Vec<String> & more", Some("src/"), None),
                SearchCall::ListDirectory(ListArgs { path: Some("src/auth".into()) }),
                SearchCall::Read(ReadArgs { path: "src/a.rs".into(), lines: Some("1-20,40-60".into()) }),
                grep("fn main", None, Some("*.{rs,toml}")),
            ]
        );
    }

    #[test]
    fn finish_files_come_in_the_long_and_the_short_form() {
        let text = "<finish>\n<file>\n<path>src/a.rs</path>\n<lines>1-15,25-50</lines>\n</file>\n\
                    <file><path>README.md</path></file>\n<file>src/b.rs:7-9</file>\n</finish>";
        let calls: Vec<SearchCall> = parse_xml(text).into_iter().map(Result::unwrap).collect();
        assert_eq!(
            calls,
            vec![SearchCall::Finish(vec![
                FinishFile { path: "src/a.rs".into(), lines: Some("1-15,25-50".into()) },
                FinishFile { path: "README.md".into(), lines: None },
                FinishFile { path: "src/b.rs".into(), lines: Some("7-9".into()) },
            ])]
        );
    }

    #[test]
    fn broken_xml_calls_say_what_is_missing() {
        assert_eq!(
            parse_xml("<grep><sub_dir>src</sub_dir></grep>"),
            vec![Err("grep needs a <pattern>".into())]
        );
        assert_eq!(parse_xml("<read><pattern>x"), vec![Err("<read> is not closed with </read>".into())]);
        assert_eq!(parse_xml("Nothing to call here."), vec![]);
    }

    #[test]
    fn native_calls_parse_into_the_same_calls() {
        assert_eq!(
            SearchCall::from_native("grep", &json!({"pattern": "x", "sub_dir": "src", "glob": "*.rs"})),
            Ok(grep("x", Some("src"), Some("*.rs")))
        );
        assert_eq!(
            SearchCall::from_native("read", &json!({"path": "a.rs", "lines": ["1-5", 9]})),
            Ok(SearchCall::Read(ReadArgs { path: "a.rs".into(), lines: Some("1-5,9".into()) }))
        );
        assert_eq!(
            SearchCall::from_native("finish", &json!({"files": [{"path": "a.rs", "lines": "3-4"}]})),
            Ok(SearchCall::Finish(vec![FinishFile { path: "a.rs".into(), lines: Some("3-4".into()) }]))
        );
        assert!(SearchCall::from_native("shell", &json!({})).unwrap_err().contains("unknown tool `shell`"));
        assert!(SearchCall::from_native("grep", &json!({})).unwrap_err().contains("pattern"));
    }

    #[test]
    fn result_tags_echo_the_call() {
        assert_eq!(
            grep("a\"<b", Some("src/"), Some("*.rs")).open_tag(),
            "<grep pattern=\"a&quot;&lt;b\" sub_dir=\"src/\" glob=\"*.rs\">"
        );
        assert_eq!(
            SearchCall::ListDirectory(ListArgs { path: None }).open_tag(),
            "<list_directory path=\".\">"
        );
    }

    #[test]
    fn every_tool_has_a_definition_with_an_object_schema() {
        let names: Vec<String> = definitions().into_iter().map(|d| d.name).collect();
        assert_eq!(names, TOOL_NAMES);
        for definition in definitions() {
            assert_eq!(definition.parameters["type"], "object");
        }
    }
}
