//! `agentls exec`: one headless task. The answer streams to stdout (or, with `--json`, one event
//! object per line); a status line for running tool calls goes to stderr when it is a terminal.
//! A subagent's activity (its task, tool calls and answer) is printed as whole lines, indented
//! under the answer text before it; its events never end the run.
//!
//! Exit codes (stable, documented in `agentls exec --help`):
//! - 0: the model finished its answer (natural completion, or `submit` in submit mode)
//! - 1: the run failed (provider error after retries, context overflow that pruning could not fix)
//! - 2: usage error (empty prompt, bad flag, unreadable working directory or configuration)
//! - 3: no usable provider (nothing configured, missing or rejected API key, exhausted quota)
//! - 4: a turn, tool-round, step or time limit stopped the run before the model finished
//! - 130: interrupted (Ctrl-C)
//! - 143: terminated (SIGTERM); running commands are stopped first, as for Ctrl-C

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::{ExecArgs, ask};
use crate::config::{Approval, ConfigLayer, Env, ShellLayer, ShellPermission};
use crate::policy::PermissionRules;
use crate::session::{
    self, AgentPath, BuildError, CallOutcome, CallStatus, EndReason, Event, EventData, Notice,
    SessionBuilder, SessionOptions, SessionParts, TurnLimit, Warning,
};
use crate::workspace::DiskPort;
use indicatif::{ProgressBar, ProgressStyle};

pub const EXIT_OK: u8 = 0;
pub const EXIT_FAILED: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_PROVIDER: u8 = 3;
pub const EXIT_LIMIT: u8 = 4;
pub const EXIT_INTERRUPTED: u8 = 130;
pub const EXIT_TERMINATED: u8 = 143;

/// Text of `agentls exec --help` after the options.
pub const EXIT_CODES_HELP: &str = "Exit codes:
  0    the model finished its answer (or submitted it, in submit mode)
  1    the run failed (provider error after retries, context overflow)
  2    usage error (empty prompt, bad flag, unreadable directory or configuration)
  3    no usable provider (nothing configured, missing or rejected API key, exhausted quota)
  4    a turn, tool-round, step or time limit stopped the run before the model finished
  130  interrupted (Ctrl-C)
  143  terminated (SIGTERM)";

pub fn run(env: &Env, args: ExecArgs) -> ExitCode {
    match run_inner(env, args) {
        Ok(code) => ExitCode::from(code),
        Err((code, message)) => {
            eprintln!("agentls: {message}");
            ExitCode::from(code)
        }
    }
}

type Failure = (u8, String);

fn run_inner(env: &Env, args: ExecArgs) -> Result<u8, Failure> {
    let prompt = read_prompt(&args.prompt)?;
    let cwd = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .map_err(|e| (EXIT_USAGE, format!("cannot read the current directory: {e}")))?,
    };
    let cwd = cwd
        .canonicalize()
        .map_err(|e| (EXIT_USAGE, format!("working directory {} is not usable: {e}", cwd.display())))?;
    if !cwd.is_dir() {
        return Err((EXIT_USAGE, format!("working directory {} is not a directory", cwd.display())));
    }
    let mut overrides = ConfigLayer {
        approval: args.approval,
        reasoning_effort: args.reasoning_effort,
        max_turns: args.max_turns,
        profile: args.profile,
        code: args
            .return_type
            .clone()
            .map(|t| crate::config::CodeLayer { return_type: Some(t), ..Default::default() }),
        ..args.model.layer()
    };
    overrides.merge(args.agent_loop.layer());
    // A run that may not edit may not run commands either, unless --shell says otherwise.
    let shell = args.shell.or((args.approval == Some(Approval::Deny)).then_some(ShellPermission::Deny));
    if shell.is_some() || !args.allow_command.is_empty() {
        let allow = (!args.allow_command.is_empty()).then(|| args.allow_command.clone());
        overrides.shell = Some(ShellLayer { permission: shell, allow, ..Default::default() });
    }
    let builder = SessionBuilder::load(env, cwd, overrides)
        .map_err(|e| (EXIT_USAGE, e.to_string()))?
        .default_approval(Approval::Auto);
    if let Some(report) = builder.trust().and_then(|t| t.report()) {
        eprintln!("agentls: {report}");
    }
    let approval = builder.approval();
    let status = spinner(args.json);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| (EXIT_FAILED, format!("cannot start the async runtime: {e}")))?;
    let mcp = crate::mcp::McpHub::new();
    runtime.block_on(async move {
        let parts = SessionParts {
            id: None,
            profile: None,
            history: Vec::new(),
            documents: None,
            editor: ask::port(DiskPort::new(builder.environment(), approval), status.clone()),
            permission_rules: Arc::new(PermissionRules::open(crate::store::data_dir(env).as_deref())),
            extra_tools: Vec::new(),
            transcripts: None,
            mcp: Some(mcp.clone()),
            checkpoints: crate::store::data_dir(env),
        };
        let built = builder.build(parts).await.map_err(|e| {
            let code = match e {
                BuildError::Config(_) | BuildError::Busy(_) => EXIT_USAGE,
                BuildError::Provider(_) | BuildError::Client(_) => EXIT_PROVIDER,
            };
            (code, e.to_string())
        })?;
        let checkpoints = built.options.checkpoints.clone();
        let result = drive(built.options, prompt, args.json, status).await;
        mcp.shutdown().await;
        if checkpoints.is_some_and(|c| c.turns().iter().any(|t| t.changed_files())) {
            eprintln!("agentls: to undo this run's changes: agentls sessions undo {}", built.id);
        }
        result
    })
}

fn read_prompt(arg: &str) -> Result<String, Failure> {
    let text = if arg == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| (EXIT_USAGE, format!("cannot read the prompt from stdin: {e}")))?;
        text
    } else {
        arg.to_string()
    };
    if text.trim().is_empty() {
        return Err((
            EXIT_USAGE,
            "the prompt is empty; pass the task as an argument or `-` to read stdin".into(),
        ));
    }
    Ok(text)
}

/// Runs the session to the end of its first processing cycle and renders its events.
async fn drive(
    opts: SessionOptions,
    prompt: String,
    json: bool,
    status: Option<ProgressBar>,
) -> Result<u8, Failure> {
    let (handle, mut events) = session::spawn(opts);
    handle.submit(prompt);
    let mut out = Output::new(json, status);
    let mut code = EXIT_FAILED;
    // Set by the first Ctrl-C or SIGTERM: the session is closed (its commands stopped) and the
    // run ends with this code.
    let mut stopped_by: Option<u8> = None;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| (EXIT_FAILED, format!("cannot listen for SIGTERM: {e}")))?;
    loop {
        let event = tokio::select! {
            e = events.recv() => e,
            _ = &mut ctrl_c, if stopped_by.is_none() => {
                stopped_by = Some(EXIT_INTERRUPTED);
                handle.close();
                continue;
            }
            _ = terminate.recv(), if stopped_by.is_none() => {
                stopped_by = Some(EXIT_TERMINATED);
                handle.close();
                continue;
            }
        };
        let Some(event) = event else { break };
        out.render(&event);
        if !event.is_own() {
            continue;
        }
        match &event.data {
            EventData::ProcessingEnd(end) => {
                code = exit_code_for(end.reason);
                handle.close();
            }
            EventData::SessionEnd(_) => break,
            _ => {}
        }
    }
    out.finish();
    Ok(stopped_by.unwrap_or(code))
}

fn exit_code_for(reason: EndReason) -> u8 {
    match reason {
        EndReason::Completed | EndReason::Submitted => EXIT_OK,
        EndReason::TurnLimit | EndReason::RoundLimit | EndReason::StepLimit | EndReason::TimeLimit => {
            EXIT_LIMIT
        }
        EndReason::Fatal => EXIT_PROVIDER,
        EndReason::Cancelled => EXIT_INTERRUPTED,
        EndReason::Error => EXIT_FAILED,
    }
}

/// The status spinner on a terminal's stderr (none for `--json` or without a terminal).
fn spinner(json: bool) -> Option<ProgressBar> {
    (!json && std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(120));
        bar.set_message("thinking…");
        bar
    })
}

/// Where events go: answer text to stdout, status and errors to stderr.
struct Output {
    json: bool,
    status: Option<ProgressBar>,
    /// Whether the last character written to stdout ended a line.
    at_line_start: bool,
    wrote_text: bool,
    /// The status line of the tool call that started last (its live output is appended).
    running: String,
    /// The text streamed since the model's last response started.
    streamed: String,
}

impl Output {
    fn new(json: bool, status: Option<ProgressBar>) -> Self {
        Self {
            json,
            status,
            at_line_start: true,
            wrote_text: false,
            running: String::new(),
            streamed: String::new(),
        }
    }

    fn render(&mut self, event: &Event) {
        if self.json {
            let line = serde_json::to_string(event).unwrap_or_default();
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{line}");
            let _ = stdout.flush();
            return;
        }
        if let Some(agent) = &event.agent {
            return self.render_subagent(agent, &event.data);
        }
        match &event.data {
            EventData::AssistantTextStart(_) => {
                if self.wrote_text && !self.at_line_start {
                    self.write("\n");
                }
                self.streamed.clear();
                self.set_status("thinking…");
            }
            EventData::AssistantTextDelta(d) => {
                self.streamed.push_str(&d.delta);
                self.write(&d.delta);
            }
            // An answer a tool gave (code mode's `return`) was not streamed: print it.
            EventData::ProcessingEnd(end)
                if end.reason == EndReason::Completed && end.text != self.streamed =>
            {
                if self.wrote_text && !self.at_line_start {
                    self.write("\n");
                }
                self.write(&end.text);
            }
            EventData::ToolCallStart(call) => {
                self.running = format!("running {}", call.summary);
                self.set_status(&self.running);
            }
            EventData::ToolCallOutputDelta(d) => {
                if let Some(line) = d.delta.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
                    let line: String = line.chars().take(80).collect();
                    self.set_status(&format!("{} · {line}", self.running));
                }
            }
            EventData::ToolCallEnd(end) => {
                if end.status != CallStatus::Ok {
                    let error = match &end.outcome {
                        CallOutcome::Error { error } => first_line(error),
                        CallOutcome::Output { .. } => "",
                    };
                    self.note(&format!("{} ({}): {error}", end.summary, end.status.as_str()));
                }
                self.set_status("thinking…");
            }
            EventData::Warning(Warning { message, .. }) | EventData::LoopDetection(Notice { message }) => {
                self.note(&format!("warning: {message}"));
            }
            EventData::TurnLimit(limit) => self.note(&format!("warning: {}", limit_text(limit))),
            EventData::Compaction(c) => self.note(&format!(
                "compacted the conversation ({}): {} messages summarised by {}, ~{} → ~{} tokens",
                c.trigger.as_str(),
                c.messages_summarized,
                c.model,
                c.tokens_before,
                c.tokens_after
            )),
            EventData::ProcessingEnd(end) if end.reason == EndReason::Submitted => {
                if self.wrote_text && !self.at_line_start {
                    self.write("\n");
                }
                self.write(&end.text);
            }
            EventData::Error(error) => self.note(&format!("error: {}", error.message)),
            _ => {}
        }
    }

    /// A subagent's task, tool calls, answer and errors, one indented line each (its text
    /// deltas are not streamed: several subagents run at once).
    fn render_subagent(&mut self, agent: &AgentPath, data: &EventData) {
        // A subagent's session id is its parent's plus `-agent-N`.
        let depth = 1 + agent.parent_session_id.matches("-agent-").count();
        let indent = "  ".repeat(depth);
        let id = &agent.agent_id;
        let line = match data {
            EventData::UserInput(input) => format!("{indent}{id} ▸ {}", first_line(&input.content)),
            EventData::ToolCallStart(call) => format!("{indent}  {id} · {}", call.summary),
            EventData::ToolCallEnd(end) if end.status != CallStatus::Ok => {
                format!("{indent}  {id} · {} ({})", end.summary, end.status.as_str())
            }
            EventData::ProcessingEnd(end) => {
                let text = end.text.trim();
                let mut line = format!("{indent}{id} {}:", end.reason.as_str());
                for l in text.lines() {
                    line.push_str(&format!("\n{indent}  {l}"));
                }
                line
            }
            EventData::Error(error) => format!("{indent}  {id} error: {}", first_line(&error.message)),
            _ => return,
        };
        if !self.at_line_start {
            self.write("\n");
        }
        self.write(&format!("{line}\n"));
    }

    fn write(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let print = || {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(text.as_bytes());
            let _ = stdout.flush();
        };
        match &self.status {
            Some(bar) => bar.suspend(print),
            None => print(),
        }
        self.at_line_start = text.ends_with('\n');
        self.wrote_text = true;
    }

    fn set_status(&self, message: &str) {
        if let Some(bar) = &self.status {
            bar.set_message(message.to_string());
        }
    }

    /// A line on stderr, above the status line.
    fn note(&self, line: &str) {
        match &self.status {
            Some(bar) => bar.println(format!("agentls: {line}")),
            None => eprintln!("agentls: {line}"),
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.status.take() {
            bar.finish_and_clear();
        }
        if !self.json && self.wrote_text && !self.at_line_start {
            self.write("\n");
        }
    }
}

fn limit_text(limit: &TurnLimit) -> String {
    match limit {
        TurnLimit::Round(n) => format!("tool-round limit reached ({n} rounds)"),
        TurnLimit::TotalTurns(n) => format!("turn limit reached ({n} model turns)"),
        TurnLimit::Steps(n) => format!("step limit reached ({n} model requests)"),
        TurnLimit::TimeLimitSecs(n) => format!("time limit reached ({n} s)"),
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}
