//! MCP servers in the configuration: `[mcp_servers.NAME]` and `[mcp]` of agentls's own files,
//! and the formats users already keep in repositories (`.mcp.json`'s `mcpServers`,
//! `.vscode/mcp.json`'s `servers`), read into the same [`McpServerLayer`].
//!
//! Invariants:
//! - Every format maps to one model; a server named in several layers is merged key by key like
//!   every other table, and remembers the file that gave it its `command` or `url` (`origin`).
//! - A value reaches a server from the environment only where the configuration names the
//!   variable (`env_vars`, `env_http_headers`, `bearer_token_env_var`, `${VAR}` in a value); the
//!   process environment is otherwise filtered (`crate::mcp::spec`, which expands a server's
//!   `${…}` with [`substitute`], the scanner both forms share).
//! - A project's servers are project keys: `config::trust::restrict` withholds them (and any
//!   loosening of `[mcp]`) until the folder is trusted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ConfigError, ShellPermission};

/// Claude Code's project file of MCP servers (`mcpServers`).
pub const MCP_JSON: &str = ".mcp.json";
/// VS Code's workspace file of MCP servers (`servers`).
pub const VSCODE_MCP_JSON: &str = ".vscode/mcp.json";

/// What happens before an MCP tool runs: the same three answers as for shell commands.
pub type McpPermission = ShellPermission;

/// One MCP server (`[mcp_servers.NAME]`): a program on stdio (`command`) or a Streamable HTTP
/// endpoint (`url`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerLayer {
    /// The program to start (stdio transport).
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    /// Variables set for the program (`${VAR}` takes the value of agentls's variable VAR).
    pub env: Option<BTreeMap<String, String>>,
    /// Variables of agentls's environment passed on by name (secrets included: you named them).
    pub env_vars: Option<Vec<String>>,
    /// Where the program runs (default: the workspace root); relative to the workspace root.
    pub cwd: Option<PathBuf>,
    /// The server's Streamable HTTP endpoint.
    pub url: Option<String>,
    /// `Authorization: Bearer <value of this variable>`.
    pub bearer_token_env_var: Option<String>,
    /// Headers with literal values (`${VAR}` is expanded): never a secret in a committed file.
    pub http_headers: Option<BTreeMap<String, String>>,
    /// Headers whose values come from the environment variable named.
    pub env_http_headers: Option<BTreeMap<String, String>>,
    /// `false` keeps the server configured but not started (default true).
    pub enabled: Option<bool>,
    /// How long a prompt waits for the server to start (default 10 s).
    pub startup_timeout_ms: Option<u64>,
    /// How long one tool call may run (default 120 s).
    pub tool_timeout_ms: Option<u64>,
    /// Only these tools are offered (default: all).
    pub allow_tools: Option<Vec<String>>,
    /// These tools are never offered.
    pub deny_tools: Option<Vec<String>>,
    /// Whether this server's tools run without asking: ask (default) | allow | deny.
    pub permission: Option<McpPermission>,
    /// Per tool, wins over `permission`.
    pub tool_permissions: Option<BTreeMap<String, McpPermission>>,
    /// The file that set `command` or `url` (for `agentls mcp list` and the trust report).
    #[serde(skip)]
    pub origin: Option<PathBuf>,
}

/// Settings of every MCP server (`[mcp]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpLayer {
    /// The permission of servers that set none: ask (default) | allow | deny.
    pub permission: Option<McpPermission>,
    /// Tools that declare `readOnlyHint` run without asking (default false; a server's own
    /// `deny`, or a tool's, still wins).
    pub allow_read_only: Option<bool>,
}

macro_rules! merge_some {
    ($dst:expr, $src:expr; $($f:ident),*) => { $( if $src.$f.is_some() { $dst.$f = $src.$f; } )* };
}

impl McpServerLayer {
    /// Overlays `other`: every key it sets wins; setting a transport replaces the other one.
    pub fn merge(&mut self, other: McpServerLayer) {
        if other.command.is_some() || other.url.is_some() {
            self.command = None;
            self.url = None;
            self.origin = other.origin.clone();
        }
        merge_some!(self, other; command, args, env, env_vars, cwd, url, bearer_token_env_var,
            http_headers, env_http_headers, enabled, startup_timeout_ms, tool_timeout_ms,
            allow_tools, deny_tools, permission, tool_permissions);
    }

    /// What the server is, for a person: the command line or the URL.
    pub fn describe(&self) -> String {
        match (&self.command, &self.url) {
            (Some(command), _) => {
                let mut line = command.clone();
                for arg in self.args.iter().flatten() {
                    line.push(' ');
                    line.push_str(arg);
                }
                line
            }
            (None, Some(url)) => url.clone(),
            (None, None) => "(no command or url)".into(),
        }
    }

    /// The range checks of one layer; `key` is `mcp_servers.NAME`.
    pub(super) fn check(&self, key: &str) -> Result<(), (String, String)> {
        if self.command.is_some() && self.url.is_some() {
            return Err((
                key.to_string(),
                "either `command` (a program on stdio) or `url` (Streamable HTTP), not both".into(),
            ));
        }
        if self.command.as_deref().is_some_and(|c| c.trim().is_empty()) {
            return Err((format!("{key}.command"), "a program to start".into()));
        }
        for (field, value) in
            [("startup_timeout_ms", self.startup_timeout_ms), ("tool_timeout_ms", self.tool_timeout_ms)]
        {
            if value == Some(0) {
                return Err((format!("{key}.{field}"), "a number of milliseconds greater than 0".into()));
            }
        }
        Ok(())
    }
}

impl McpLayer {
    pub fn merge(&mut self, other: McpLayer) {
        merge_some!(self, other; permission, allow_read_only);
    }
}

/// Whether `name` can name a server: it becomes part of tool names (`mcp__NAME__tool`), which
/// providers limit to letters, digits, `_` and `-`.
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && !name.contains("__")
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A server name from a JSON file made valid: other characters become `_`.
pub fn server_name_from(name: &str) -> String {
    let mut cleaned: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    while cleaned.contains("__") {
        cleaned = cleaned.replace("__", "_");
    }
    cleaned.truncate(32);
    if cleaned.is_empty() { "server".into() } else { cleaned }
}

/// Which project file format a JSON file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpFileFormat {
    /// `.mcp.json`: `{"mcpServers": {NAME: {command, args, env, type, url, headers}}}`, values
    /// with `${VAR}` / `${VAR:-default}`.
    ClaudeCode,
    /// `.vscode/mcp.json`: `{"servers": {NAME: {type, command, args, env, cwd, url, headers}}}`,
    /// values with `${env:VAR}` and `${workspaceFolder}`.
    VsCode,
}

/// Reads one project file of MCP servers; `None` when there is none. A server the format
/// cannot express for agentls (an `${input:…}` prompt, an SSE-only transport) is an error that
/// names the file and the server.
pub fn read_project_file(
    root: &Path,
    format: McpFileFormat,
) -> Result<Option<BTreeMap<String, McpServerLayer>>, ConfigError> {
    let relative = match format {
        McpFileFormat::ClaudeCode => MCP_JSON,
        McpFileFormat::VsCode => VSCODE_MCP_JSON,
    };
    let path = root.join(relative);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ConfigError::Read { path: path.display().to_string(), message: e.to_string() }),
    };
    parse_project_file(&text, &path, root, format).map(Some)
}

/// Parses the text of a project file of MCP servers (see [`read_project_file`]).
pub fn parse_project_file(
    text: &str,
    path: &Path,
    root: &Path,
    format: McpFileFormat,
) -> Result<BTreeMap<String, McpServerLayer>, ConfigError> {
    let origin = path.display().to_string();
    let invalid =
        |key: String, expected: String| ConfigError::Invalid { origin: origin.clone(), key, expected };
    let document: Value = parse_jsonc(text)
        .map_err(|e| ConfigError::Parse { origin: origin.clone(), message: e.to_string() })?;
    let table = match format {
        McpFileFormat::ClaudeCode => "mcpServers",
        McpFileFormat::VsCode => "servers",
    };
    let Some(servers) = document.get(table) else { return Ok(BTreeMap::new()) };
    let servers =
        servers.as_object().ok_or_else(|| invalid(table.into(), "an object of servers by name".into()))?;
    let mut layers = BTreeMap::new();
    for (name, entry) in servers {
        let key = format!("{table}.{name}");
        let entry: JsonServer = serde_json::from_value(entry.clone())
            .map_err(|e| ConfigError::Parse { origin: origin.clone(), message: format!("`{key}`: {e}") })?;
        let convert = |value: &str, what: &str| {
            convert_value(value, format, root).map_err(|e| invalid(format!("{key}.{what}"), e))
        };
        let kind = entry.kind.as_deref().unwrap_or(if entry.url.is_some() { "http" } else { "stdio" });
        let mut layer = McpServerLayer { origin: Some(path.to_path_buf()), ..Default::default() };
        match kind {
            "stdio" => {
                let command = entry
                    .command
                    .as_deref()
                    .ok_or_else(|| invalid(key.clone(), "a `command` for a stdio server".into()))?;
                layer.command = Some(convert(command, "command")?);
                layer.args = Some(entry.args.iter().map(|a| convert(a, "args")).collect::<Result<_, _>>()?);
                if !entry.env.is_empty() {
                    let env = entry.env.iter().map(|(k, v)| Ok((k.clone(), convert(v, "env")?)));
                    layer.env = Some(env.collect::<Result<_, ConfigError>>()?);
                }
                if let Some(cwd) = &entry.cwd {
                    layer.cwd = Some(PathBuf::from(convert(cwd, "cwd")?));
                }
            }
            "http" | "streamable-http" | "streamableHttp" => {
                let url = entry
                    .url
                    .as_deref()
                    .ok_or_else(|| invalid(key.clone(), "a `url` for an http server".into()))?;
                layer.url = Some(convert(url, "url")?);
                if !entry.headers.is_empty() {
                    let headers = entry.headers.iter().map(|(k, v)| Ok((k.clone(), convert(v, "headers")?)));
                    layer.http_headers = Some(headers.collect::<Result<_, ConfigError>>()?);
                }
            }
            other => {
                return Err(invalid(
                    format!("{key}.type"),
                    format!("`stdio` or `http` (agentls speaks no `{other}` transport)"),
                ));
            }
        }
        layers.insert(server_name_from(name), layer);
    }
    Ok(layers)
}

/// One server of a JSON project file (both formats; unknown keys such as `envFile` or
/// `description` are left out).
#[derive(Debug, Deserialize)]
struct JsonServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

/// A value of a JSON file in agentls's own `${VAR}` form: `.mcp.json` already uses it;
/// VS Code's `${env:VAR}` becomes `${VAR}` and `${workspaceFolder}` the root.
fn convert_value(value: &str, format: McpFileFormat, root: &Path) -> Result<String, String> {
    if format == McpFileFormat::ClaudeCode {
        return Ok(value.to_string());
    }
    substitute(value, |inner| match inner.split_once(':') {
        Some(("env", var)) => Ok(format!("${{{var}}}")),
        Some(("input", id)) => Err(format!(
            "`${{input:{id}}}` asks VS Code's user for a value, which agentls cannot do; put the value in \
             an environment variable and write `${{env:NAME}}`"
        )),
        _ if inner == "workspaceFolder" => Ok(root.display().to_string()),
        _ => Ok(format!("${{{inner}}}")),
    })
}

/// `value` with each `${…}` replaced by what `replace` makes of the text between the braces; an
/// unclosed `${` is kept as it is.
pub(crate) fn substitute(
    value: &str,
    mut replace: impl FnMut(&str) -> Result<String, String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        out.push_str(&replace(&rest[start + 2..start + end])?);
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Parses JSON with comments and trailing commas (VS Code's files allow both).
fn parse_jsonc(text: &str) -> serde_json::Result<Value> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                while chars.peek().is_some_and(|&n| n != '\n') {
                    chars.next();
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for n in chars.by_ref() {
                    if last == '*' && n == '/' {
                        break;
                    }
                    last = n;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    // Trailing commas: a comma followed (past whitespace) by a closing bracket.
    let bytes: Vec<char> = out.chars().collect();
    let mut cleaned = String::with_capacity(out.len());
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            cleaned.push(c);
            if c == '\\' && i + 1 < bytes.len() {
                cleaned.push(bytes[i + 1]);
                i += 1;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            cleaned.push(c);
        } else if c == ',' {
            let next = bytes[i + 1..].iter().find(|n| !n.is_whitespace());
            if !matches!(next, Some('}') | Some(']')) {
                cleaned.push(c);
            }
        } else {
            cleaned.push(c);
        }
        i += 1;
    }
    serde_json::from_str(&cleaned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_project_formats_map_to_the_same_model() {
        let root = Path::new("/w");
        let claude = r#"{"mcpServers": {
            "github": {"command": "npx", "args": ["-y", "@x/github"], "env": {"TOKEN": "${GITHUB_TOKEN}"}},
            "docs": {"type": "http", "url": "https://docs.example/mcp", "headers": {"Authorization": "Bearer ${DOCS_KEY}"}}
        }}"#;
        let vscode = r#"{
            // VS Code allows comments
            "servers": {
                "github": {"type": "stdio", "command": "npx", "args": ["-y", "@x/github"],
                           "env": {"TOKEN": "${env:GITHUB_TOKEN}"},},
                "docs": {"type": "http", "url": "https://docs.example/mcp",
                         "headers": {"Authorization": "Bearer ${env:DOCS_KEY}"}},
            },
            "inputs": []
        }"#;
        let from_claude =
            parse_project_file(claude, Path::new("/w/.mcp.json"), root, McpFileFormat::ClaudeCode).unwrap();
        let from_vscode =
            parse_project_file(vscode, Path::new("/w/.vscode/mcp.json"), root, McpFileFormat::VsCode)
                .unwrap();
        let strip = |mut m: BTreeMap<String, McpServerLayer>| {
            m.values_mut().for_each(|l| l.origin = None);
            m
        };
        let expected = BTreeMap::from([
            (
                "docs".to_string(),
                McpServerLayer {
                    url: Some("https://docs.example/mcp".into()),
                    http_headers: Some(BTreeMap::from([(
                        "Authorization".into(),
                        "Bearer ${DOCS_KEY}".into(),
                    )])),
                    ..Default::default()
                },
            ),
            (
                "github".to_string(),
                McpServerLayer {
                    command: Some("npx".into()),
                    args: Some(vec!["-y".into(), "@x/github".into()]),
                    env: Some(BTreeMap::from([("TOKEN".into(), "${GITHUB_TOKEN}".into())])),
                    ..Default::default()
                },
            ),
        ]);
        assert_eq!(strip(from_claude), expected);
        assert_eq!(strip(from_vscode), expected);
    }

    #[test]
    fn what_agentls_cannot_do_is_an_error_naming_the_server() {
        let root = Path::new("/w");
        let input = r#"{"servers": {"gh": {"command": "x", "env": {"T": "${input:token}"}}}}"#;
        let error = parse_project_file(input, Path::new("/w/.vscode/mcp.json"), root, McpFileFormat::VsCode)
            .unwrap_err();
        assert!(
            error.to_string().contains("servers.gh.env") && error.to_string().contains("env:NAME"),
            "{error}"
        );
        let sse = r#"{"mcpServers": {"old": {"type": "sse", "url": "http://x"}}}"#;
        let error =
            parse_project_file(sse, Path::new("/w/.mcp.json"), root, McpFileFormat::ClaudeCode).unwrap_err();
        assert!(error.to_string().contains("mcpServers.old.type"), "{error}");
        let folder = r#"{"servers": {"my server.v2": {"command": "x", "cwd": "${workspaceFolder}/tools"}}}"#;
        let parsed =
            parse_project_file(folder, Path::new("/w/.vscode/mcp.json"), root, McpFileFormat::VsCode)
                .unwrap();
        assert_eq!(parsed["my_server_v2"].cwd, Some(PathBuf::from("/w/tools")));
    }

    #[test]
    fn server_names_fit_tool_names() {
        assert!(valid_server_name("github"));
        assert!(valid_server_name("my-docs_2"));
        assert!(!valid_server_name("a__b"));
        assert!(!valid_server_name("a.b"));
        assert!(!valid_server_name(""));
    }
}
