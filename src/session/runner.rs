//! The session task: the agentic loop of spec §2.5. Inputs are handled one at a time; each is a
//! run of steps (a model call, then a round of tool calls) until the model is done or a limit
//! (turns, rounds, steps, time) stops it, with steering after each round, follow-ups after each
//! input, loop detection and context-usage warnings. What a step needs is done by its parts: the
//! context manager keeps requests inside the window (`context`), the prompt cache renders the
//! system prompt (`prompt`), the tool round runs the calls (`tool_round`), the mode frames the
//! task (`mode`: code blocks, submit).
//!
//! Invariants: the history always alternates validly (every tool call gets exactly one result,
//! also when a turn is cancelled); PROCESSING_END ends every processing cycle; SESSION_END is
//! the last event.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::context::{CallError, ContextManager, Conversation, Model};
use super::events::{
    Content, Delta, Emitter, EndReason, ErrorData, EventData, Notice, OutputDelta, ProcessingEnd, SessionEnd,
    SessionStart, TextEnd, TextStart, TurnLimit, UndoStatus, UserInput, Warning,
};
use super::instructions::Instructions;
use super::loop_detection::{detect_loop, loop_warning};
use super::mode::{Mode, Quiet};
use super::prompt::PromptCache;
use super::subagents::{ChildParts, Lineage, Subagents};
use super::tool_round::ToolRound;
use super::turn::Turn;
use super::{Children, Command, SessionConfig, SessionOptions, SessionState, Shared, lock};
use crate::checkpoint::{Checkpoints, HistoryMark};
use crate::exec::{OutputExecutionEnvironment, OutputSink, ShellLimits};
use crate::llm::{self, LlmError, Request, Response, StreamEvent, ToolCall, ToolDefinition, Usage};
use crate::profiles::{EnvironmentInfo, PromptOverrides, discover_project_docs};
use crate::tools::registry::ToolRegistry;
use crate::tools::subagents::{AgentControl, SUBAGENT_TOOLS};
use crate::tools::{ModelAccess, OutputForCall, TaskEnd, ToolContext, ToolSource};
use crate::workspace::ReadTracker;

struct Runner {
    shared: Arc<Shared>,
    events: Emitter,
    client: llm::Client,
    context: ContextManager,
    prompt: PromptCache,
    round: ToolRound,
    mode: Mode,
    /// Instruction files of subdirectories, handed over as the agent reaches them.
    instructions: Instructions,
    totals: Usage,
    /// 0 for a host's session, 1 for its children, …
    depth: u32,
    /// Tools that come and go (the session's MCP servers), asked before every model call.
    tool_source: Option<Arc<dyn ToolSource>>,
    /// Where each input's file changes are recorded.
    checkpoints: Option<Arc<Checkpoints>>,
}

pub(super) async fn run(
    opts: SessionOptions,
    lineage: Lineage,
    shared: Arc<Shared>,
    events: Emitter,
    mut commands: mpsc::UnboundedReceiver<Command>,
) {
    let resumed = !opts.history.is_empty();
    let mode = Mode::new(opts.profile, &opts.config);
    let mut registry = ToolRegistry::new();
    for tool in opts.tools.iter().cloned().chain(mode.tools()) {
        registry.register(tool);
    }
    // Below the depth limit the session runs children; at it, the subagent tools are not offered.
    let depth = lineage.depth;
    let agents = if depth < opts.config.max_subagent_depth {
        let parts = ChildParts {
            profile: opts.profile,
            client: opts.client.clone(),
            env: opts.env.clone(),
            workspace: opts.workspace.clone(),
            editor: opts.editor.clone(),
            tools: opts.tools.clone(),
            tool_source: opts.tool_source.clone(),
            cwd: opts.cwd.clone(),
        };
        let agents = Arc::new(Subagents::new(Arc::downgrade(&shared), &events, lineage, parts));
        *lock(&shared.agents) = Children::Running(Arc::clone(&agents));
        Some(agents)
    } else {
        SUBAGENT_TOOLS.iter().for_each(|name| drop(registry.unregister(name)));
        None
    };
    let environment = EnvironmentInfo::capture(&opts.cwd, &opts.config.model).await;
    let project_docs = discover_project_docs(&opts.cwd, opts.profile);
    let started = SessionStart {
        profile: opts.profile.as_str().into(),
        model: opts.config.model.clone(),
        cwd: opts.cwd.clone(),
        resumed,
        tools: registry.names(),
        project_docs: project_docs.docs.iter().map(|d| d.path.clone()).collect(),
    };
    let template = tool_context(&opts, &events, agents.as_ref());
    let overrides = PromptOverrides::load(
        opts.profile,
        &opts.config.prompt,
        opts.config.user_prompts_dir.as_deref(),
        &opts.cwd,
    );
    let mut runner = Runner {
        context: ContextManager::new(opts.profile, &opts.config, Arc::clone(&shared.context), events.clone()),
        prompt: PromptCache::new(opts.profile, environment, project_docs, overrides, events.clone()),
        round: ToolRound::new(registry, template, opts.profile, events.clone()),
        mode,
        instructions: Instructions::new(&opts.cwd, opts.profile, &opts.history),
        shared,
        events,
        client: opts.client,
        totals: Usage::default(),
        depth,
        tool_source: opts.tool_source.clone(),
        checkpoints: opts.checkpoints.clone(),
    };
    // The context figures are there when the host hears of the session.
    let config = runner.config();
    let request = runner.request(&config);
    runner.context.publish(&config, &request);
    runner.client.prepare(&request);
    runner.events.emit(EventData::SessionStart(started));
    if depth == 0 {
        for message in &opts.config.startup_warnings {
            runner
                .events
                .emit(EventData::Warning(Warning { message: message.clone(), ..Warning::default() }));
        }
    }
    // A resumed session's subagents come back after its own start.
    if let Some(agents) = &agents {
        agents.restore(opts.agents.clone(), &opts.config);
    }
    drop(agents);
    while let Some(command) = commands.recv().await {
        let input = match command {
            Command::Submit { text, epoch, context, images } => Some((text, epoch, context, images)),
            Command::FollowUpWake => {
                let next = runner.shared.inbox.next_follow_up();
                next.map(|t| (t, runner.shared.control.epoch(), Vec::new(), Vec::new()))
            }
            Command::Compact { epoch } => {
                if let Some(token) = runner.shared.control.begin(epoch) {
                    runner.compact_on_request(&token).await;
                }
                continue;
            }
            Command::Rewind { mark, reply } => {
                let _ = reply.send(runner.rewind(mark));
                continue;
            }
            Command::Close => break,
        };
        let Some((text, epoch, context, images)) = input else { continue };
        let Some(token) = runner.shared.control.begin(epoch) else { continue };
        if runner.process(text, &context, images, token).await == EndReason::Fatal {
            break;
        }
    }
    runner.shutdown().await;
}

/// What every tool call's context starts from. Commands (and tools that report progress)
/// stream their output to the host as TOOL_CALL_OUTPUT_DELTA events.
fn tool_context(opts: &SessionOptions, events: &Emitter, agents: Option<&Arc<Subagents>>) -> ToolContext {
    let output_events = events.clone();
    let output: OutputForCall = Arc::new(move |call_id: &str| {
        let (events, call_id) = (output_events.clone(), call_id.to_string());
        Some(OutputSink::new(move |delta| {
            events.emit(EventData::ToolCallOutputDelta(OutputDelta {
                call_id: call_id.clone(),
                delta: delta.to_string(),
            }))
        }))
    });
    let env = OutputExecutionEnvironment::new(opts.env.clone(), {
        let output = Arc::clone(&output);
        move |call_id| output(call_id)
    });
    ToolContext {
        env: Arc::new(env),
        workspace: opts.workspace.clone(),
        editor: opts.editor.clone(),
        reads: Arc::new(ReadTracker::default()),
        cwd: opts.cwd.clone(),
        call_id: String::new(),
        shell: ShellLimits::default(),
        cancel: CancellationToken::new(),
        model: None,
        output: Some(output),
        agents: agents.map(|a| Arc::clone(a) as Arc<dyn AgentControl>),
    }
}

impl Runner {
    /// Takes the tool source's tools when they changed (MCP servers that started, failed or
    /// changed their list), waiting for starting servers no longer than their startup timeouts
    /// or the turn; tells the user what happened to them.
    async fn refresh_tools(&mut self, token: &CancellationToken) {
        let Some(source) = self.tool_source.clone() else { return };
        let refresh = tokio::select! {
            refresh = source.refresh() => refresh,
            _ = token.cancelled() => return,
        };
        for message in refresh.warnings {
            self.events.emit(EventData::Warning(Warning { message, ..Warning::default() }));
        }
        if let Some(tools) = refresh.tools {
            self.round.replace_source_tools(tools);
            self.prompt.tools_changed();
            self.context.tools_changed();
        }
    }

    fn set_state(&self, state: SessionState) {
        *lock(&self.shared.state) = state;
    }

    fn config(&self) -> SessionConfig {
        lock(&self.shared.config).clone()
    }

    fn push(&self, turn: Turn) {
        self.shared.history.push(turn);
    }

    /// The tools requests offer: all the session's, or none (code blocks).
    fn tools(&self) -> Vec<ToolDefinition> {
        if self.mode.offers_tools() { self.round.definitions() } else { Vec::new() }
    }

    /// The next request as the history stands.
    fn request(&self, config: &SessionConfig) -> Request {
        self.prompt.request(config, self.tools(), &self.shared.history)
    }

    /// One processing cycle: the input, then queued follow-ups; ends with PROCESSING_END.
    async fn process(
        &mut self,
        mut text: String,
        context: &[PathBuf],
        images: Vec<llm::Image>,
        token: CancellationToken,
    ) -> EndReason {
        self.set_state(SessionState::Processing);
        let mut last_text;
        let mut reason;
        let mut context = context;
        let mut images = images;
        loop {
            (reason, last_text) =
                self.process_input(text, context, std::mem::take(&mut images), &token).await;
            context = &[];
            if reason != EndReason::Completed {
                break;
            }
            match self.shared.inbox.next_follow_up() {
                Some(next) => text = next,
                None => break,
            }
        }
        let state = match reason {
            EndReason::Fatal => SessionState::Closed,
            EndReason::Completed if last_text.trim_end().ends_with('?') => SessionState::AwaitingInput,
            _ => SessionState::Idle,
        };
        if state != SessionState::Closed {
            self.set_state(state);
        }
        self.events.emit(EventData::ProcessingEnd(ProcessingEnd {
            state,
            reason,
            text: last_text,
            totals: self.totals,
        }));
        reason
    }

    fn drain_steering(&self) {
        while let Some(message) = self.shared.inbox.next_steering() {
            self.push(Turn::steering(message.clone()));
            self.events.emit(EventData::SteeringInjected(Content { content: message }));
        }
    }

    /// Spec §2.5 `process_input`. Returns why it stopped and the last answer text.
    async fn process_input(
        &mut self,
        input: String,
        context: &[PathBuf],
        images: Vec<llm::Image>,
        token: &CancellationToken,
    ) -> (EndReason, String) {
        let config = self.config();
        let user = Turn::user_with_images(self.prompt.task_message(&config, &input), images);
        let turn_id = match (&self.checkpoints, &user) {
            (Some(checkpoints), Turn::User(turn)) => {
                let index = self.shared.history.read(<[Turn]>::len);
                Some(checkpoints.begin_turn(&input, HistoryMark { index, timestamp: turn.timestamp }))
            }
            _ => None,
        };
        self.push(user);
        self.events.emit(EventData::UserInput(UserInput { content: input, turn_id }));
        self.hand_over_instructions(context);
        self.drain_steering();
        self.context.begin_input();
        // The input's own token: cancelled by the user's cancel or when its time runs out.
        let limit = token.child_token();
        let time_limit = config.time_limit_secs;
        let _timer = (time_limit > 0).then(|| {
            let limit = limit.clone();
            AbortOnDrop(
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(time_limit)).await;
                    limit.cancel();
                })
                .abort_handle(),
            )
        });
        // The subagents the steps start carry the input's turn along (their late changes land in it).
        let (reason, text) = match self.checkpoints.clone() {
            Some(checkpoints) => checkpoints.in_turn(self.run_steps(&limit)).await,
            None => self.run_steps(&limit).await,
        };
        if let Some(checkpoints) = self.checkpoints.clone() {
            let before = checkpoints.undo_state();
            // Its texts are written to disk: off the session's thread (the server has one).
            let ended = checkpoints.clone();
            let _ = tokio::task::spawn_blocking(move || ended.end_turn()).await;
            // A turn that changed files takes the redo of earlier undone turns away.
            let after = checkpoints.undo_state();
            if after != before {
                self.events.emit(EventData::UndoState(UndoStatus::new(after)));
            }
        }
        if reason == EndReason::Cancelled && !token.is_cancelled() {
            self.events.emit(EventData::TurnLimit(TurnLimit::TimeLimitSecs(time_limit)));
            return (EndReason::TimeLimit, text);
        }
        (reason, text)
    }

    /// Cuts the history back to before the user input at `mark` (found at its index, else by
    /// its timestamp); the sink stores the history that results whole.
    fn rewind(&self, mark: HistoryMark) -> Result<usize, super::RewindError> {
        let is_mark = |turn: &Turn| matches!(turn, Turn::User(t) if t.timestamp == mark.timestamp);
        self.shared
            .history
            .rewrite(|turns| {
                let at = if turns.get(mark.index).is_some_and(is_mark) {
                    mark.index
                } else {
                    turns.iter().position(is_mark)?
                };
                let cut = turns.len() - at;
                turns.truncate(at);
                Some(cut)
            })
            .ok_or(super::RewindError::NotFound)
    }

    /// The steps of one input: model call, tool round, until the model is done or a limit.
    async fn run_steps(&mut self, token: &CancellationToken) -> (EndReason, String) {
        let mut rounds = 0u32;
        let mut steps = 0u32;
        let mut warned_context = false;
        let mut last_text = String::new();
        loop {
            let config = self.config();
            if let Some((limit, reason)) = self.limit_reached(&config, rounds, steps) {
                self.events.emit(EventData::TurnLimit(limit));
                return (reason, last_text);
            }
            if token.is_cancelled() {
                return (EndReason::Cancelled, last_text);
            }
            if self.shared.docs_dirty.swap(false, Ordering::SeqCst) {
                // Read again for every input; the prompt is rendered again only if they changed.
                self.prompt.reload_docs(self.round.cwd());
                if let Some(turn) = self.instructions.after_reload() {
                    self.push(turn);
                }
            }

            self.refresh_tools(token).await;
            if token.is_cancelled() {
                return (EndReason::Cancelled, last_text);
            }
            steps += 1;
            let response = match self.call(&config, token).await {
                Ok(r) => r,
                Err(CallError::Cancelled) => return (EndReason::Cancelled, last_text),
                Err(CallError::Llm(e)) => {
                    let fatal = matches!(e, LlmError::Authentication { .. } | LlmError::QuotaExceeded { .. });
                    self.events.emit(EventData::Error(ErrorData {
                        message: e.to_string(),
                        fatal,
                        error: Some(e),
                    }));
                    return (if fatal { EndReason::Fatal } else { EndReason::Error }, last_text);
                }
            };
            self.totals += response.usage;
            self.push(Turn::assistant(&response));
            last_text = response.text();
            let calls: Vec<ToolCall> = response.tool_calls().into_iter().cloned().collect();
            self.events.emit(EventData::AssistantTextEnd(TextEnd {
                text: last_text.clone(),
                reasoning: response.reasoning(),
                tool_calls: self.round.summaries(&calls),
                usage: response.usage,
                totals: self.totals,
                response_id: response.id.clone(),
                model: response.model.clone(),
                finish_reason: response.finish_reason.clone(),
            }));
            let stats = self.context.publish(&config, &self.request(&config));
            if !warned_context {
                warned_context = self.context.warn_if_full(&stats);
            }
            let calls = self.mode.calls(calls, &last_text, self.shared.history.model_turns());
            if calls.is_empty() {
                match self.mode.quiet() {
                    Quiet::Continue(turn) => {
                        self.push(turn);
                        continue;
                    }
                    Quiet::Done => return (EndReason::Completed, last_text),
                }
            }

            rounds += 1;
            let model = ModelAccess { client: self.client.clone(), model: config.model.clone() };
            let round = self.round.run(&config, &calls, Some(model), token).await;
            let submitted = self.mode.submitted(&calls, &round.results);
            self.push(self.mode.results_turn(round.results));
            if let Some(end) = round.task_end {
                return self.end_task(end);
            }
            if let Some(answer) = submitted {
                return (EndReason::Submitted, answer);
            }
            self.hand_over_instructions(&[]);
            if token.is_cancelled() {
                return (EndReason::Cancelled, last_text);
            }
            self.drain_steering();
            if config.enable_loop_detection
                && self.shared.history.read(|turns| detect_loop(turns, config.loop_detection_window))
            {
                let warning = loop_warning(config.loop_detection_window);
                self.push(Turn::steering(warning.clone()));
                self.events.emit(EventData::LoopDetection(Notice { message: warning }));
            }
        }
    }

    /// The limit that stops the input before its next step, if one does.
    fn limit_reached(
        &self,
        config: &SessionConfig,
        rounds: u32,
        steps: u32,
    ) -> Option<(TurnLimit, EndReason)> {
        if config.max_tool_rounds_per_input > 0 && rounds >= config.max_tool_rounds_per_input {
            return Some((TurnLimit::Round(rounds), EndReason::RoundLimit));
        }
        let turns = self.shared.history.model_turns();
        if config.max_turns > 0 && turns >= config.max_turns as usize {
            return Some((TurnLimit::TotalTurns(turns), EndReason::TurnLimit));
        }
        if config.max_steps > 0 && steps >= config.max_steps {
            return Some((TurnLimit::Steps(steps), EndReason::StepLimit));
        }
        None
    }

    /// The model call of a step, kept inside the context window by the context manager.
    async fn call(
        &mut self,
        config: &SessionConfig,
        token: &CancellationToken,
    ) -> Result<Response, CallError> {
        let tools = self.tools();
        let next = || self.prompt.request(config, tools.clone(), &self.shared.history);
        let model = Caller { client: &self.client, events: &self.events };
        let on = Conversation { config, history: &self.shared.history, next: &next, model: &model, token };
        let response = self.context.call(&on).await;
        self.totals += self.context.take_usage();
        response
    }

    /// `agentls.compact`, between inputs.
    async fn compact_on_request(&mut self, token: &CancellationToken) {
        let config = self.config();
        let tools = self.tools();
        let next = || self.prompt.request(&config, tools.clone(), &self.shared.history);
        let model = Caller { client: &self.client, events: &self.events };
        let on = Conversation {
            config: &config,
            history: &self.shared.history,
            next: &next,
            model: &model,
            token,
        };
        self.context.compact_on_request(&on).await;
        self.totals += self.context.take_usage();
    }

    /// Adds the instruction files of the subdirectories the work reached (see `instructions`).
    fn hand_over_instructions(&mut self, context: &[PathBuf]) {
        if let Some(turn) = self.instructions.after_work(self.round.reads(), context) {
            self.push(turn);
        }
    }

    /// How a tool's ending of the task is reported.
    fn end_task(&self, end: TaskEnd) -> (EndReason, String) {
        match end {
            TaskEnd::Answer(answer) => (EndReason::Completed, answer),
            TaskEnd::Failed(reason) => {
                let message = format!("The agent found the task cannot be done: {reason}");
                self.events.emit(EventData::Error(ErrorData {
                    message: message.clone(),
                    fatal: false,
                    error: None,
                }));
                (EndReason::Error, message)
            }
        }
    }

    /// Graceful shutdown (spec Appendix B): stop what runs, clean up, SESSION_END, CLOSED.
    async fn shutdown(&self) {
        self.shared.control.current().cancel();
        if let Some(agents) = self.shared.running_agents() {
            agents.shutdown().await;
            // The children's parts hold the editor port, which holds the handle: let go of them,
            // keeping what transcripts read.
            *lock(&self.shared.agents) = Children::Stored(agents.snapshot());
        }
        // A child shares its parent's environment: only the top session stops all its processes
        // (a child's own commands stopped with its cancelled turn).
        if self.depth == 0 {
            self.round.environment().cleanup().await;
        }
        self.set_state(SessionState::Closed);
        self.events
            .emit(EventData::SessionEnd(SessionEnd { state: SessionState::Closed, totals: self.totals }));
    }
}

/// The session's model as its context manager calls it: a step's call streamed, its text and
/// reasoning deltas becoming events as they arrive; a summary asked for whole.
struct Caller<'a> {
    client: &'a llm::Client,
    events: &'a Emitter,
}

impl Model for Caller<'_> {
    async fn reply(&self, request: Request, token: &CancellationToken) -> Result<Response, CallError> {
        self.events.emit(EventData::AssistantTextStart(TextStart { model: request.model.clone() }));
        let mut stream = tokio::select! {
            biased;
            _ = token.cancelled() => return Err(CallError::Cancelled),
            s = self.client.stream(&request) => s.map_err(CallError::Llm)?,
        };
        loop {
            let next = tokio::select! {
                biased;
                _ = token.cancelled() => return Err(CallError::Cancelled),
                n = stream.next() => n,
            };
            match next {
                Some(Ok(StreamEvent::TextDelta(delta))) => {
                    self.events.emit(EventData::AssistantTextDelta(Delta { delta }));
                }
                Some(Ok(StreamEvent::ThinkingDelta(delta))) => {
                    self.events.emit(EventData::AssistantReasoningDelta(Delta { delta }));
                }
                Some(Ok(StreamEvent::Finish(response))) => return Ok(response),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(CallError::Llm(e)),
                None => {
                    return Err(CallError::Llm(LlmError::StreamCut {
                        provider: self.client.settings().kind,
                        message: "the stream ended without a final response".into(),
                    }));
                }
            }
        }
    }

    async fn summarize(&self, request: &Request, token: &CancellationToken) -> Result<Response, CallError> {
        tokio::select! {
            biased;
            _ = token.cancelled() => Err(CallError::Cancelled),
            r = self.client.complete(request) => r.map_err(CallError::Llm),
        }
    }
}

/// Aborts a timer task when the input it limits ends.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
