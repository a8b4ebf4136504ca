//! MCP servers as tools of the session (issue 26): the user's servers (`[mcp_servers.NAME]`,
//! and a trusted project's `.mcp.json` / `.vscode/mcp.json`), reached with the `rmcp` SDK over
//! stdio or Streamable HTTP, offered to the model as `mcp__server__tool`.
//!
//! [`McpHub`] is the host's (one per process): it starts each distinct server once, when the
//! first session needs it, and shares it with every session that configures the same one.
//! [`McpTools`] is one session's view: its servers, filtered by `allow_tools`/`deny_tools`, as a
//! [`ToolSource`] the session asks before every model call.
//!
//! Invariants:
//! - Servers start in parallel and in the background; a model call waits for a starting server
//!   at most until its startup timeout, then goes on without its tools.
//! - A failed server's tools are absent, and the session says so once per failure (a warning);
//!   a server that recovers brings them back at the next model call.
//! - Every call is asked about through the session's editor port, behind the one permission
//!   policy (`crate::policy`): the policy decides what it can, the host asks the rest.

mod result;
mod server;
pub mod spec;
mod tool;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

pub use server::{CallError, MAX_FAILED_STARTS, STDERR_TAIL, Server, State, Status};
pub use spec::{ServerSpec, Transport};
pub use tool::McpTool;

use crate::config::{Config, Env, NetworkSettings};
use crate::exec::LiveGroups;
use crate::tools::{Tool, ToolRefresh, ToolSource};

/// The longest tool name providers accept.
const MAX_TOOL_NAME: usize = 64;

/// The host's MCP servers.
pub struct McpHub {
    groups: LiveGroups,
    servers: Mutex<HashMap<ServerSpec, Arc<Server>>>,
    /// Failed starts in a row after which a server stays failed.
    max_starts: u32,
}

impl McpHub {
    /// For sessions: a server that fails is started again ([`MAX_FAILED_STARTS`] times).
    pub fn new() -> Arc<Self> {
        Self::with_max_starts(MAX_FAILED_STARTS)
    }

    /// For a command that starts the servers to show them once (`agentls mcp`, `doctor`): a
    /// server that fails stays failed, so what is shown is its one attempt, not a retry caught
    /// half-way.
    pub fn one_look() -> Arc<Self> {
        Self::with_max_starts(1)
    }

    fn with_max_starts(max_starts: u32) -> Arc<Self> {
        Arc::new(Self { groups: LiveGroups::default(), servers: Mutex::default(), max_starts })
    }

    /// The MCP servers of a session with `config` in the workspace `root`: each enabled one is
    /// started in the background unless it already runs.
    pub fn session(&self, config: &Config, env: &Env, root: &Path) -> Arc<McpTools> {
        let mut entries = Vec::new();
        let network = NetworkSettings::resolve(config, env);
        let withheld = config.trust.as_ref().map(|t| &t.withheld_mcp_servers);
        for (name, layer) in config.layer.mcp_servers.iter().flatten() {
            // The user's settings for a project's server that waits for trust: listed once, below.
            let transport = layer.command.is_some() || layer.url.is_some();
            if !transport && withheld.is_some_and(|w| w.contains_key(name)) {
                continue;
            }
            let filter = ToolFilter {
                allow: layer.allow_tools.clone(),
                deny: layer.deny_tools.clone().unwrap_or_default(),
            };
            let kind = if layer.enabled == Some(false) {
                EntryKind::Disabled
            } else {
                match ServerSpec::resolve(name, layer, env, root, &network) {
                    Ok(spec) => {
                        let server = self.server(spec);
                        server.ensure_started();
                        EntryKind::Server(server)
                    }
                    Err(error) => EntryKind::Invalid(error),
                }
            };
            let (describe, origin) = (layer.describe(), layer.origin.clone());
            entries.push(Entry { name: name.clone(), describe, origin, kind, filter });
        }
        for (name, layer) in config.trust.iter().flat_map(|t| &t.withheld_mcp_servers) {
            let (describe, origin) = (layer.describe(), layer.origin.clone());
            let filter = ToolFilter::default();
            entries.push(Entry { name: name.clone(), describe, origin, kind: EntryKind::NeedsTrust, filter });
        }
        Arc::new(McpTools { entries: entries.into(), seen: Mutex::new(None), told: Arc::default() })
    }

    fn server(&self, spec: ServerSpec) -> Arc<Server> {
        let mut servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(
            servers
                .entry(spec.clone())
                .or_insert_with(|| Server::new(spec, self.groups.clone(), self.max_starts)),
        )
    }

    /// Stops every server (their programs are ended).
    pub async fn shutdown(&self) {
        let servers: Vec<Arc<Server>> =
            self.servers.lock().unwrap_or_else(|p| p.into_inner()).drain().map(|(_, s)| s).collect();
        futures::future::join_all(servers.iter().map(|s| s.stop())).await;
        self.groups.terminate_all().await;
    }
}

/// Which of a server's tools a session offers.
#[derive(Debug, Clone, Default)]
struct ToolFilter {
    allow: Option<Vec<String>>,
    deny: Vec<String>,
}

impl ToolFilter {
    fn offers(&self, tool: &str) -> bool {
        self.allow.as_ref().is_none_or(|a| a.iter().any(|t| t == tool))
            && !self.deny.iter().any(|t| t == tool)
    }
}

/// A configured server as a session sees it.
pub struct Entry {
    pub name: String,
    /// The command line or URL.
    pub describe: String,
    /// The file that configures it.
    pub origin: Option<std::path::PathBuf>,
    pub kind: EntryKind,
    filter: ToolFilter,
}

/// Where a configured server stands, as hosts show it (`agentls mcp list`, `agentls.mcpServers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryState {
    Starting,
    Running,
    /// Its last start failed or it stopped; a restart may be pending.
    Failed,
    /// Stopped by the host.
    Stopped,
    /// `enabled = false`.
    Disabled,
    /// A project's server in a folder the user has not trusted.
    NeedsTrust,
    /// It cannot start as configured.
    Invalid,
}

impl EntryState {
    /// As a person reads it: `running`, `needs trust`, …
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
            Self::Disabled => "disabled",
            Self::NeedsTrust => "needs trust",
            Self::Invalid => "invalid",
        }
    }
}

impl From<State> for EntryState {
    fn from(state: State) -> Self {
        match state {
            State::Starting => Self::Starting,
            State::Running => Self::Running,
            State::Failed => Self::Failed,
            State::Stopped => Self::Stopped,
        }
    }
}

pub enum EntryKind {
    Server(Arc<Server>),
    /// `enabled = false`.
    Disabled,
    /// A project's server in a folder the user has not trusted.
    NeedsTrust,
    /// It cannot start as configured (a variable it names is not set, …).
    Invalid(String),
}

impl Entry {
    pub fn state(&self) -> EntryState {
        match &self.kind {
            EntryKind::Server(server) => server.status().state.into(),
            EntryKind::Disabled => EntryState::Disabled,
            EntryKind::NeedsTrust => EntryState::NeedsTrust,
            EntryKind::Invalid(_) => EntryState::Invalid,
        }
    }

    /// The server's tools this session offers, with the server's own descriptions.
    pub fn tools(&self) -> Vec<rmcp::model::Tool> {
        match &self.kind {
            EntryKind::Server(server) => {
                server.tools().1.iter().filter(|t| self.filter.offers(&t.name)).cloned().collect()
            }
            _ => Vec::new(),
        }
    }

    pub fn last_error(&self) -> Option<String> {
        match &self.kind {
            EntryKind::Server(server) => server.status().last_error,
            EntryKind::Invalid(error) => Some(error.clone()),
            _ => None,
        }
    }
}

/// What a session was last told of a server.
#[derive(Debug, Clone, Default, PartialEq)]
struct Told {
    /// The server's failure count then.
    failures: u64,
    /// That its tools are not offered.
    unavailable: bool,
    /// The error told for a server that cannot start as configured.
    invalid: Option<String>,
}

/// One session's MCP servers.
pub struct McpTools {
    /// Shared with the session's subagents.
    entries: Arc<[Entry]>,
    /// The tool generations of the servers when the session last took their tools.
    seen: Mutex<Option<Vec<u64>>>,
    /// What the session tree was last told of each server (its subagents share it: a failure
    /// is told once, not once per agent).
    told: Arc<Mutex<BTreeMap<String, Told>>>,
}

impl McpTools {
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    fn servers(&self) -> impl Iterator<Item = &Arc<Server>> {
        self.entries.iter().filter_map(|e| match &e.kind {
            EntryKind::Server(server) => Some(server),
            _ => None,
        })
    }

    /// Waits until no server is starting, each at most until its startup timeout.
    pub async fn wait_started(&self) {
        futures::future::join_all(self.servers().map(|s| s.wait_started())).await;
    }

    /// The tools of every running server, under collision-free names.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut taken = std::collections::HashSet::new();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for entry in self.entries.iter() {
            let EntryKind::Server(server) = &entry.kind else { continue };
            for info in entry.tools() {
                let name = unique(tool_name(&entry.name, &info.name), &mut taken);
                tools.push(Arc::new(McpTool::new(name, Arc::clone(server), &info)));
            }
        }
        tools
    }

    /// The prompts of every running server (`prompts/list`), each with its server's name and
    /// the server, once no server is starting; a server whose listing fails is left out (logged).
    pub async fn prompts(&self) -> Vec<(String, Arc<Server>, rmcp::model::Prompt)> {
        self.wait_started().await;
        let mut prompts = Vec::new();
        for entry in self.entries.iter() {
            let EntryKind::Server(server) = &entry.kind else { continue };
            match server.prompts().await {
                Ok(listed) => {
                    prompts.extend(listed.into_iter().map(|p| (entry.name.clone(), Arc::clone(server), p)))
                }
                Err(e) => tracing::warn!(server = %entry.name, "{e}"),
            }
        }
        prompts
    }

    /// What the user has not been told yet: servers that failed (once per failure), that did
    /// not start in time, that cannot start as configured, and that run again.
    fn news(&self) -> Vec<String> {
        let mut told = self.told.lock().unwrap_or_else(|p| p.into_inner());
        let mut news = Vec::new();
        for entry in self.entries.iter() {
            let seen = told.entry(entry.name.clone()).or_default();
            match &entry.kind {
                EntryKind::Server(server) => {
                    let status = server.status();
                    let running = status.state == State::Running;
                    if status.failures > seen.failures {
                        let error = status.last_error.unwrap_or_else(|| "it failed".into());
                        let now = if running {
                            "it was restarted and runs again"
                        } else {
                            "its tools are not offered until it runs again"
                        };
                        news.push(format!("MCP server `{}` is not available ({error}); {now}", entry.name));
                        seen.failures = status.failures;
                        seen.unavailable = !running;
                    } else if running && seen.unavailable {
                        news.push(format!("MCP server `{}` is running again", entry.name));
                        seen.unavailable = false;
                    } else if status.overdue && !seen.unavailable {
                        news.push(format!(
                            "MCP server `{}` is not available (it did not start within {} ms); its tools are offered \
                             once it runs",
                            entry.name,
                            server.spec().startup_timeout.as_millis()
                        ));
                        seen.unavailable = true;
                    }
                }
                EntryKind::Invalid(error) if seen.invalid.as_ref() != Some(error) => {
                    news.push(format!("MCP server `{}` cannot start: {error}", entry.name));
                    seen.invalid = Some(error.clone());
                }
                _ => {}
            }
        }
        news
    }
}

#[async_trait]
impl ToolSource for McpTools {
    fn for_child(&self) -> Arc<dyn ToolSource> {
        Arc::new(McpTools {
            entries: Arc::clone(&self.entries),
            seen: Mutex::new(None),
            told: Arc::clone(&self.told),
        })
    }

    async fn refresh(&self) -> ToolRefresh {
        self.wait_started().await;
        futures::future::join_all(self.servers().map(|s| s.refresh_tools())).await;
        let generations: Vec<u64> = self.servers().map(|s| s.tools().0).collect();
        let changed = {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            let changed = seen.as_ref() != Some(&generations);
            *seen = Some(generations);
            changed
        };
        ToolRefresh { tools: changed.then(|| self.tools()), warnings: self.news() }
    }
}

/// `mcp__server__tool`, with characters providers refuse replaced and shortened to 64.
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect();
    let name = format!("mcp__{server}__{clean}");
    if name.len() <= MAX_TOOL_NAME {
        return name;
    }
    // Long names keep their start and get a short hash of the whole, so two stay apart.
    let hash =
        name.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3));
    format!("{}_{:08x}", &name[..MAX_TOOL_NAME - 9], hash as u32)
}

/// `name`, or `name_2`, `name_3`, … when it is taken.
fn unique(name: String, taken: &mut std::collections::HashSet<String>) -> String {
    let mut candidate = name.clone();
    let mut n = 2;
    while !taken.insert(candidate.clone()) {
        let suffix = format!("_{n}");
        let keep = MAX_TOOL_NAME.saturating_sub(suffix.len()).min(name.len());
        candidate = format!("{}{suffix}", &name[..keep]);
        n += 1;
    }
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_valid_everywhere_and_never_collide() {
        assert_eq!(tool_name("github", "create_issue"), "mcp__github__create_issue");
        assert_eq!(tool_name("docs", "search.v2 (beta)"), "mcp__docs__search_v2__beta_");
        let long = tool_name("server", &"x".repeat(100));
        assert_eq!(long.len(), 64);
        assert_ne!(long, tool_name("server", &"x".repeat(101)));
        let mut taken = std::collections::HashSet::new();
        assert_eq!(unique("mcp__a__b".into(), &mut taken), "mcp__a__b");
        assert_eq!(unique("mcp__a__b".into(), &mut taken), "mcp__a__b_2");
        assert_eq!(unique("mcp__a__b".into(), &mut taken), "mcp__a__b_3");
    }

    #[test]
    fn filters_allow_then_deny() {
        let filter = ToolFilter { allow: Some(vec!["a".into(), "b".into()]), deny: vec!["b".into()] };
        assert!(filter.offers("a") && !filter.offers("b") && !filter.offers("c"));
        assert!(ToolFilter::default().offers("anything"));
    }
}
