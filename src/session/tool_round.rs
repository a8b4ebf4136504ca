//! One round of tool calls: the calls of a model step run through the registry with the
//! session's limits, reported as `tool_call_start`/`tool_call_end` events, answered as results.
//!
//! Invariants:
//! - Every call gets exactly one result, in call order, whatever happens (unknown tool, bad
//!   arguments, a failing or cancelled tool): the history stays valid for every provider.
//! - Events carry the full output; results carry what the model receives (truncated in the
//!   registry, by the session's limits of the round).
//! - A call is described by the tool it runs ([`Tool::summary`](crate::tools::Tool::summary)).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::events::{CallOutcome, CallStatus, CallSummary, Emitter, EventData, ToolCallEnd, ToolCallStart};
use super::{SessionConfig, lock};
use crate::exec::ShellLimits;
use crate::llm::{self, ToolCall, ToolDefinition, ToolResult};
use crate::profiles::ProfileKind;
use crate::tools::registry::{BatchEvent, BatchMode, ToolCallOutcome, ToolRegistry};
use crate::tools::truncate::TruncationPolicy;
use crate::tools::{ModelAccess, TaskEnd, Tool, ToolContext};
use crate::workspace::ReadTracker;

/// What a round produced.
#[derive(Debug)]
pub(super) struct Round {
    /// One per call, in call order.
    pub results: Vec<ToolResult>,
    /// A call ended the task (code mode's `return`, `AgentError`).
    pub task_end: Option<TaskEnd>,
}

/// Runs a session's tool rounds.
pub(super) struct ToolRound {
    registry: ToolRegistry,
    /// What every call's context starts from (the session's environment, workspace, editor).
    template: ToolContext,
    profile: ProfileKind,
    events: Emitter,
    /// The names of the tools a tool source added (MCP servers').
    source_tools: Vec<String>,
}

impl ToolRound {
    pub(super) fn new(
        registry: ToolRegistry,
        template: ToolContext,
        profile: ProfileKind,
        events: Emitter,
    ) -> Self {
        Self { registry, template, profile, events, source_tools: Vec::new() }
    }

    /// Replaces the tools a tool source added with `tools`; a source never replaces a tool of
    /// the profile.
    pub(super) fn replace_source_tools(&mut self, tools: Vec<Arc<dyn Tool>>) {
        for name in self.source_tools.drain(..) {
            self.registry.unregister(&name);
        }
        for tool in tools {
            if self.registry.get(tool.name()).is_none() {
                self.source_tools.push(tool.name().to_string());
                self.registry.register(tool);
            }
        }
    }

    /// The tools' definitions for the model, in registration order.
    pub(super) fn definitions(&self) -> Vec<ToolDefinition> {
        self.registry.definitions()
    }

    /// The session's working directory.
    pub(super) fn cwd(&self) -> &std::path::Path {
        &self.template.cwd
    }

    /// The files the calls read or edited so far.
    pub(super) fn reads(&self) -> &ReadTracker {
        &self.template.reads
    }

    /// What the calls run in (its processes are the session's).
    pub(super) fn environment(&self) -> &dyn crate::exec::ExecutionEnvironment {
        self.template.env.as_ref()
    }

    /// The call summaries an assistant reply announces.
    pub(super) fn summaries(&self, calls: &[ToolCall]) -> Vec<CallSummary> {
        calls
            .iter()
            .map(|c| CallSummary {
                call_id: c.id.clone(),
                tool_name: c.name.clone(),
                summary: self.summary(c),
            })
            .collect()
    }

    fn summary(&self, call: &ToolCall) -> String {
        self.registry.summary(&call.name, &call.arguments, &self.template.cwd)
    }

    /// Runs one round of `calls` under `config`'s limits; `model` is what tools that ask a
    /// model themselves use. Cancelled with `token`.
    pub(super) async fn run(
        &mut self,
        config: &SessionConfig,
        calls: &[ToolCall],
        model: Option<ModelAccess>,
        token: &CancellationToken,
    ) -> Round {
        self.registry.set_truncation(TruncationPolicy::new(
            config.tool_output_limits.clone(),
            config.tool_line_limits.clone(),
        ));
        let mut ctx = self.template.clone();
        ctx.shell = ShellLimits {
            default_timeout_ms: config
                .default_command_timeout_ms
                .unwrap_or_else(|| self.profile.default_shell_timeout_ms())
                .min(config.max_command_timeout_ms),
            max_timeout_ms: config.max_command_timeout_ms,
        };
        ctx.cancel = token.child_token();
        ctx.model = model;
        let mode = if config.one_call_per_step {
            BatchMode::FirstOnly
        } else if self.profile.supports_parallel_tool_calls() {
            BatchMode::Parallel
        } else {
            BatchMode::Sequential
        };
        let started: Mutex<Vec<Option<Instant>>> = Mutex::new(vec![None; calls.len()]);
        let observe = |event: BatchEvent<'_>| match event {
            BatchEvent::Started { index, call } => {
                lock(&started)[index] = Some(Instant::now());
                self.events.emit(EventData::ToolCallStart(ToolCallStart {
                    tool_name: call.name.clone(),
                    call_id: call.id.clone(),
                    summary: self.summary(call),
                    arguments: call.arguments.clone(),
                }));
            }
            BatchEvent::Finished { index, call, outcome } => {
                let duration_ms = lock(&started)[index].map_or(0, |t| t.elapsed().as_millis() as u64);
                let status = if token.is_cancelled() {
                    CallStatus::Cancelled
                } else if outcome.is_error {
                    CallStatus::Error
                } else {
                    CallStatus::Ok
                };
                let outcome = if outcome.is_error {
                    CallOutcome::Error { error: outcome.content.clone() }
                } else {
                    CallOutcome::Output {
                        output: outcome.content.clone(),
                        truncated: outcome.model_content != outcome.content,
                    }
                };
                self.events.emit(EventData::ToolCallEnd(ToolCallEnd {
                    tool_name: call.name.clone(),
                    call_id: call.id.clone(),
                    summary: self.summary(call),
                    status,
                    outcome,
                    duration_ms,
                }));
            }
        };
        let outcomes = self.registry.execute_batch(calls, &ctx, mode, &observe).await;
        let task_end = outcomes.iter().find_map(|o| o.ends_task.clone());
        let results = calls.iter().zip(outcomes).map(|(call, outcome)| result_of(call, outcome)).collect();
        Round { results, task_end }
    }
}

fn result_of(call: &ToolCall, outcome: ToolCallOutcome) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: outcome.model_content,
        is_error: outcome.is_error,
        images: outcome
            .images
            .into_iter()
            .map(|i| llm::Image { media_type: i.media_type, data: i.data })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::sync::mpsc;

    use super::*;
    use crate::config::Approval;
    use crate::exec::LocalExecutionEnvironment;
    use crate::session::Event;
    use crate::tools::glob::GlobTool;
    use crate::workspace::{DiskPort, Workspace};

    /// A round of `glob` calls in `dir`.
    fn round(dir: &std::path::Path) -> (ToolRound, mpsc::UnboundedReceiver<Event>) {
        let env: Arc<dyn crate::exec::ExecutionEnvironment> = Arc::new(LocalExecutionEnvironment::new(dir));
        let template = ToolContext {
            env: env.clone(),
            workspace: Arc::new(Workspace::default()),
            editor: Arc::new(DiskPort::new(env, Approval::Auto)),
            reads: Arc::new(ReadTracker::new()),
            cwd: dir.to_path_buf(),
            call_id: String::new(),
            shell: ShellLimits::default(),
            cancel: CancellationToken::new(),
            model: None,
            output: None,
            agents: None,
        };
        let mut registry = ToolRegistry::new();
        registry.register(Arc::new(GlobTool));
        let (tx, rx) = mpsc::unbounded_channel();
        (ToolRound::new(registry, template, ProfileKind::OpenAi, Emitter::new("s".into(), tx)), rx)
    }

    fn dir_with_a_file() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("notes.txt"), "x").expect("write");
        dir
    }

    /// The end event of each call, by call id, after checking each started before it ended.
    fn ends(rx: &mut mpsc::UnboundedReceiver<Event>) -> Vec<ToolCallEnd> {
        let mut started = Vec::new();
        let mut ended = Vec::new();
        while let Ok(event) = rx.try_recv() {
            match event.data {
                EventData::ToolCallStart(start) => started.push(start.call_id),
                EventData::ToolCallEnd(end) => {
                    assert!(started.contains(&end.call_id), "{} ended before it started", end.call_id);
                    ended.push(end);
                }
                other => panic!("a round tells only of its calls: {other:?}"),
            }
        }
        ended.sort_by(|a, b| a.call_id.cmp(&b.call_id));
        ended
    }

    #[tokio::test]
    async fn every_call_gets_one_result_in_call_order_whatever_became_of_it() {
        let dir = dir_with_a_file();
        let (mut round, mut events) = round(dir.path());
        let calls = [
            ToolCall::from_text("c1", "glob", r#"{"pattern": "*.txt"}"#),
            ToolCall::from_text("c2", "glob", r#"{"pattern": "#),
            ToolCall::from_text("c3", "nope", "{}"),
        ];
        let done = round.run(&SessionConfig::default(), &calls, None, &CancellationToken::new()).await;
        let told: Vec<(&str, bool)> = done.results.iter().map(|r| (r.call_id.as_str(), r.is_error)).collect();
        assert_eq!(told, [("c1", false), ("c2", true), ("c3", true)]);
        assert!(done.results[0].content.contains("notes.txt"), "{}", done.results[0].content);
        assert!(done.results[1].content.contains("not valid JSON"), "{}", done.results[1].content);
        assert!(done.results[2].content.starts_with("Unknown tool: nope"), "{}", done.results[2].content);
        assert_eq!(done.task_end, None);
        let ends = ends(&mut events);
        assert_eq!(ends.len(), 3);
        assert_eq!(ends[0].summary, "glob *.txt", "the tool describes its own calls");
        let output = done.results[0].content.clone();
        assert_eq!(ends[0].outcome, CallOutcome::Output { output, truncated: false });
        assert_eq!(ends[1].status, CallStatus::Error);
    }

    #[tokio::test]
    async fn the_model_gets_the_output_cut_to_the_rounds_limits_and_the_events_all_of_it() {
        let dir = dir_with_a_file();
        let (mut round, mut events) = round(dir.path());
        let calls = [ToolCall::from_text("c1", "glob", r#"{"pattern": "*.txt"}"#)];
        let config =
            SessionConfig { tool_output_limits: [("glob".to_string(), 4)].into(), ..Default::default() };
        let done = round.run(&config, &calls, None, &CancellationToken::new()).await;
        assert!(done.results[0].content.contains("[WARNING: Tool output was truncated."));
        let [end] = ends(&mut events).try_into().expect("one call");
        let CallOutcome::Output { output, truncated: true } = end.outcome else {
            panic!("{:?}", end.outcome)
        };
        assert!(output.contains("notes.txt"), "{output}");
    }

    #[tokio::test]
    async fn one_call_per_step_runs_the_first_and_answers_the_others() {
        let dir = dir_with_a_file();
        let (mut round, _events) = round(dir.path());
        let calls = [
            ToolCall::from_text("c1", "glob", r#"{"pattern": "*.txt"}"#),
            ToolCall::from_text("c2", "glob", r#"{"pattern": "*.md"}"#),
        ];
        let config = SessionConfig { one_call_per_step: true, ..Default::default() };
        let done = round.run(&config, &calls, None, &CancellationToken::new()).await;
        assert!(!done.results[0].is_error);
        assert!(done.results[1].is_error && done.results[1].content.contains("was not executed"));
        assert_eq!(round.summaries(&calls)[1].summary, "glob *.md");
    }
}
