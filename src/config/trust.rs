//! Workspace trust: which folders the user trusts, and what a project file may set before.
//!
//! A repository's own `.agentls.toml` may be written by a stranger. Until its user trusts the
//! folder, the project layer keeps only what restricts or describes; [`restrict`] takes out
//! every key that could send a request (and a key) to another host, loosen a permission, or
//! name a file to write or a program to start, and says why for each.
//!
//! Invariants:
//! - Only the user grants trust: the store lives in the user's config dir
//!   (`<config dir>/agentls/trust.toml`), never in a workspace, and only `agentls trust`,
//!   `agentls.trustFolder` or an editor's own trust decision write it.
//! - A trusted folder covers its subfolders; folders are compared canonically (symlinks
//!   resolved), so a link into a trusted tree is trusted and nothing else is.
//! - A project key that needs trust is kept only when the folder is trusted; the store is read
//!   only when the project file sets such a key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Approval, ConfigLayer, EnvPolicy, McpServerLayer, ShellLayer, ShellPermission};
use super::{DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS};
use crate::config::Env;

/// File name of the trust store, in the user's agentls config folder.
pub const TRUST_FILE: &str = "trust.toml";

/// A project key that was not applied because the folder is not trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IgnoredKey {
    /// The key as written in the file (`providers.anthropic.base_url`).
    pub key: String,
    /// What it would have done.
    pub reason: String,
}

/// The trust state of a workspace whose project file was read.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectTrust {
    /// The folder, as the host named it.
    pub root: PathBuf,
    /// Its project file.
    pub file: PathBuf,
    /// Whether the user trusts the folder (then nothing is ignored).
    pub trusted: bool,
    /// The keys of the project file that were not applied.
    pub ignored: Vec<IgnoredKey>,
    /// The project's MCP servers (`.agentls.toml`, `.mcp.json`, `.vscode/mcp.json`) that wait
    /// for trust; empty in a trusted folder.
    pub withheld_mcp_servers: BTreeMap<String, McpServerLayer>,
}

impl ProjectTrust {
    /// The command that grants trust to this folder.
    pub fn grant_command(&self) -> String {
        format!("agentls trust {}", shell_quote(&self.root.display().to_string()))
    }

    /// One plain paragraph for the user: what was ignored and how to trust the folder; `None`
    /// when nothing was.
    pub fn report(&self) -> Option<String> {
        if self.ignored.is_empty() {
            return None;
        }
        let keys: Vec<String> = self.ignored.iter().map(|k| format!("`{}` ({})", k.key, k.reason)).collect();
        Some(format!(
            "this folder is not trusted, so agentls ignores these settings of {}: {}. If you trust the \
             folder's authors, run `{}` (or trust it in your editor) and start a new session.",
            self.file.display(),
            keys.join("; "),
            self.grant_command()
        ))
    }
}

/// Quotes `text` for a POSIX shell when it needs it.
fn shell_quote(text: &str) -> String {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:@,".contains(c)) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("there is no user config folder to keep trusted folders in; set XDG_CONFIG_HOME or HOME")]
    NoStore,
    #[error("cannot read the trust store {path}: {message}")]
    Read { path: String, message: String },
    #[error("cannot write the trust store {path}: {message}")]
    Write { path: String, message: String },
    #[error("{path} is not a folder: {message}")]
    NotAFolder { path: String, message: String },
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreFile {
    #[serde(default)]
    folders: Vec<PathBuf>,
}

/// The folders the user trusts.
#[derive(Debug, Clone)]
pub struct TrustStore {
    file: Option<PathBuf>,
}

impl TrustStore {
    /// The user's store: `$XDG_CONFIG_HOME/agentls/trust.toml`, else the platform's config
    /// folder (`~/.config/agentls/trust.toml` on Linux).
    pub fn for_user(env: &Env) -> Self {
        let base = env
            .get("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| env.get("HOME").map(|h| Path::new(h).join(".config")))
            .or_else(dirs::config_dir);
        Self { file: base.map(|b| b.join("agentls").join(TRUST_FILE)) }
    }

    /// A store kept in `file`.
    pub fn at(file: PathBuf) -> Self {
        Self { file: Some(file) }
    }

    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// The trusted folders, as stored.
    pub fn folders(&self) -> Result<Vec<PathBuf>, TrustError> {
        let Some(file) = &self.file else { return Ok(Vec::new()) };
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(TrustError::Read { path: file.display().to_string(), message: e.to_string() });
            }
        };
        let parsed: StoreFile = toml::from_str(&text)
            .map_err(|e| TrustError::Read { path: file.display().to_string(), message: e.to_string() })?;
        Ok(parsed.folders)
    }

    /// Whether `dir` is a trusted folder or inside one. An unreadable store trusts nothing.
    pub fn is_trusted(&self, dir: &Path) -> bool {
        let folders = match self.folders() {
            Ok(folders) => folders,
            Err(e) => {
                tracing::warn!("{e}; no folder is trusted");
                return false;
            }
        };
        let dir = canonical(dir);
        folders.iter().any(|f| dir.starts_with(canonical(f)))
    }

    /// Trusts `dir` (made canonical) and returns it; trusting a folder twice is not an error.
    pub fn trust(&self, dir: &Path) -> Result<PathBuf, TrustError> {
        let dir = dir.canonicalize().map_err(|e| TrustError::NotAFolder {
            path: dir.display().to_string(),
            message: e.to_string(),
        })?;
        if !dir.is_dir() {
            return Err(TrustError::NotAFolder {
                path: dir.display().to_string(),
                message: "not a directory".into(),
            });
        }
        let mut folders = self.folders()?;
        if !folders.contains(&dir) {
            folders.push(dir.clone());
            self.write(folders)?;
        }
        Ok(dir)
    }

    /// Stops trusting `dir` (as stored, or its canonical form); `false` when it was not stored.
    /// Folders it lies in stay trusted, and so it does.
    pub fn remove(&self, dir: &Path) -> Result<bool, TrustError> {
        let canonical_dir = canonical(dir);
        let folders = self.folders()?;
        let kept: Vec<PathBuf> =
            folders.iter().filter(|f| f.as_path() != dir && canonical(f) != canonical_dir).cloned().collect();
        if kept.len() == folders.len() {
            return Ok(false);
        }
        self.write(kept)?;
        Ok(true)
    }

    /// Writes the store whole: a temporary file beside it, then a rename, so a reader never
    /// sees half a list.
    fn write(&self, folders: Vec<PathBuf>) -> Result<(), TrustError> {
        let file = self.file.as_ref().ok_or(TrustError::NoStore)?;
        let error = |e: &dyn std::fmt::Display| TrustError::Write {
            path: file.display().to_string(),
            message: e.to_string(),
        };
        let text = toml::to_string(&StoreFile { folders }).map_err(|e| error(&e))?;
        let text =
            format!("# Folders agentls trusts (`agentls trust --list`); each covers its subfolders.\n{text}");
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(|e| error(&e))?;
        }
        let temporary = file.with_extension(format!("toml.{}.tmp", std::process::id()));
        std::fs::write(&temporary, text).map_err(|e| error(&e))?;
        std::fs::rename(&temporary, file).map_err(|e| {
            let _ = std::fs::remove_file(&temporary);
            error(&e)
        })
    }
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// How strict a setting is, weakest first, for the keys a project may tighten but not loosen.
trait Strictness {
    fn rank(self) -> u8;
}

impl Strictness for ShellPermission {
    fn rank(self) -> u8 {
        match self {
            Self::Allow => 0,
            Self::Ask => 1,
            Self::Deny => 2,
        }
    }
}

impl Strictness for Approval {
    fn rank(self) -> u8 {
        match self {
            Self::Auto => 0,
            Self::Review => 1,
            Self::Deny => 2,
        }
    }
}

impl Strictness for EnvPolicy {
    fn rank(self) -> u8 {
        match self {
            Self::InheritAll => 0,
            Self::CoreOnly => 1,
            Self::None => 2,
        }
    }
}

/// Splits an untrusted project layer into what still applies and what needs trust. `below` is
/// what the layers under it (defaults and the user's file) already set: a project may make a
/// setting stricter than that, never looser.
pub fn restrict(mut project: ConfigLayer, below: &ConfigLayer) -> (ConfigLayer, Vec<IgnoredKey>) {
    let mut ignored = Vec::new();
    let mut ignore = |key: String, reason: String| ignored.push(IgnoredKey { key, reason });

    if let Some(providers) = project.providers.as_mut() {
        for (kind, layer) in providers.iter_mut() {
            if let Some(url) = layer.base_url.take() {
                ignore(
                    format!("providers.{kind}.base_url"),
                    format!("would send your requests and your {kind} API key to {url}"),
                );
            }
            if let Some(var) = layer.api_key_env.take() {
                ignore(
                    format!("providers.{kind}.api_key_env"),
                    format!("would send the value of ${var} as the {kind} API key"),
                );
            }
        }
    }
    if let Some(provider) = project.search.as_mut().and_then(|s| s.provider.take()) {
        ignore("search.provider".into(), format!("would send code search requests to {provider}"));
    }
    if let Some(shell) = project.shell.as_mut() {
        restrict_shell(shell, below.shell.as_ref(), &mut ignore);
    }
    if let Some(approval) = project.approval {
        let current = below.approval.unwrap_or(Approval::Review);
        if approval.rank() < current.rank() {
            project.approval = None;
            ignore("approval".into(), format!("would apply edits without review ({})", lower(&approval)));
        }
    }
    if project.allow_outside_workspace == Some(true) && below.allow_outside_workspace != Some(true) {
        project.allow_outside_workspace = None;
        ignore("allow_outside_workspace".into(), "would let tools reach files outside the workspace".into());
    }
    if let Some(network) = project.network.as_mut() {
        if let Some(proxy) = network.proxy.take() {
            ignore(
                "network.proxy".into(),
                format!(
                    "would send your requests, and your API keys, through the proxy {}",
                    super::ProxyUrl::new(&proxy)
                ),
            );
        }
        if let Some(file) = network.ca_file.take() {
            ignore(
                "network.ca_file".into(),
                format!(
                    "would trust the certificate authorities in {}, which could then pose as your provider and read your API keys",
                    file.display()
                ),
            );
        }
    }
    if let Some(file) = project.log.as_mut().and_then(|l| l.file.take()) {
        ignore("log.file".into(), format!("would write the log to {}", file.display()));
    }
    if let Some(file) = project.record.take() {
        ignore("record".into(), format!("would write every model exchange to {}", file.display()));
    }
    if let Some(file) = project.cassette.take() {
        ignore("cassette".into(), format!("would play model answers from {}", file.display()));
    }
    for (name, server) in project.mcp_servers.take().unwrap_or_default() {
        let from = match server.origin.as_deref() {
            Some(file) if file.ends_with(super::mcp::VSCODE_MCP_JSON) => {
                format!(" (from {})", super::mcp::VSCODE_MCP_JSON)
            }
            Some(file) if file.ends_with(super::mcp::MCP_JSON) => format!(" (from {})", super::mcp::MCP_JSON),
            _ => String::new(),
        };
        let reason = match (&server.command, &server.url) {
            (Some(_), _) => format!("would start the MCP server `{}`{from}", server.describe()),
            (None, Some(url)) => format!("would connect to the MCP server at {url}{from}"),
            (None, None) => format!("would change the settings of your MCP server `{name}`"),
        };
        ignore(format!("mcp_servers.{name}"), reason);
    }
    if let Some(mcp) = project.mcp.as_mut() {
        let below = below.mcp.clone().unwrap_or_default();
        if let Some(permission) = mcp.permission {
            let current = below.permission.unwrap_or(ShellPermission::Ask);
            if permission.rank() < current.rank() {
                mcp.permission = None;
                ignore(
                    "mcp.permission".into(),
                    format!("would run MCP tools without asking ({})", lower(&permission)),
                );
            }
        }
        if mcp.allow_read_only == Some(true) && below.allow_read_only != Some(true) {
            mcp.allow_read_only = None;
            ignore(
                "mcp.allow_read_only".into(),
                "would run MCP tools that call themselves read-only without asking".into(),
            );
        }
    }
    (project, ignored)
}

fn restrict_shell(
    shell: &mut ShellLayer,
    below: Option<&ShellLayer>,
    ignore: &mut impl FnMut(String, String),
) {
    let below = below.cloned().unwrap_or_default();
    if let Some(permission) = shell.permission {
        let current = below.permission.unwrap_or(ShellPermission::Ask);
        if permission.rank() < current.rank() {
            shell.permission = None;
            ignore(
                "shell.permission".into(),
                format!("would run the agent's commands without asking ({})", lower(&permission)),
            );
        }
    }
    if let Some(allow) = shell.allow.take().filter(|a| !a.is_empty()) {
        ignore(
            "shell.allow".into(),
            format!("would run commands starting with {} without asking", allow.join(", ")),
        );
    }
    if let Some(policy) = shell.env_policy {
        let current = below.env_policy.unwrap_or_default();
        if policy.rank() < current.rank() {
            shell.env_policy = None;
            ignore("shell.env_policy".into(), "would pass more of your environment to commands".into());
        }
    }
    for (key, value, current) in [
        (
            "shell.default_timeout_ms",
            &mut shell.default_timeout_ms,
            below.default_timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS),
        ),
        ("shell.max_timeout_ms", &mut shell.max_timeout_ms, below.max_timeout_ms.unwrap_or(MAX_TIMEOUT_MS)),
    ] {
        if let Some(ms) = value.filter(|ms| *ms > current) {
            *value = None;
            ignore(key.into(), format!("would let commands run longer ({ms} ms, above {current} ms)"));
        }
    }
}

/// A choice as the config file spells it.
fn lower<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}
