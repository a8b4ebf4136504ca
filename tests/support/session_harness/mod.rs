//! A session wired to the loopback mock provider, for the session, parity and exec tests: real
//! HTTP on 127.0.0.1, real files in a temporary directory, real tools.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentls::config::{Approval, ProviderKind, ProviderSettings, Secret};
use agentls::exec::{ExecutionEnvironment, LocalExecutionEnvironment};
use agentls::llm::{Client, RetryPolicy};
use agentls::profiles::ProfileKind;
use agentls::session::{
    self, AgentInfo, Event, EventKind, SessionConfig, SessionHandle, SessionOptions, SessionState, Turn,
};
use agentls::tools::Tool;
use agentls::workspace::{DiskPort, Workspace};
use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::mpsc::UnboundedReceiver;

pub mod calls;
pub mod recording_env;
pub mod tools;

use crate::support::mock_provider::{Dialect, MockProvider, RecordedRequest};

/// Guards against hangs only; no test asserts on timing.
pub const PATIENCE: Duration = Duration::from_secs(60);

pub fn dialect(profile: ProfileKind) -> Dialect {
    match profile {
        ProfileKind::OpenAi => Dialect::OpenAiResponses,
        ProfileKind::Anthropic | ProfileKind::Code => Dialect::Anthropic,
        ProfileKind::Gemini => Dialect::Gemini,
    }
}

pub fn provider(profile: ProfileKind) -> ProviderKind {
    match profile {
        ProfileKind::OpenAi => ProviderKind::OpenAi,
        ProfileKind::Anthropic | ProfileKind::Code => ProviderKind::Anthropic,
        ProfileKind::Gemini => ProviderKind::Gemini,
    }
}

pub fn model(profile: ProfileKind) -> &'static str {
    provider(profile).default_model()
}

pub type WrapEnv = Box<dyn FnOnce(Arc<dyn ExecutionEnvironment>) -> Arc<dyn ExecutionEnvironment> + Send>;

/// How a test session is set up.
pub struct Setup {
    pub profile: ProfileKind,
    /// Whether the profile's own tool set is offered.
    pub profile_tools: bool,
    /// Extra tools, registered after the profile's (latest wins).
    pub tools: Vec<Arc<dyn Tool>>,
    pub config: SessionConfig,
    pub files: Vec<(&'static str, String)>,
    /// Make the directory a git repository.
    pub git: bool,
    pub approval: Approval,
    /// Wraps the local environment (e.g. to record what tools ask of it).
    pub wrap_env: Option<WrapEnv>,
    /// The turns of a resumed session.
    pub history: Vec<Turn>,
    /// A resumed session's subagents.
    pub agents: Vec<(AgentInfo, Vec<Turn>)>,
    /// The directory to work in (a resumed session's); a new temporary one when `None`.
    pub dir: Option<TempDir>,
    /// The wire dialect of the mock provider; `None` = the profile's own.
    pub dialect: Option<Dialect>,
}

impl Setup {
    pub fn new(profile: ProfileKind) -> Self {
        let config = SessionConfig { model: model(profile).to_string(), ..SessionConfig::default() };
        Self {
            profile,
            profile_tools: true,
            tools: Vec::new(),
            config,
            files: Vec::new(),
            git: false,
            approval: Approval::Auto,
            wrap_env: None,
            history: Vec::new(),
            agents: Vec::new(),
            dir: None,
            dialect: None,
        }
    }

    pub fn without_profile_tools(mut self) -> Self {
        self.profile_tools = false;
        self
    }

    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    pub fn file(mut self, path: &'static str, content: impl Into<String>) -> Self {
        self.files.push((path, content.into()));
        self
    }

    pub fn config(mut self, edit: impl FnOnce(&mut SessionConfig)) -> Self {
        edit(&mut self.config);
        self
    }
}

pub struct Harness {
    pub mock: MockProvider,
    pub handle: SessionHandle,
    pub events: UnboundedReceiver<Event>,
    pub dir: TempDir,
    /// Every event received so far.
    pub seen: Vec<Event>,
}

pub fn run_git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git").args(args).current_dir(dir).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

impl Harness {
    pub async fn start(setup: Setup) -> Self {
        let wire = setup.dialect.unwrap_or_else(|| dialect(setup.profile));
        let mock = MockProvider::start(wire).await;
        let dir = match setup.dir {
            Some(dir) => dir,
            None => tempfile::tempdir().expect("tempdir"),
        };
        if setup.git {
            run_git(dir.path(), &["init", "-q", "-b", "main"]);
        }
        for (path, content) in &setup.files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
            std::fs::write(full, content).expect("write fixture");
        }
        let cwd = dir.path().canonicalize().expect("canonical tempdir");
        let kind = match wire {
            Dialect::OpenAiChat => ProviderKind::OpenAiChat,
            _ => provider(setup.profile),
        };
        let settings = ProviderSettings {
            kind,
            model: model(setup.profile).to_string(),
            base_url: mock.url(),
            api_key: Some(Secret::new("test-key-not-secret")),
            api_key_var: kind.key_vars().first().map(|v| v.to_string()),
            chosen_by: "test".into(),
            network: Default::default(),
        };
        let client = Client::new(settings).expect("client").with_retry(RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(20),
        });
        let local: Arc<dyn ExecutionEnvironment> = Arc::new(LocalExecutionEnvironment::new(cwd.clone()));
        let mut tools = if setup.profile_tools { setup.profile.tools() } else { Vec::new() };
        tools.extend(setup.tools);
        let env = match setup.wrap_env {
            Some(wrap) => wrap(local),
            None => local,
        };
        let opts = SessionOptions {
            id: None,
            profile: setup.profile,
            client,
            env: Arc::clone(&env),
            workspace: Arc::new(Workspace::default()),
            editor: Arc::new(DiskPort::new(env, setup.approval)),
            config: setup.config,
            cwd,
            history: setup.history,
            agents: setup.agents,
            tools,
            transcript: None,
            tool_source: None,
            checkpoints: None,
        };
        let (handle, events) = session::spawn(opts);
        Self { mock, handle, events, dir, seen: Vec::new() }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// Events up to and including the session's own next one of `kind` (a subagent's events,
    /// passed on through the session's stream, are collected but do not end the wait).
    pub async fn until(&mut self, kind: EventKind) -> Vec<Event> {
        let mut got = Vec::new();
        loop {
            let event = tokio::time::timeout(PATIENCE, self.events.recv())
                .await
                .unwrap_or_else(|_| panic!("no {kind:?} event; got {:#?}", kinds(&got)))
                .unwrap_or_else(|| panic!("event stream ended before {kind:?}; got {:#?}", kinds(&got)));
            self.seen.push(event.clone());
            let done = event.kind() == kind && event.is_own();
            got.push(event);
            if done {
                return got;
            }
        }
    }

    /// Submits `text` and returns the events of the processing cycle (through PROCESSING_END).
    pub async fn run(&mut self, text: &str) -> Vec<Event> {
        self.handle.submit(text.to_string());
        self.until(EventKind::ProcessingEnd).await
    }

    pub async fn close(&mut self) -> Vec<Event> {
        self.handle.close();
        let events = self.until(EventKind::SessionEnd).await;
        assert_eq!(self.handle.state(), SessionState::Closed);
        events
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.mock.requests()
    }

    /// The JSON body of request `i`.
    pub fn body(&self, i: usize) -> Value {
        let requests = self.requests();
        let r = requests.get(i).unwrap_or_else(|| panic!("only {} requests were made", requests.len()));
        r.body.clone()
    }

    /// The JSON text of request `i` (for `contains` checks).
    pub fn request_text(&self, i: usize) -> String {
        let requests = self.requests();
        let r = requests.get(i).unwrap_or_else(|| panic!("only {} requests were made", requests.len()));
        r.body.to_string()
    }
}

/// The kind of each turn of a history, in order.
pub fn turn_kinds(history: &[Turn]) -> Vec<&'static str> {
    history
        .iter()
        .map(|t| match t {
            Turn::User(_) => "user",
            Turn::Assistant(_) => "assistant",
            Turn::ToolResults(_) => "tool_results",
            Turn::System(_) => "system",
            Turn::Steering(_) => "steering",
            Turn::Instructions(_) => "instructions",
            Turn::Summary(_) => "summary",
        })
        .collect()
}

pub fn kinds(events: &[Event]) -> Vec<EventKind> {
    events.iter().map(|e| e.kind()).collect()
}

pub fn of_kind(events: &[Event], kind: EventKind) -> Vec<&Event> {
    events.iter().filter(|e| e.kind() == kind).collect()
}

pub fn reason(events: &[Event]) -> String {
    let end = events.iter().rev().find(|e| e.kind() == EventKind::ProcessingEnd).expect("processing_end");
    str_of(end, "reason")
}

/// An event's `data` as hosts receive it (the protocol's JSON).
pub fn data(event: &Event) -> Value {
    serde_json::to_value(event).expect("an event serializes")["data"].take()
}

pub fn str_of(event: &Event, key: &str) -> String {
    data(event).get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// True when process `pid` no longer runs (gone, or a zombie nobody has reaped yet).
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Polls until `pid` is gone; false if it still runs after `within`.
pub async fn wait_process_gone(pid: u32, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while !process_gone(pid) {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

/// Waits for a file holding a pid (written by a test command) and returns the pid.
pub async fn read_pid(path: &Path) -> u32 {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(tokio::time::Instant::now() < deadline, "{} never appeared", path.display());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
