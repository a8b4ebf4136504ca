//! Layered settings: defaults < user file < project file < environment < flags / LSP options.
//!
//! Invariants:
//! - Every layer is a [`ConfigLayer`] of optional values; a later layer wins key by key.
//! - Files are parsed strictly: an unknown key or a bad value is a [`ConfigError`] naming the
//!   file, the key and what is expected. Nothing is silently ignored.
//! - API keys are held in [`Secret`], whose `Debug`/`Display` never show the value.

mod choices;
pub mod mcp;
pub mod network;
pub mod provider;
mod secret;
pub mod trust;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use choices::{ProfileKind, PromptSection, ReasoningEffort};
pub use mcp::{McpLayer, McpPermission, McpServerLayer};
pub use network::{NetworkSettings, ProxyUrl};
pub use provider::{
    ProviderKind, ProviderSettings, ResolveError, SearchProvider, resolve_provider, resolve_search_provider,
};
pub use secret::Secret;
pub use trust::{IgnoredKey, ProjectTrust, TrustError, TrustStore};

/// File name of the project configuration, looked up in the workspace root.
pub const PROJECT_FILE: &str = ".agentls.toml";

/// A command's timeout when neither the call nor `[shell] default_timeout_ms` gives one.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// The longest a command may run when `[shell] max_timeout_ms` is not set.
pub const MAX_TIMEOUT_MS: u64 = 600_000;

/// The smallest `loop_detection_window`: a window of one call would call every call a loop.
pub const MIN_LOOP_DETECTION_WINDOW: usize = 2;

/// How proposed edits are handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    /// Every change set is shown to the user and waits for a decision.
    Review,
    /// Change sets are applied at once.
    Auto,
    /// Change sets are refused; the model is told so.
    Deny,
}

impl std::str::FromStr for Approval {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "review" => Ok(Self::Review),
            "auto" => Ok(Self::Auto),
            "deny" => Ok(Self::Deny),
            other => Err(format!("unknown approval `{other}`, expected one of: review, auto, deny")),
        }
    }
}

/// What happens before a shell command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShellPermission {
    Ask,
    Allow,
    Deny,
}

impl std::str::FromStr for ShellPermission {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ask" => Ok(Self::Ask),
            "allow" => Ok(Self::Allow),
            "deny" => Ok(Self::Deny),
            other => Err(format!("unknown shell permission `{other}`, expected one of: ask, allow, deny")),
        }
    }
}

/// Which environment variables a child process inherits (secrets are always filtered out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum EnvPolicy {
    #[default]
    InheritAll,
    CoreOnly,
    None,
}

/// Per-provider overrides (`[providers.anthropic]`, …).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderLayer {
    /// Base URL, spelled as the official SDK's environment variable expects it.
    pub base_url: Option<String>,
    /// Name of the environment variable that holds the key (never the key itself).
    pub api_key_env: Option<String>,
    /// Model used when this provider is picked and no model is given.
    pub model: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellLayer {
    pub default_timeout_ms: Option<u64>,
    pub max_timeout_ms: Option<u64>,
    pub env_policy: Option<EnvPolicy>,
    pub permission: Option<ShellPermission>,
    /// Command prefixes that run without asking.
    pub allow: Option<Vec<String>>,
}

/// Model requests (`[network]`): how long a silent provider is waited for, how failures retry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkLayer {
    /// A model response that sends nothing for this long fails: before its first byte, or
    /// between two reads of a stream.
    pub read_timeout_ms: Option<u64>,
    /// Connecting to a provider (TCP, a proxy's tunnel, TLS) that takes this long fails.
    pub connect_timeout_ms: Option<u64>,
    /// Retries of a failed model call (rate limits, overload, 5xx, network errors, cut streams).
    pub max_retries: Option<u32>,
    /// The first retry's delay when the provider names none; it doubles with each retry.
    pub retry_base_delay_ms: Option<u64>,
    /// The HTTP proxy of model requests; wins over `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY`.
    pub proxy: Option<String>,
    /// A PEM file of certificate authorities to trust besides the system's (a company's, or a
    /// TLS-inspecting proxy's).
    pub ca_file: Option<PathBuf>,
}

/// The model of `codebase_search`'s search helper (`[search]`); unset keys fall back to the
/// session's provider and model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchLayer {
    /// The provider the search model is reached through (its key, base URL and default model
    /// come from the provider's own settings).
    pub provider: Option<ProviderKind>,
    /// The search model; default: the provider's `model` setting or default model when
    /// `provider` is set, else the session's model.
    pub model: Option<String>,
    /// Offer the search tools as native function definitions (default true). `false` sends
    /// none: for a model served without function calling, which writes the XML form.
    pub native_tools: Option<bool>,
}

/// Context management (`[context]`): the token estimate and compaction (seed 004).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextLayer {
    /// Characters per token of the estimate (1 to 32, default 4); the provider's reports
    /// calibrate it further.
    pub chars_per_token: Option<u32>,
    /// Compact the history when the estimate crosses `auto_compact_percent` (default true).
    pub auto_compact: Option<bool>,
    /// Share of the context window, in percent, at which the history is compacted (1 to 100,
    /// default 85).
    pub auto_compact_percent: Option<u8>,
    /// How many of the latest exchanges compaction keeps as they are (at least 1, default 3).
    pub keep_exchanges: Option<usize>,
    /// The model that writes summaries (default: the session's model).
    pub compaction_model: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogLayer {
    /// A `tracing` filter such as `info` or `agentls=debug`.
    pub filter: Option<String>,
    /// Write logs to this file instead of stderr.
    pub file: Option<PathBuf>,
}

/// Overrides of prompt sections (`[prompt]`): minijinja templates that replace the built-in
/// text of a section (see docs/configuration.md for the sections and their variables).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptLayer {
    /// For every profile that has the section (`[prompt.sections]`).
    pub sections: Option<BTreeMap<PromptSection, String>>,
    /// For one profile (`[prompt.profiles.<profile>]`); wins over `sections`.
    pub profiles: Option<BTreeMap<ProfileKind, BTreeMap<PromptSection, String>>>,
}

/// Code mode (`[code]`, the `code` profile).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeLayer {
    /// true (default): the model calls the `python` tool; false: it answers with one
    /// ```python block per message, which is run and answered with an execution message.
    pub tool_calls: Option<bool>,
    /// The type each task's answer must have (default `str`).
    pub return_type: Option<String>,
    /// A premise shared by every task, stated in the system prompt.
    pub premise: Option<String>,
}

impl CodeLayer {
    /// Whether the model calls the `python` tool (true by default) or writes code blocks.
    pub fn uses_tool_calls(&self) -> bool {
        self.tool_calls.unwrap_or(true)
    }

    /// The type each task's answer must have.
    pub fn return_type(&self) -> &str {
        self.return_type.as_deref().map(str::trim).unwrap_or("str")
    }
}

/// One layer of settings. Every field is optional; see [`Config`] for the resolved values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigLayer {
    pub provider: Option<ProviderKind>,
    /// The profile of new sessions (default: the one aligned with the provider).
    pub profile: Option<ProfileKind>,
    pub model: Option<String>,
    pub reasoning_effort: Option<ReasoningEffort>,
    pub approval: Option<Approval>,
    /// Maximum model turns per session (0 = unlimited).
    pub max_turns: Option<u32>,
    /// Maximum tool rounds per user input (0 = unlimited).
    pub max_tool_rounds_per_input: Option<u32>,
    /// Record every model exchange of the run to this cassette file.
    pub record: Option<PathBuf>,
    /// The cassette the `replay` provider plays back.
    pub cassette: Option<PathBuf>,
    /// Allow tools to touch paths outside the workspace roots.
    pub allow_outside_workspace: Option<bool>,
    /// Extra instructions appended to the system prompt.
    pub instructions: Option<String>,
    /// Per-tool output limits in characters, overriding the profile defaults.
    pub tool_output_limits: Option<BTreeMap<String, usize>>,
    /// Per-tool output limits in lines (0 = no line limit), overriding the profile defaults.
    pub tool_line_limits: Option<BTreeMap<String, usize>>,
    /// Warn the model when its recent tool calls repeat one pattern (default true).
    pub enable_loop_detection: Option<bool>,
    /// How many consecutive tool calls loop detection looks at (default 10, at least 2).
    pub loop_detection_window: Option<usize>,
    /// Run only the first tool call of each model step and ask the provider for one (seed 002).
    pub one_call_per_step: Option<bool>,
    /// The model's context window in tokens, for the 80% usage warning and automatic compaction
    /// (default: the profile's figure for the model).
    pub context_window_tokens: Option<u64>,
    /// Offer the `submit(answer)` tool: the agent works until it submits, and a reply without
    /// tool calls gets the fixed continue message (seed 002; default false).
    pub submit_mode: Option<bool>,
    /// Maximum model requests per user input (0 = unlimited).
    pub max_steps: Option<u32>,
    /// Wall-clock limit per user input in seconds (0 = unlimited).
    pub time_limit_secs: Option<u64>,
    pub context: Option<ContextLayer>,
    /// How deep subagents may nest (default 1: the session's own subagents spawn none; 0: no
    /// subagent tools at all).
    pub max_subagent_depth: Option<u32>,
    pub providers: Option<BTreeMap<ProviderKind, ProviderLayer>>,
    pub shell: Option<ShellLayer>,
    pub network: Option<NetworkLayer>,
    pub search: Option<SearchLayer>,
    pub log: Option<LogLayer>,
    pub prompt: Option<PromptLayer>,
    pub code: Option<CodeLayer>,
    /// MCP servers by name (`[mcp_servers.NAME]`).
    pub mcp_servers: Option<BTreeMap<String, McpServerLayer>>,
    /// Settings of every MCP server (`[mcp]`).
    pub mcp: Option<McpLayer>,
}

macro_rules! merge_fields {
    ($dst:expr, $src:expr; $($f:ident),*) => { $( if $src.$f.is_some() { $dst.$f = $src.$f; } )* };
}

impl ConfigLayer {
    /// Overlays `other` on `self`: every value `other` sets wins.
    pub fn merge(&mut self, other: ConfigLayer) {
        merge_fields!(self, other; provider, profile, model, reasoning_effort, approval, max_turns,
            max_tool_rounds_per_input, record, cassette, allow_outside_workspace, instructions,
            enable_loop_detection, loop_detection_window, one_call_per_step, context_window_tokens,
            submit_mode, max_steps, time_limit_secs, max_subagent_depth);
        if let Some(context) = other.context {
            let slot = self.context.get_or_insert_with(ContextLayer::default);
            merge_fields!(slot, context; chars_per_token, auto_compact, auto_compact_percent, keep_exchanges,
                compaction_model);
        }
        if let Some(limits) = other.tool_output_limits {
            self.tool_output_limits.get_or_insert_with(BTreeMap::new).extend(limits);
        }
        if let Some(limits) = other.tool_line_limits {
            self.tool_line_limits.get_or_insert_with(BTreeMap::new).extend(limits);
        }
        if let Some(providers) = other.providers {
            let mine = self.providers.get_or_insert_with(BTreeMap::new);
            for (kind, layer) in providers {
                let slot = mine.entry(kind).or_default();
                merge_fields!(slot, layer; base_url, api_key_env, model);
            }
        }
        if let Some(shell) = other.shell {
            let slot = self.shell.get_or_insert_with(ShellLayer::default);
            merge_fields!(slot, shell; default_timeout_ms, max_timeout_ms, env_policy, permission);
            // Every layer's allowed prefixes add up: a flag's `--allow-command` keeps the file's.
            if let Some(allow) = shell.allow {
                let mine = slot.allow.get_or_insert_with(Vec::new);
                mine.extend(allow.into_iter().filter(|p| !mine.contains(p)).collect::<Vec<_>>());
            }
        }
        if let Some(network) = other.network {
            let slot = self.network.get_or_insert_with(NetworkLayer::default);
            merge_fields!(slot, network; read_timeout_ms, connect_timeout_ms, max_retries, retry_base_delay_ms, proxy, ca_file);
        }
        if let Some(search) = other.search {
            let slot = self.search.get_or_insert_with(SearchLayer::default);
            merge_fields!(slot, search; provider, model, native_tools);
        }
        if let Some(prompt) = other.prompt {
            let slot = self.prompt.get_or_insert_with(PromptLayer::default);
            if let Some(sections) = prompt.sections {
                slot.sections.get_or_insert_with(BTreeMap::new).extend(sections);
            }
            for (profile, sections) in prompt.profiles.unwrap_or_default() {
                let mine = slot.profiles.get_or_insert_with(BTreeMap::new);
                mine.entry(profile).or_default().extend(sections);
            }
        }
        if let Some(code) = other.code {
            let slot = self.code.get_or_insert_with(CodeLayer::default);
            merge_fields!(slot, code; tool_calls, return_type, premise);
        }
        if let Some(log) = other.log {
            let slot = self.log.get_or_insert_with(LogLayer::default);
            merge_fields!(slot, log; filter, file);
        }
        if let Some(servers) = other.mcp_servers {
            let mine = self.mcp_servers.get_or_insert_with(BTreeMap::new);
            for (name, server) in servers {
                mine.entry(name).or_default().merge(server);
            }
        }
        if let Some(mcp) = other.mcp {
            self.mcp.get_or_insert_with(McpLayer::default).merge(mcp);
        }
    }

    /// Notes `file` as the origin of the MCP servers whose `command` or `url` this layer sets.
    fn with_origin(mut self, file: &Path) -> Self {
        for server in self.mcp_servers.iter_mut().flat_map(|s| s.values_mut()) {
            if server.command.is_some() || server.url.is_some() {
                server.origin = Some(file.to_path_buf());
            }
        }
        self
    }

    /// Parses a TOML document; `origin` names it in errors.
    pub fn parse_toml(text: &str, origin: &Path) -> Result<Self, ConfigError> {
        let origin = origin.display().to_string();
        let layer: Self = toml::from_str(text)
            .map_err(|e| ConfigError::Parse { origin: origin.clone(), message: e.to_string() })?;
        layer.check(&origin)
    }

    /// Parses a JSON value (LSP initializationOptions or the `agentls` configuration section).
    pub fn from_json(value: serde_json::Value, origin: &str) -> Result<Self, ConfigError> {
        let layer: Self = serde_json::from_value(value)
            .map_err(|e| ConfigError::Parse { origin: origin.to_string(), message: e.to_string() })?;
        layer.check(origin)
    }

    /// Parses an editor's JSON layer key by key: every key that is valid applies, each bad one
    /// is left out and named in an error (one bad setting must not drop the user's others). A
    /// table with a bad key keeps its good keys the same way, however deep.
    pub fn from_json_lenient(value: serde_json::Value, origin: &str) -> (Self, Vec<ConfigError>) {
        match Self::from_json(value.clone(), origin) {
            Ok(layer) => (layer, Vec::new()),
            Err(error) => {
                let mut layer = Self::default();
                let mut errors = Vec::new();
                match value {
                    serde_json::Value::Object(map) => {
                        for (key, value) in sorted(map) {
                            keep_valid(&mut layer, &mut errors, &[key], value, origin);
                        }
                    }
                    _ => errors.push(error),
                }
                (layer, errors)
            }
        }
    }

    /// The range checks a type cannot express; the error names `origin` and the key.
    fn check(self, origin: &str) -> Result<Self, ConfigError> {
        let invalid = |key: &str, expected: &str| ConfigError::Invalid {
            origin: origin.to_string(),
            key: key.to_string(),
            expected: expected.to_string(),
        };
        if self.loop_detection_window.is_some_and(|w| w < MIN_LOOP_DETECTION_WINDOW) {
            return Err(invalid(
                "loop_detection_window",
                "a number of tool calls of at least 2; to turn loop detection off, set enable_loop_detection = false",
            ));
        }
        if self.context_window_tokens == Some(0) {
            return Err(invalid("context_window_tokens", "a number of tokens greater than 0"));
        }
        if let Some(context) = &self.context {
            if context.chars_per_token.is_some_and(|c| !(1..=32).contains(&c)) {
                return Err(invalid("context.chars_per_token", "a number of characters from 1 to 32"));
            }
            if context.auto_compact_percent.is_some_and(|p| !(1..=100).contains(&p)) {
                return Err(invalid(
                    "context.auto_compact_percent",
                    "a percentage from 1 to 100; to turn automatic compaction off, set auto_compact = false",
                ));
            }
            if context.keep_exchanges == Some(0) {
                return Err(invalid("context.keep_exchanges", "a number of exchanges of at least 1"));
            }
            if context.compaction_model.as_deref().is_some_and(|m| m.trim().is_empty()) {
                return Err(invalid(
                    "context.compaction_model",
                    "a model name, or no key for the session's model",
                ));
            }
        }
        let profiles = self.prompt.as_ref().and_then(|p| p.profiles.as_ref());
        for (profile, sections) in profiles.into_iter().flatten() {
            let known = || profile.prompt_sections().iter().chain(profile.message_sections());
            if let Some(section) = sections.keys().find(|s| !known().any(|k| k == *s)) {
                let names: Vec<&str> = known().map(|s| s.as_str()).collect();
                return Err(invalid(
                    &format!("prompt.profiles.{profile}.{section}"),
                    &format!("a section of the {profile} profile: {}", names.join(", ")),
                ));
            }
        }
        if let Some(network) = &self.network {
            if let Some(Err(why)) = network.proxy.as_deref().map(|p| ProxyUrl::new(p).check()) {
                return Err(invalid(
                    "network.proxy",
                    &format!("an HTTP proxy URL such as http://proxy.corp:3128: {why}"),
                ));
            }
            if network.ca_file.as_deref().is_some_and(|f| !f.is_absolute() && !f.starts_with("~")) {
                return Err(invalid(
                    "network.ca_file",
                    "an absolute path (or one under ~/) to a PEM file of CA certificates",
                ));
            }
        }
        if self.code.as_ref().and_then(|c| c.return_type.as_deref()).is_some_and(|t| t.trim().is_empty()) {
            return Err(invalid("code.return_type", "a Python type such as `str`, `int` or `list[str]`"));
        }
        for (name, server) in self.mcp_servers.iter().flatten() {
            if !mcp::valid_server_name(name) {
                return Err(invalid(
                    &format!("mcp_servers.{name}"),
                    "a server name of letters, digits, `_` and `-` (no `__`), at most 32 characters: it \
                     becomes part of the tool names (`mcp__NAME__tool`)",
                ));
            }
            server
                .check(&format!("mcp_servers.{name}"))
                .map_err(|(key, expected)| invalid(&key, &expected))?;
        }
        Ok(self)
    }

    /// The layer the environment contributes (`AGENTLS_PROVIDER`, `AGENTLS_MODEL`).
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        let mut layer = ConfigLayer::default();
        if let Some(p) = env.get("AGENTLS_PROVIDER") {
            layer.provider = Some(p.parse().map_err(|expected| ConfigError::Invalid {
                origin: "environment".into(),
                key: "AGENTLS_PROVIDER".into(),
                expected,
            })?);
        }
        if let Some(m) = env.get("AGENTLS_MODEL") {
            layer.model = Some(m.to_string());
        }
        Ok(layer)
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("invalid configuration in {origin}: {message}")]
    Parse { origin: String, message: String },
    #[error("invalid configuration in {origin}: `{key}`: {expected}")]
    Invalid { origin: String, key: String, expected: String },
    #[error("cannot read configuration file {path}: {message}")]
    Read { path: String, message: String },
}

/// A snapshot of environment variables. Tests build one from a map; the binary from the process.
#[derive(Debug, Clone, Default)]
pub struct Env(BTreeMap<String, String>);

impl Env {
    pub fn from_process() -> Self {
        Self(std::env::vars().collect())
    }

    pub fn from_pairs<K: Into<String>, V: Into<String>>(pairs: impl IntoIterator<Item = (K, V)>) -> Self {
        Self(pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect())
    }

    /// The value of `key` when it is set and not empty.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str).filter(|v| !v.is_empty())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// Where a layer came from, for `agentls doctor`.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    pub origin: String,
    pub found: bool,
}

/// The resolved settings with every default filled in.
#[derive(Debug, Clone)]
pub struct Config {
    pub layer: ConfigLayer,
    pub sources: Vec<Source>,
    /// The user configuration file looked up (found or not); its folder holds `prompts/`.
    pub user_file: Option<PathBuf>,
    /// The project file's trust: `None` without a project file.
    pub trust: Option<ProjectTrust>,
}

/// Inputs of [`Config::load`].
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// The workspace root, where `.agentls.toml` is looked up.
    pub project_root: Option<PathBuf>,
    /// Overrides the user file (normally `AGENTLS_CONFIG` or `<config dir>/agentls/config.toml`).
    pub user_file: Option<PathBuf>,
    /// The highest layer: command-line flags or LSP options.
    pub overrides: ConfigLayer,
    /// The folders the user trusts (default: the user's store, [`TrustStore::for_user`]).
    pub trust: Option<TrustStore>,
}

impl Config {
    /// Default user configuration file: `AGENTLS_CONFIG`, else `<config dir>/agentls/config.toml`.
    pub fn default_user_file(env: &Env) -> Option<PathBuf> {
        match env.get("AGENTLS_CONFIG") {
            Some(p) => Some(PathBuf::from(p)),
            None => dirs::config_dir().map(|d| d.join("agentls").join("config.toml")),
        }
    }

    pub fn load(env: &Env, opts: LoadOptions) -> Result<Self, ConfigError> {
        let mut layer = ConfigLayer::default();
        let mut sources = Vec::new();
        let user_file = opts.user_file.or_else(|| Self::default_user_file(env));
        if let Some(user) = read_layer(user_file.as_deref(), &mut sources)? {
            layer.merge(user);
        }
        let project_file = opts.project_root.as_ref().map(|r| r.join(PROJECT_FILE));
        let mut trust = None;
        let project = read_layer(project_file.as_deref(), &mut sources)?;
        if let (Some(root), Some(file)) = (opts.project_root, project_file) {
            let project = project.map(|p| p.with_origin(&file));
            let found = project.is_some();
            let (project, mcp_files) = with_project_mcp_files(project, &root, &mut sources)?;
            if let Some(project) = project {
                let (restricted, ignored) = trust::restrict(project.clone(), &layer);
                // The store is read only when the project sets something that needs trust.
                let trusted = ignored.is_empty()
                    || opts.trust.unwrap_or_else(|| TrustStore::for_user(env)).is_trusted(&root);
                let withheld_mcp_servers =
                    if trusted { BTreeMap::new() } else { project.mcp_servers.clone().unwrap_or_default() };
                layer.merge(if trusted { project } else { restricted });
                let ignored = if trusted { Vec::new() } else { ignored };
                let file = if found { file } else { mcp_files.into_iter().next().unwrap_or(file) };
                trust = Some(ProjectTrust { root, file, trusted, ignored, withheld_mcp_servers });
            }
        }
        layer.merge(ConfigLayer::from_env(env)?);
        layer.merge(opts.overrides);
        Ok(Self { layer, sources, user_file, trust })
    }

    /// A config with only defaults, for tests and tools run without files.
    pub fn defaults() -> Self {
        Self { layer: ConfigLayer::default(), sources: Vec::new(), user_file: None, trust: None }
    }

    /// The profile of a session: the one `asked` for (a flag, a command argument), else the
    /// configured `profile`, else the one aligned with `provider`. The one place every host
    /// chooses it.
    pub fn profile(&self, asked: Option<ProfileKind>, provider: Option<ProviderKind>) -> Option<ProfileKind> {
        asked.or(self.layer.profile).or(provider.map(ProfileKind::for_provider))
    }

    pub fn approval(&self, default: Approval) -> Approval {
        self.layer.approval.unwrap_or(default)
    }

    pub fn shell(&self) -> ShellLayer {
        self.layer.shell.clone().unwrap_or_default()
    }

    pub fn context(&self) -> ContextLayer {
        self.layer.context.clone().unwrap_or_default()
    }

    pub fn network(&self) -> NetworkLayer {
        self.layer.network.clone().unwrap_or_default()
    }

    pub fn search(&self) -> SearchLayer {
        self.layer.search.clone().unwrap_or_default()
    }

    pub fn mcp(&self) -> McpLayer {
        self.layer.mcp.clone().unwrap_or_default()
    }

    /// The user's folder of prompt section files (`<config dir>/agentls/prompts`).
    pub fn user_prompts_dir(&self) -> Option<PathBuf> {
        self.user_file.as_deref().and_then(Path::parent).map(|dir| dir.join("prompts"))
    }

    pub fn provider_layer(&self, kind: ProviderKind) -> ProviderLayer {
        self.layer.providers.as_ref().and_then(|p| p.get(&kind).cloned()).unwrap_or_default()
    }

    /// Overlays a higher layer (LSP `workspace/didChangeConfiguration`, `agentls.configure`).
    pub fn overlay(&self, layer: ConfigLayer) -> Self {
        let mut merged = self.layer.clone();
        merged.merge(layer);
        Self { layer: merged, ..self.clone() }
    }
}

/// Merges `value`, found at `path` of an editor's layer, into `layer` when it parses; otherwise
/// tries each key of a table on its own and reports what does not parse.
/// A JSON object's entries in key order (its map may keep insertion order), so the errors of an
/// editor's layer are named in the same order whatever order it sent its keys in.
fn sorted(map: serde_json::Map<String, serde_json::Value>) -> Vec<(String, serde_json::Value)> {
    let mut entries: Vec<(String, serde_json::Value)> = map.into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries
}

fn keep_valid(
    layer: &mut ConfigLayer,
    errors: &mut Vec<ConfigError>,
    path: &[String],
    value: serde_json::Value,
    origin: &str,
) {
    let nested = path.iter().rev().fold(value.clone(), |inner, key| serde_json::json!({ key: inner }));
    match ConfigLayer::from_json(nested, origin) {
        Ok(valid) => layer.merge(valid),
        Err(error) => match value {
            serde_json::Value::Object(map) if !map.is_empty() => {
                for (key, inner) in sorted(map) {
                    let mut deeper = path.to_vec();
                    deeper.push(key);
                    keep_valid(layer, errors, &deeper, inner, origin);
                }
            }
            _ => {
                let expected = match error {
                    ConfigError::Parse { message, .. } => message,
                    ConfigError::Invalid { expected, .. } => expected,
                    other => other.to_string(),
                };
                errors.push(ConfigError::Invalid {
                    origin: origin.to_string(),
                    key: path.join("."),
                    expected,
                });
            }
        },
    }
}

/// Adds the servers of the project's `.mcp.json` and `.vscode/mcp.json` to the project layer
/// (`.agentls.toml` wins over `.mcp.json`, which wins over `.vscode/mcp.json`); returns the
/// layer (`None` when no project file exists) and the JSON files found.
fn with_project_mcp_files(
    project: Option<ConfigLayer>,
    root: &Path,
    sources: &mut Vec<Source>,
) -> Result<(Option<ConfigLayer>, Vec<PathBuf>), ConfigError> {
    let mut servers: BTreeMap<String, McpServerLayer> = BTreeMap::new();
    let mut found = Vec::new();
    for (format, name) in
        [(mcp::McpFileFormat::VsCode, mcp::VSCODE_MCP_JSON), (mcp::McpFileFormat::ClaudeCode, mcp::MCP_JSON)]
    {
        if let Some(file_servers) = mcp::read_project_file(root, format)? {
            sources.push(Source { origin: root.join(name).display().to_string(), found: true });
            found.push(root.join(name));
            for (name, server) in file_servers {
                servers.entry(name).or_default().merge(server);
            }
        }
    }
    // The JSON files are listed before .agentls.toml would be: the first found names the project.
    found.reverse();
    if found.is_empty() {
        return Ok((project, found));
    }
    let mut layer = ConfigLayer { mcp_servers: Some(servers), ..ConfigLayer::default() };
    if let Some(project) = project {
        layer.merge(project);
    }
    Ok((Some(layer), found))
}

/// Reads and parses one config file, noting it in `sources`; `None` when there is no such file.
fn read_layer(path: Option<&Path>, sources: &mut Vec<Source>) -> Result<Option<ConfigLayer>, ConfigError> {
    let Some(path) = path else { return Ok(None) };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let layer = ConfigLayer::parse_toml(&text, path)?.with_origin(path);
            sources.push(Source { origin: path.display().to_string(), found: true });
            Ok(Some(layer))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            sources.push(Source { origin: path.display().to_string(), found: false });
            Ok(None)
        }
        Err(e) => Err(ConfigError::Read { path: path.display().to_string(), message: e.to_string() }),
    }
}

#[cfg(test)]
mod tests;
