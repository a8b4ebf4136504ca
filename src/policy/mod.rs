//! The one permission policy: whether a command the agent wants to run may run, decided the
//! same way in every host (the language server, `agentls exec`, `agentls tool`, the demo).
//!
//! [`ShellPolicy`] reads `[shell] permission` and `[shell] allow` of the layered configuration
//! (a project file can only tighten them until its folder is trusted, `config::trust`) and the
//! rules the user stored with "always allow" ([`PermissionRules`]). [`PolicedPort`] puts it in
//! front of a host's editor port, so a host only implements the question itself.
//!
//! MCP tool calls (`PermissionRequest::mcp`) are decided by `[mcp]` and `[mcp_servers.NAME]`
//! ([`McpRules`]): a tool's own rule, else its server's, else `[mcp] permission`, `ask` by
//! default; `allow_read_only` lets tools that declare `readOnlyHint` run under `ask`; "always"
//! is stored per server and tool.
//!
//! Invariants:
//! - `deny` refuses every command, code mode's Python included; `allow` runs every command;
//!   `ask` runs what an allow-rule covers and asks the host's port about the rest.
//! - The host's port is asked only for [`Verdict::Ask`]; an "always allow" answer is stored
//!   here, once, whatever the host.
//! - Allow-rules never cover a command that chains, substitutes or redirects (`rules.rs`).
//! - "Always reject" (`PermissionDecision::DenyAlways`, ACP's `reject_always`) is kept for the
//!   session, in memory: a later command that starts with the refused command's rule (its first
//!   two words), or a later call of the same MCP tool, is refused without asking. The host's
//!   tools only ever see a plain `Deny`.

pub mod rules;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

pub use rules::{PermissionRules, RulesError, prefix_allows, rule_for};

use std::collections::BTreeMap;

use crate::config::{Config, ShellLayer, ShellPermission};
use crate::workspace::{
    ChangeOutcome, ChangeSet, EditorPort, PermissionDecision, PermissionRequest, PortError,
};

/// The tool of code mode, whose calls run Python code: they follow `deny` and otherwise run,
/// since running the model's code is what the `code` profile is chosen for.
const CODE_TOOL: &str = "python";

/// What the policy says of one request before anyone is asked.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Allow,
    /// Refused; the text tells the model why and the user how to change it.
    Deny(String),
    /// The host asks the user.
    Ask,
}

/// The shell permission of one session.
#[derive(Debug, Clone)]
pub struct ShellPolicy {
    mode: ShellPermission,
    /// Command prefixes that run without asking (`[shell] allow`).
    allow: Vec<String>,
    /// The folder stored rules are kept under.
    root: PathBuf,
    rules: Arc<PermissionRules>,
    mcp: McpRules,
    /// What the user refused "always" in this session: command rules and `server/tool` keys.
    refused: Arc<std::sync::Mutex<Vec<Refused>>>,
}

/// One "always reject" answer of this session.
#[derive(Debug, Clone, PartialEq)]
enum Refused {
    /// Commands whose words start with these.
    Command(String),
    Mcp {
        server: String,
        tool: String,
    },
}

impl Refused {
    fn of(request: &PermissionRequest) -> Self {
        match &request.mcp {
            Some(call) => Self::Mcp { server: call.server.clone(), tool: call.tool.clone() },
            None => Self::Command(rule_for(&request.command)),
        }
    }

    fn covers(&self, request: &PermissionRequest) -> bool {
        match (self, &request.mcp) {
            (Self::Mcp { server, tool }, Some(call)) => *server == call.server && *tool == call.tool,
            (Self::Command(rule), None) => {
                let words: Vec<&str> = rule.split_whitespace().collect();
                let command: Vec<&str> = request.command.split_whitespace().collect();
                !words.is_empty() && command.len() >= words.len() && command[..words.len()] == words[..]
            }
            _ => false,
        }
    }
}

/// What the configuration says of MCP tool calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpRules {
    /// `[mcp] permission` (default ask).
    default: Option<ShellPermission>,
    /// `[mcp] allow_read_only`.
    allow_read_only: bool,
    /// Per server: its `permission` and its `tool_permissions`.
    servers: BTreeMap<String, (Option<ShellPermission>, BTreeMap<String, ShellPermission>)>,
}

impl McpRules {
    pub fn from_config(config: &Config) -> Self {
        let mcp = config.mcp();
        let servers = config
            .layer
            .mcp_servers
            .iter()
            .flatten()
            .map(|(name, s)| (name.clone(), (s.permission, s.tool_permissions.clone().unwrap_or_default())))
            .collect();
        Self { default: mcp.permission, allow_read_only: mcp.allow_read_only.unwrap_or(false), servers }
    }

    /// The configured permission of `tool` of `server`, and the key that sets it.
    fn permission(&self, server: &str, tool: &str) -> (ShellPermission, String) {
        let own = self.servers.get(server);
        if let Some(permission) = own.and_then(|(_, tools)| tools.get(tool)) {
            return (*permission, format!("mcp_servers.{server}.tool_permissions.{tool}"));
        }
        if let Some(permission) = own.and_then(|(permission, _)| *permission) {
            return (permission, format!("mcp_servers.{server}.permission"));
        }
        (self.default.unwrap_or(ShellPermission::Ask), "mcp.permission".into())
    }
}

impl ShellPolicy {
    pub fn new(shell: &ShellLayer, root: PathBuf, rules: Arc<PermissionRules>) -> Self {
        Self {
            mode: shell.permission.unwrap_or(ShellPermission::Ask),
            allow: shell.allow.clone().unwrap_or_default(),
            root,
            rules,
            mcp: McpRules::default(),
            refused: Arc::default(),
        }
    }

    /// The same policy deciding MCP calls by `mcp`.
    pub fn with_mcp(mut self, mcp: McpRules) -> Self {
        self.mcp = mcp;
        self
    }

    pub fn mode(&self) -> ShellPermission {
        self.mode
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Decides `request` from the settings and the stored rules alone.
    pub fn verdict(&self, request: &PermissionRequest) -> Verdict {
        let refused = self
            .refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|r| r.covers(request))
            .cloned();
        if let Some(refused) = refused {
            let what = match refused {
                Refused::Command(rule) => format!("commands starting with `{rule}`"),
                Refused::Mcp { server, tool } => format!("the tool `{tool}` of the MCP server `{server}`"),
            };
            return Verdict::Deny(format!(
                "The user refused {what} for the rest of this session; nothing was run. Do the task another way."
            ));
        }
        if let Some(call) = &request.mcp {
            let (permission, key) = self.mcp.permission(&call.server, &call.tool);
            return match permission {
                ShellPermission::Deny => Verdict::Deny(format!(
                    "The tool `{}` of the MCP server `{}` is disabled by the user's permission policy ({key} = \
                     \"deny\"); nothing was called. Do the task without it.",
                    call.tool, call.server
                )),
                ShellPermission::Allow => Verdict::Allow,
                ShellPermission::Ask if call.read_only_hint && self.mcp.allow_read_only => Verdict::Allow,
                ShellPermission::Ask if self.rules.allows_mcp(&self.root, &call.server, &call.tool) => {
                    Verdict::Allow
                }
                ShellPermission::Ask => Verdict::Ask,
            };
        }
        match self.mode {
            ShellPermission::Deny => {
                let what = if request.tool_name == CODE_TOOL { "Running code" } else { "Shell commands" };
                return Verdict::Deny(format!(
                    "{what} is disabled by the user's permission policy (shell.permission = \"deny\"); \
                     nothing was run. Do the task without running commands, or tell the user what to run."
                ));
            }
            ShellPermission::Allow => return Verdict::Allow,
            ShellPermission::Ask => {}
        }
        if request.tool_name == CODE_TOOL
            || self.allow.iter().any(|p| prefix_allows(p, &request.command))
            || self.rules.allows(&self.root, &request.command)
        {
            return Verdict::Allow;
        }
        Verdict::Ask
    }

    /// Refuses requests like `request` for the rest of the session ("always reject").
    pub fn refuse(&self, request: &PermissionRequest) {
        let refused = Refused::of(request);
        tracing::info!("refusing {refused:?} for the rest of the session");
        self.refused.lock().unwrap_or_else(|p| p.into_inner()).push(refused);
    }

    /// Stores "always allow" for `request` in this folder: a command's rule (its first two
    /// words), or an MCP call's server and tool.
    pub fn remember(&self, request: &PermissionRequest) {
        if let Some(call) = &request.mcp {
            match self.rules.add_mcp(&self.root, &call.server, &call.tool) {
                Ok(()) => tracing::info!("always allowing MCP tool {} of {}", call.tool, call.server),
                Err(e) => tracing::warn!("cannot store the MCP allow-rule: {e}"),
            }
            return;
        }
        let rule = rule_for(&request.command);
        match self.rules.add(&self.root, &rule) {
            Ok(()) => tracing::info!("always allowing `{rule}` in {}", self.root.display()),
            Err(e) => tracing::warn!("cannot store the allow-rule `{rule}`: {e}"),
        }
    }
}

/// A host's editor port behind the policy: permission questions reach the host only when the
/// policy asks; everything else passes through.
pub struct PolicedPort {
    host: Arc<dyn EditorPort>,
    policy: ShellPolicy,
}

impl PolicedPort {
    pub fn new(host: Arc<dyn EditorPort>, policy: ShellPolicy) -> Self {
        Self { host, policy }
    }
}

#[async_trait]
impl EditorPort for PolicedPort {
    async fn propose(&self, change: ChangeSet) -> Result<ChangeOutcome, PortError> {
        self.host.propose(change).await
    }

    async fn ask_permission(&self, request: PermissionRequest) -> PermissionDecision {
        match self.policy.verdict(&request) {
            Verdict::Allow => PermissionDecision::AllowOnce,
            Verdict::Deny(reason) => PermissionDecision::Deny { feedback: Some(reason) },
            Verdict::Ask => {
                let asked = request.clone();
                match self.host.ask_permission(request).await {
                    PermissionDecision::AllowAlways => {
                        self.policy.remember(&asked);
                        PermissionDecision::AllowAlways
                    }
                    PermissionDecision::DenyAlways { feedback } => {
                        self.policy.refuse(&asked);
                        PermissionDecision::Deny { feedback }
                    }
                    decision => decision,
                }
            }
        }
    }

    async fn save(&self, paths: &[PathBuf]) -> Result<(), PortError> {
        self.host.save(paths).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A host that records what it was asked and answers `answer`.
    struct Host {
        asked: Mutex<Vec<String>>,
        answer: PermissionDecision,
    }

    #[async_trait]
    impl EditorPort for Host {
        async fn propose(&self, _: ChangeSet) -> Result<ChangeOutcome, PortError> {
            Err(PortError("not in this test".into()))
        }
        async fn ask_permission(&self, request: PermissionRequest) -> PermissionDecision {
            self.asked.lock().unwrap().push(request.command);
            self.answer.clone()
        }
        async fn save(&self, _: &[PathBuf]) -> Result<(), PortError> {
            Ok(())
        }
    }

    fn request(tool: &str, command: &str) -> PermissionRequest {
        PermissionRequest {
            call_id: "c1".into(),
            tool_name: tool.into(),
            command: command.into(),
            cwd: PathBuf::from("/w"),
            mcp: None,
        }
    }

    fn policy(mode: ShellPermission, allow: &[&str], rules: Arc<PermissionRules>) -> ShellPolicy {
        let shell = ShellLayer {
            permission: Some(mode),
            allow: Some(allow.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        };
        ShellPolicy::new(&shell, PathBuf::from("/w"), rules)
    }

    #[test]
    fn each_mode_decides_before_anyone_is_asked() {
        let rules = Arc::new(PermissionRules::open(None));
        let ask = policy(ShellPermission::Ask, &["cargo test"], rules.clone());
        assert_eq!(ask.verdict(&request("shell", "cargo test --all")), Verdict::Allow);
        assert_eq!(ask.verdict(&request("shell", "cargo test; rm -rf ~")), Verdict::Ask);
        assert_eq!(ask.verdict(&request("shell", "rm -rf build")), Verdict::Ask);
        assert_eq!(ask.verdict(&request("python", "print(1)")), Verdict::Allow);
        let allow = policy(ShellPermission::Allow, &[], rules.clone());
        assert_eq!(allow.verdict(&request("shell", "rm -rf build")), Verdict::Allow);
        let deny = policy(ShellPermission::Deny, &["cargo test"], rules);
        for tool in ["shell", "python"] {
            let Verdict::Deny(reason) = deny.verdict(&request(tool, "cargo test")) else { panic!("{tool}") };
            assert!(reason.contains("shell.permission = \"deny\""), "{reason}");
        }
    }

    fn mcp_request(server: &str, tool: &str, read_only_hint: bool) -> PermissionRequest {
        PermissionRequest {
            mcp: Some(crate::workspace::McpCall {
                server: server.into(),
                tool: tool.into(),
                arguments: serde_json::json!({"q": 1}),
                read_only_hint,
            }),
            ..request(&format!("mcp__{server}__{tool}"), "mcp")
        }
    }

    #[test]
    fn mcp_calls_follow_tool_then_server_then_mcp_rules_never_the_shell_ones() {
        let config = crate::config::Config::defaults().overlay(
            crate::config::ConfigLayer::parse_toml(
                "[mcp]\nallow_read_only = true\n[shell]\npermission = \"allow\"\n\
                 [mcp_servers.gh]\ncommand = \"x\"\npermission = \"allow\"\ntool_permissions = { delete = \"deny\" }\n\
                 [mcp_servers.docs]\nurl = \"http://h\"\n",
                Path::new("t.toml"),
            )
            .unwrap(),
        );
        let rules = Arc::new(PermissionRules::open(None));
        let policy = ShellPolicy::new(&config.shell(), PathBuf::from("/w"), rules.clone())
            .with_mcp(McpRules::from_config(&config));
        assert_eq!(policy.verdict(&mcp_request("gh", "search", false)), Verdict::Allow);
        let Verdict::Deny(reason) = policy.verdict(&mcp_request("gh", "delete", true)) else { panic!() };
        assert!(reason.contains("mcp_servers.gh.tool_permissions.delete = \"deny\""), "{reason}");
        assert_eq!(
            policy.verdict(&mcp_request("docs", "write", false)),
            Verdict::Ask,
            "shell's allow does not count"
        );
        assert_eq!(policy.verdict(&mcp_request("docs", "read", true)), Verdict::Allow, "allow_read_only");
        rules.add_mcp(Path::new("/w"), "docs", "write").unwrap();
        assert_eq!(policy.verdict(&mcp_request("docs", "write", false)), Verdict::Allow, "a stored rule");
        assert_eq!(policy.verdict(&mcp_request("docs", "other", false)), Verdict::Ask);
        assert!(!rules.allows(Path::new("/w"), "docs/write"), "MCP rules are no command prefixes");
    }

    #[tokio::test]
    async fn always_reject_refuses_the_rule_for_the_session_and_the_tools_see_a_plain_deny() {
        let rules = Arc::new(PermissionRules::open(None));
        let host = Arc::new(Host {
            asked: Mutex::new(Vec::new()),
            answer: PermissionDecision::DenyAlways { feedback: Some("no".into()) },
        });
        let port = PolicedPort::new(host.clone(), policy(ShellPermission::Ask, &[], rules));
        assert_eq!(
            port.ask_permission(request("shell", "rm -rf build")).await,
            PermissionDecision::Deny { feedback: Some("no".into()) }
        );
        let PermissionDecision::Deny { feedback: Some(reason) } =
            port.ask_permission(request("shell", "rm -rf target; ls")).await
        else {
            panic!("refused without asking")
        };
        assert!(reason.contains("`rm -rf`"), "{reason}");
        assert_eq!(port.ask_permission(request("shell", "rm x")).await.denied(), Some(Some("no".into())));
        assert_eq!(*host.asked.lock().unwrap(), vec!["rm -rf build".to_string(), "rm x".to_string()]);
    }

    #[tokio::test]
    async fn the_host_is_asked_only_when_the_policy_asks_and_always_is_stored_once() {
        let dir = tempfile::tempdir().unwrap();
        let rules = Arc::new(PermissionRules::open(Some(dir.path())));
        let host = Arc::new(Host { asked: Mutex::new(Vec::new()), answer: PermissionDecision::AllowAlways });
        let port = PolicedPort::new(host.clone(), policy(ShellPermission::Ask, &["ls"], rules.clone()));
        assert_eq!(port.ask_permission(request("shell", "ls -la")).await, PermissionDecision::AllowOnce);
        assert_eq!(
            port.ask_permission(request("shell", "make check")).await,
            PermissionDecision::AllowAlways
        );
        assert_eq!(
            port.ask_permission(request("shell", "make check -j2")).await,
            PermissionDecision::AllowOnce
        );
        assert_eq!(*host.asked.lock().unwrap(), vec!["make check".to_string()]);
        assert!(PermissionRules::open(Some(dir.path())).allows(Path::new("/w"), "make check -j2"));
    }
}
