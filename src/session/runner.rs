//! The session task: the agentic loop of spec §2.5 with streaming, steering, follow-ups, limits
//! (turns, rounds, steps, time), submit mode, loop detection, context-usage warnings, compaction
//! and context-overflow pruning.
//!
//! Invariants: the history always alternates validly (every tool call gets exactly one result,
//! also when a turn is cancelled); PROCESSING_END ends every processing cycle; SESSION_END is
//! the last event. Compaction runs only before a model call or between inputs, where every call
//! has its result. A context overflow is answered by compaction first, by pruning only when
//! compaction cannot help, and by a clear error when neither does.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::context::compaction;
use super::context::{Calibration, ContextStats, message_chars, tools_chars};
use super::events::{
    CallOutcome, CallStatus, CallSummary, Compaction, CompactionTrigger, Content, Delta, Emitter, EndReason,
    ErrorData, EventData, Notice, OutputDelta, ProcessingEnd, SessionEnd, SessionStart, TextEnd, TextStart,
    ToolCallEnd, ToolCallStart, TurnLimit, Warning,
};
use super::instructions::Instructions;
use super::loop_detection::{detect_loop, loop_warning};
use super::subagents::{ChildParts, Lineage, Subagents};
use super::turn::{Turn, to_messages};
use super::{Command, HistorySink, SessionConfig, SessionOptions, SessionState, Shared, lock};
use crate::exec::ShellLimits;
use crate::exec::{OutputExecutionEnvironment, OutputSink};
use crate::llm::{
    self, LlmError, Message, Request, Response, StreamEvent, ToolCall, ToolChoice, ToolResult, Usage,
};
use crate::profiles::{
    EnvironmentInfo, ProfileKind, ProjectDocs, PromptOverrides, SystemPrompt, ToolSummary,
    discover_project_docs,
};
use crate::tools::TaskEnd;
use crate::tools::python::{EXECUTION_HEADER, code_block};
use crate::tools::registry::{BatchEvent, BatchMode, ToolCallOutcome, ToolRegistry};
use crate::tools::subagents::{AgentControl, SUBAGENT_TOOLS};
use crate::tools::submit::{self, SubmitTool};
use crate::tools::truncate::TruncationPolicy;
use crate::tools::{ModelAccess, OutputForCall, ToolContext};
use crate::workspace::ReadTracker;

/// What submit mode tells the model after a reply without tool calls (seed 002's fixed
/// "continue" message).
pub const CONTINUE_MESSAGE: &str =
    "Continue with the task. When it is complete, call the `submit` tool with your final answer.";

enum CallError {
    Cancelled,
    Llm(LlmError),
}

struct Runner {
    shared: Arc<Shared>,
    events: Emitter,
    profile: ProfileKind,
    client: llm::Client,
    tools: ToolRegistry,
    ctx_template: ToolContext,
    environment: EnvironmentInfo,
    project_docs: ProjectDocs,
    /// Bumped whenever `project_docs` changes (a key of `system_prompt_cache`).
    docs_generation: u64,
    /// The last rendered system prompt and what it was rendered from: every model call and every
    /// context estimate needs it, and it changes only with the model, the settings it reads or
    /// the instruction files.
    system_prompt_cache: Mutex<Option<(PromptKey, String)>>,
    /// Characters of the tool definitions, counted at the first estimate.
    tools_chars: std::sync::OnceLock<usize>,
    /// Instruction files of subdirectories, handed over as the agent reaches them.
    instructions: Instructions,
    totals: Usage,
    /// The token estimate and what the provider's reports taught it.
    calibration: Calibration,
    /// An automatic compaction of this input left the history above the threshold.
    auto_compact_spent: bool,
    /// The user's prompt section overrides, read at session start.
    prompt_overrides: PromptOverrides,
    /// Prompt problems already reported (each is told once).
    prompt_problems_told: Mutex<std::collections::HashSet<String>>,
    /// Set by a tool call that ended the task (code mode's `return`, `AgentError`).
    task_end: Option<TaskEnd>,
    /// The session's children; `None` at the depth limit.
    agents: Option<Arc<Subagents>>,
    depth: u32,
    /// Where the history goes as it changes (the host's transcript).
    transcript: Option<Arc<dyn HistorySink>>,
}

/// What a rendered system prompt depends on besides what is fixed for the session's life (the
/// profile, its tools, the environment captured at start, the prompt overrides read at start).
#[derive(Debug, Clone, PartialEq)]
struct PromptKey {
    model: String,
    instructions: Option<String>,
    one_call_per_step: bool,
    code: crate::config::CodeLayer,
    docs_generation: u64,
}

pub(super) async fn run(
    opts: SessionOptions,
    lineage: Lineage,
    shared: Arc<Shared>,
    events: Emitter,
    mut commands: mpsc::UnboundedReceiver<Command>,
) {
    let resumed = !opts.history.is_empty();
    let mut registry = ToolRegistry::new();
    for tool in &opts.tools {
        registry.register(tool.clone());
    }
    if opts.config.submit_mode {
        registry.register(Arc::new(SubmitTool));
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
            cwd: opts.cwd.clone(),
        };
        Some(Arc::new(Subagents::new(Arc::downgrade(&shared), &events, lineage, parts)))
    } else {
        SUBAGENT_TOOLS.iter().for_each(|name| drop(registry.unregister(name)));
        None
    };
    lock(&shared.agents).clone_from(&agents);
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
    // Commands (and tools that report progress) stream their output to the host as
    // TOOL_CALL_OUTPUT_DELTA events.
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
    let ctx_template = ToolContext {
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
        agents: agents.clone().map(|a| a as Arc<dyn AgentControl>),
    };
    let mut runner = Runner {
        transcript: opts.transcript.clone(),
        shared,
        events,
        profile: opts.profile,
        client: opts.client,
        tools: registry,
        ctx_template,
        environment,
        project_docs,
        docs_generation: 0,
        system_prompt_cache: Mutex::new(None),
        tools_chars: Default::default(),
        instructions: Instructions::new(&opts.cwd, opts.profile, &opts.history),
        totals: Usage::default(),
        calibration: Calibration::new(opts.config.chars_per_token),
        auto_compact_spent: false,
        prompt_overrides: PromptOverrides::load(
            opts.profile,
            &opts.config.prompt,
            opts.config.user_prompts_dir.as_deref(),
            &opts.cwd,
        ),
        prompt_problems_told: Default::default(),
        task_end: None,
        agents,
        depth,
    };
    // The context figures are there when the host hears of the session.
    let config = runner.config();
    runner.refresh_context(&config);
    runner.client.prepare(&runner.build_request(&config));
    runner.events.emit(EventData::SessionStart(started));
    if depth == 0 {
        for message in &opts.config.startup_warnings {
            runner
                .events
                .emit(EventData::Warning(Warning { message: message.clone(), ..Warning::default() }));
        }
    }
    // A resumed session's subagents come back after its own start.
    if let Some(agents) = &runner.agents {
        agents.restore(opts.agents.clone(), &opts.config);
    }
    let cwd = opts.cwd;
    while let Some(command) = commands.recv().await {
        let input = match command {
            Command::Submit { text, epoch, context } => Some((text, epoch, context)),
            Command::FollowUpWake => {
                let next = lock(&runner.shared.follow_ups).pop_front();
                next.map(|t| (t, runner.shared.cancel_epoch.load(Ordering::SeqCst), Vec::new()))
            }
            Command::Compact { epoch } => {
                if let Some(token) = runner.begin_input(epoch) {
                    runner.compact_on_request(&token).await;
                }
                continue;
            }
            Command::Close => break,
        };
        let Some((text, epoch, context)) = input else { continue };
        let Some(token) = runner.begin_input(epoch) else { continue };
        if runner.process(text, &context, token, &cwd).await == EndReason::Fatal {
            break;
        }
    }
    runner.shutdown().await;
}

impl Runner {
    /// Installs a fresh cancellation token for an input, unless a cancel came after it was queued.
    fn begin_input(&self, epoch: u64) -> Option<CancellationToken> {
        let mut slot = lock(&self.shared.cancel);
        if self.shared.cancel_epoch.load(Ordering::SeqCst) != epoch {
            return None;
        }
        let token = CancellationToken::new();
        *slot = token.clone();
        Some(token)
    }

    fn set_state(&self, state: SessionState) {
        *lock(&self.shared.state) = state;
    }

    /// Appends a turn, and writes it to the transcript at once: a server that dies mid-turn
    /// loses at most the message being streamed.
    fn push(&self, turn: Turn) {
        if let Some(transcript) = &self.transcript {
            transcript.appended(&turn);
        }
        lock(&self.shared.history).push(turn);
    }

    /// Replaces the history (compaction, pruning): a new revision, written whole.
    fn rewritten(&self, history: &[Turn]) {
        let revision = self.shared.history_revision.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(transcript) = &self.transcript {
            transcript.rewritten(history, revision);
        }
    }

    fn config(&self) -> SessionConfig {
        lock(&self.shared.config).clone()
    }

    /// One processing cycle: the input, then queued follow-ups; ends with PROCESSING_END.
    async fn process(
        &mut self,
        mut text: String,
        context: &[std::path::PathBuf],
        token: CancellationToken,
        cwd: &std::path::Path,
    ) -> EndReason {
        self.set_state(SessionState::Processing);
        let mut last_text;
        let mut reason;
        let mut context = context;
        loop {
            (reason, last_text) = self.process_input(text, context, &token, cwd).await;
            context = &[];
            if reason != EndReason::Completed {
                break;
            }
            match lock(&self.shared.follow_ups).pop_front() {
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
        loop {
            let Some(message) = lock(&self.shared.steering).pop_front() else { break };
            self.push(Turn::steering(message.clone()));
            self.events.emit(EventData::SteeringInjected(Content { content: message }));
        }
    }

    /// Spec §2.5 `process_input`. Returns why it stopped and the last answer text.
    async fn process_input(
        &mut self,
        input: String,
        context: &[std::path::PathBuf],
        token: &CancellationToken,
        cwd: &std::path::Path,
    ) -> (EndReason, String) {
        let message = self.task_message(&input);
        self.push(Turn::user(message));
        self.events.emit(EventData::UserInput(Content { content: input }));
        self.hand_over_instructions(context);
        self.drain_steering();
        self.auto_compact_spent = false;
        // The input's own token: cancelled by the user's cancel or when its time runs out.
        let limit = token.child_token();
        let time_limit = self.config().time_limit_secs;
        let _timer = (time_limit > 0).then(|| {
            let limit = limit.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(time_limit)).await;
                limit.cancel();
            })
            .abort_handle()
        });
        let _timer = _timer.map(AbortOnDrop);
        let (reason, text) = self.run_steps(&limit, cwd).await;
        if reason == EndReason::Cancelled && !token.is_cancelled() {
            self.events.emit(EventData::TurnLimit(TurnLimit::TimeLimitSecs(time_limit)));
            return (EndReason::TimeLimit, text);
        }
        (reason, text)
    }

    /// The steps of one input: model call, tool round, until the model is done or a limit.
    async fn run_steps(&mut self, token: &CancellationToken, cwd: &std::path::Path) -> (EndReason, String) {
        let mut rounds = 0u32;
        let mut steps = 0u32;
        let mut warned_context = false;
        let mut last_text = String::new();
        loop {
            let config = self.config();
            if config.max_tool_rounds_per_input > 0 && rounds >= config.max_tool_rounds_per_input {
                self.events.emit(EventData::TurnLimit(TurnLimit::Round(rounds)));
                return (EndReason::RoundLimit, last_text);
            }
            let turns = self.count_model_turns();
            if config.max_turns > 0 && turns >= config.max_turns as usize {
                self.events.emit(EventData::TurnLimit(TurnLimit::TotalTurns(turns)));
                return (EndReason::TurnLimit, last_text);
            }
            if config.max_steps > 0 && steps >= config.max_steps {
                self.events.emit(EventData::TurnLimit(TurnLimit::Steps(steps)));
                return (EndReason::StepLimit, last_text);
            }
            if token.is_cancelled() {
                return (EndReason::Cancelled, last_text);
            }
            if self.shared.docs_dirty.swap(false, Ordering::SeqCst) {
                // Read again for every input; the prompt is rendered again only if they changed.
                let docs = discover_project_docs(cwd, self.profile);
                if docs != self.project_docs {
                    self.project_docs = docs;
                    self.docs_generation += 1;
                }
                if let Some(turn) = self.instructions.after_reload() {
                    self.push(turn);
                }
            }

            steps += 1;
            let response = match self.call_with_recovery(&config, token).await {
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
            let turn = Turn::assistant(&response);
            self.push(turn);
            last_text = response.text();
            let calls: Vec<ToolCall> = response.tool_calls().into_iter().cloned().collect();
            self.events.emit(EventData::AssistantTextEnd(TextEnd {
                text: last_text.clone(),
                reasoning: response.reasoning(),
                tool_calls: calls
                    .iter()
                    .map(|c| CallSummary {
                        call_id: c.id.clone(),
                        tool_name: c.name.clone(),
                        summary: self.tools.summary(&c.name, &c.arguments, &self.ctx_template.cwd),
                    })
                    .collect(),
                usage: response.usage,
                totals: self.totals,
                response_id: response.id.clone(),
                model: response.model.clone(),
            }));
            let stats = self.refresh_context(&config);
            if !warned_context {
                warned_context = self.check_context_usage(&stats);
            }
            let calls = match self.code_block_call(&config, &calls, &last_text) {
                Some(call) => vec![call],
                None => calls,
            };
            if calls.is_empty() {
                if config.submit_mode {
                    self.push(Turn::system(CONTINUE_MESSAGE));
                    continue;
                }
                return (EndReason::Completed, last_text);
            }

            rounds += 1;
            let results = self.execute_tool_calls(&config, &calls, token).await;
            let submitted = config
                .submit_mode
                .then(|| {
                    calls.iter().zip(&results).find_map(|(call, result)| {
                        (call.name == submit::SUBMIT && !result.is_error)
                            .then(|| submit::answer_of(&call.arguments))
                            .flatten()
                    })
                })
                .flatten();
            if self.code_blocks(&config) {
                // Code-block variant: the block's result is the execution message.
                let output = results.iter().map(|r| r.content.as_str()).collect::<Vec<_>>().join("\n");
                self.push(Turn::user(format!("{EXECUTION_HEADER}\n{output}")));
            } else {
                self.push(Turn::tool_results(results));
            }
            if let Some(end) = self.task_end.take() {
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
            if config.enable_loop_detection {
                let detected = detect_loop(&lock(&self.shared.history), config.loop_detection_window);
                if detected {
                    let warning = loop_warning(config.loop_detection_window);
                    self.push(Turn::steering(warning.clone()));
                    self.events.emit(EventData::LoopDetection(Notice { message: warning }));
                }
            }
        }
    }

    /// Adds the instruction files of the subdirectories the work reached (see `instructions`).
    fn hand_over_instructions(&mut self, context: &[std::path::PathBuf]) {
        if let Some(turn) = self.instructions.after_work(&self.ctx_template.reads, context) {
            self.push(turn);
        }
    }

    /// True in code mode's code-block variant: no tools offered, ```python blocks run instead.
    fn code_blocks(&self, config: &SessionConfig) -> bool {
        self.profile == ProfileKind::Code && !config.code.uses_tool_calls()
    }

    /// In the code-block variant, a reply without tool calls whose text holds a ```python block
    /// becomes a call of the `python` tool.
    fn code_block_call(&self, config: &SessionConfig, calls: &[ToolCall], text: &str) -> Option<ToolCall> {
        if !calls.is_empty() || !self.code_blocks(config) {
            return None;
        }
        let code = code_block(text)?;
        Some(ToolCall {
            id: format!("block-{}", self.count_model_turns()),
            name: "python".into(),
            arguments: serde_json::json!({ "code": code }),
            signature: None,
        })
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

    /// The system prompt's inputs other than the tools and environment.
    fn system_prompt<'a>(
        &'a self,
        config: &'a SessionConfig,
        environment: &'a EnvironmentInfo,
        tools: &'a [ToolSummary],
    ) -> SystemPrompt<'a> {
        SystemPrompt {
            profile: self.profile,
            environment,
            tools,
            project_docs: &self.project_docs,
            user_instructions: config.instructions.as_deref(),
            one_call_per_step: config.one_call_per_step,
            code: &config.code,
            overrides: &self.prompt_overrides,
        }
    }

    /// Tells the user, once each, about prompt overrides that could not be used.
    fn tell_prompt_problems(&self, problems: Vec<String>) {
        for message in problems {
            if lock(&self.prompt_problems_told).insert(message.clone()) {
                self.events.emit(EventData::Warning(Warning { message, ..Warning::default() }));
            }
        }
    }

    /// The message an input is sent as: code mode frames it as a task (`user_prompt`).
    fn task_message(&self, input: &str) -> String {
        let config = self.config();
        let prompt = self.system_prompt(&config, &self.environment, &[]);
        match prompt.task_message(input) {
            Some((message, problems)) => {
                self.tell_prompt_problems(problems);
                message
            }
            None => input.to_string(),
        }
    }

    /// Model turns of the session, those a summary replaced included.
    fn count_model_turns(&self) -> usize {
        lock(&self.shared.history)
            .iter()
            .map(|t| match t {
                Turn::Assistant(_) => 1,
                Turn::Summary(s) => s.model_turns,
                _ => 0,
            })
            .sum()
    }

    fn build_request(&self, config: &SessionConfig) -> Request {
        let definitions = if self.code_blocks(config) { Vec::new() } else { self.tools.definitions() };
        let mut messages = vec![Message::system(self.system_prompt_text(config, &definitions))];
        messages.extend(to_messages(&lock(&self.shared.history)));
        Request {
            model: config.model.clone(),
            messages,
            tool_choice: ToolChoice::Auto,
            reasoning_effort: config.reasoning_effort,
            parallel_tool_calls: (config.one_call_per_step && !definitions.is_empty()).then_some(false),
            tools: definitions,
            ..Default::default()
        }
    }

    /// The system prompt of the next request, rendered again only when its inputs changed.
    fn system_prompt_text(&self, config: &SessionConfig, definitions: &[llm::ToolDefinition]) -> String {
        let key = PromptKey {
            model: config.model.clone(),
            instructions: config.instructions.clone(),
            one_call_per_step: config.one_call_per_step,
            code: config.code.clone(),
            docs_generation: self.docs_generation,
        };
        let mut cache = lock(&self.system_prompt_cache);
        if let Some((cached_key, text)) = cache.as_ref()
            && *cached_key == key
        {
            return text.clone();
        }
        let summaries: Vec<ToolSummary> = definitions
            .iter()
            .map(|d| ToolSummary { name: d.name.clone(), description: d.description.clone() })
            .collect();
        let mut environment = self.environment.clone();
        environment.model = config.model.clone();
        environment.knowledge_cutoff = crate::profiles::environment::knowledge_cutoff(&config.model);
        let rendered = self.system_prompt(config, &environment, &summaries).render();
        self.tell_prompt_problems(rendered.problems);
        *cache = Some((key, rendered.text.clone()));
        rendered.text
    }

    /// Calls the model. Before the call, compacts the history when the estimate crosses the
    /// configured share of the window. On a context-length error compacts and retries; prunes
    /// when compaction cannot help (nothing to summarise, or the summary request itself does
    /// not fit); fails when neither recovers.
    async fn call_with_recovery(
        &mut self,
        config: &SessionConfig,
        token: &CancellationToken,
    ) -> Result<Response, CallError> {
        let mut auto_checked = false;
        let mut compacted_for_overflow = false;
        loop {
            let mut request = self.build_request(config);
            let mut chars = self.request_chars(&request);
            if !auto_checked && config.auto_compact && !self.auto_compact_spent {
                auto_checked = true;
                let stats = self.stats_of(config, chars);
                if stats.percent() >= u64::from(config.auto_compact_percent) {
                    match self.compact(config, CompactionTrigger::Auto, token).await {
                        Ok(true) => {
                            request = self.build_request(config);
                            chars = self.request_chars(&request);
                            let after = self.stats_of(config, chars);
                            // The kept exchanges alone cross the threshold: compacting before
                            // every step would summarise almost nothing each time.
                            if after.percent() >= u64::from(config.auto_compact_percent) {
                                self.auto_compact_spent = true;
                                self.events.emit(EventData::Warning(Warning {
                                    message: format!(
                                        "After compaction the conversation still fills ~{}% of the context window: \
                                         no more automatic compaction for this input (lower keep_exchanges to \
                                         keep fewer recent exchanges).",
                                        after.percent()
                                    ),
                                    approx_tokens: Some(after.estimate_tokens),
                                    context_window: Some(after.context_window),
                                    ..Warning::default()
                                }));
                            }
                        }
                        Ok(false) => {}
                        Err(CallError::Cancelled) => return Err(CallError::Cancelled),
                        // The full history may still fit: the call itself tells.
                        Err(CallError::Llm(e)) => self.events.emit(EventData::Warning(Warning {
                            message: format!(
                                "Automatic compaction failed ({e}); continuing with the full history."
                            ),
                            ..Warning::default()
                        })),
                    }
                }
            }
            let raw = self.calibration.raw_tokens(chars);
            match self.call_model(request, token).await {
                Ok(response) => {
                    self.calibration.observe(raw, response.usage.input_tokens);
                    return Ok(response);
                }
                Err(CallError::Llm(LlmError::ContextLengthExceeded { provider, message })) => {
                    if !compacted_for_overflow {
                        compacted_for_overflow = true;
                        match self.compact(config, CompactionTrigger::Overflow, token).await {
                            Ok(true) => continue,
                            Ok(false) | Err(CallError::Llm(LlmError::ContextLengthExceeded { .. })) => {}
                            Err(other) => return Err(other),
                        }
                    }
                    let pruned = {
                        let mut history = lock(&self.shared.history);
                        let pruned = super::context::prune::prune(&mut history);
                        if pruned.is_some() {
                            self.rewritten(&history);
                        }
                        pruned
                    };
                    match pruned {
                        Some(p) => {
                            self.events.emit(EventData::Warning(Warning {
                                message: format!(
                                    "The conversation exceeded the context window and could not be compacted; \
                                     dropped the {} oldest turns ({}, {} characters) and retried.",
                                    p.turns_removed, p.dropped, p.chars_removed
                                ),
                                turns_removed: Some(p.turns_removed),
                                dropped: Some(p.dropped),
                                ..Warning::default()
                            }));
                        }
                        None => {
                            return Err(CallError::Llm(LlmError::ContextLengthExceeded {
                                provider,
                                message: format!(
                                    "{message}; neither compaction nor pruning makes it fit (the task and \
                                     the latest round alone are too large): start a new session or ask for \
                                     smaller steps"
                                ),
                            }));
                        }
                    }
                }
                other => return other,
            }
        }
    }

    /// Replaces the history before the kept exchanges with a summary the model writes.
    /// `Ok(false)` when there is nothing to summarise or the model wrote nothing.
    async fn compact(
        &mut self,
        config: &SessionConfig,
        trigger: CompactionTrigger,
        token: &CancellationToken,
    ) -> Result<bool, CallError> {
        let history = lock(&self.shared.history).clone();
        let Some(cut) = compaction::plan(&history, config.keep_exchanges) else { return Ok(false) };
        let before = self.stats_of(config, self.request_chars(&self.build_request(config))).estimate_tokens;
        let model = config.compaction_model.clone().unwrap_or_else(|| config.model.clone());
        let request = compaction::summary_request(&history[..cut], &model);
        let response = tokio::select! {
            biased;
            _ = token.cancelled() => return Err(CallError::Cancelled),
            r = self.client.complete(&request) => r.map_err(CallError::Llm)?,
        };
        self.totals += response.usage;
        let summary = response.text();
        if summary.trim().is_empty() {
            self.events.emit(EventData::Warning(Warning {
                message: format!("{model} wrote an empty summary; the history was not compacted."),
                ..Warning::default()
            }));
            return Ok(false);
        }
        let compacted = compaction::apply(&history, cut, summary.trim().to_string());
        let kept = compacted.len() - 1;
        let summarized = match &compacted[0] {
            Turn::Summary(s) => {
                s.turns_summarized
                    - history[..cut]
                        .iter()
                        .map(|t| if let Turn::Summary(e) = t { e.turns_summarized } else { 0 })
                        .sum::<usize>()
            }
            _ => cut,
        };
        {
            let mut history = lock(&self.shared.history);
            *history = compacted;
            self.rewritten(&history);
        }
        let after = self.refresh_context(config).estimate_tokens;
        self.events.emit(EventData::Compaction(Compaction {
            trigger,
            tokens_before: before,
            tokens_after: after,
            messages_summarized: summarized,
            messages_kept: kept,
            model,
        }));
        Ok(true)
    }

    /// `agentls.compact`: a compaction between inputs; its failure is an ERROR event, nothing
    /// to compact a WARNING, and the session stays usable either way.
    async fn compact_on_request(&mut self, token: &CancellationToken) {
        let config = self.config();
        match self.compact(&config, CompactionTrigger::Manual, token).await {
            Ok(true) | Err(CallError::Cancelled) => {}
            Ok(false) => self.events.emit(EventData::Warning(Warning {
                message: format!(
                    "Nothing to compact: the conversation is no longer than the {} exchanges compaction keeps.",
                    config.keep_exchanges
                ),
                ..Warning::default()
            })),
            Err(CallError::Llm(e)) => self.events.emit(EventData::Error(ErrorData {
                message: format!("Compaction failed; the history is unchanged: {e}"),
                fatal: false,
                error: Some(e),
            })),
        }
    }

    /// Characters of everything `request` sends the model (`context::request_chars`); the
    /// session offers all its tools or none, so their share is counted once.
    fn request_chars(&self, request: &Request) -> usize {
        let tools = if request.tools.is_empty() {
            0
        } else {
            *self.tools_chars.get_or_init(|| tools_chars(&request.tools))
        };
        message_chars(&request.messages) + tools
    }

    /// The context figures of a request of `chars` characters ([`Runner::request_chars`]).
    fn stats_of(&self, config: &SessionConfig, chars: usize) -> ContextStats {
        ContextStats {
            estimate_tokens: self.calibration.estimate(chars),
            calibration: self.calibration.factor(),
            context_window: config
                .context_window_tokens
                .unwrap_or_else(|| self.profile.context_window(&config.model)),
        }
    }

    /// Recomputes the figures of the next request and publishes them to the handle.
    fn refresh_context(&self, config: &SessionConfig) -> ContextStats {
        let stats = self.stats_of(config, self.request_chars(&self.build_request(config)));
        *lock(&self.shared.context) = stats;
        stats
    }

    /// One streamed model call; text and reasoning deltas become events as they arrive.
    async fn call_model(&self, request: Request, token: &CancellationToken) -> Result<Response, CallError> {
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

    /// Emits a WARNING when the next request's calibrated estimate is above 80% of the context
    /// window. Returns whether it warned.
    fn check_context_usage(&self, stats: &ContextStats) -> bool {
        let (tokens, window) = (stats.estimate_tokens, stats.context_window);
        if window == 0 || tokens * 10 <= window * 8 {
            return false;
        }
        let percent = stats.percent().min(999);
        self.events.emit(EventData::Warning(Warning {
            message: format!("Context usage at ~{percent}% of context window"),
            approx_tokens: Some(tokens),
            context_window: Some(window),
            ..Warning::default()
        }));
        true
    }

    /// Runs one round of tool calls through the registry; events carry the full output, the
    /// results carry what the model receives.
    async fn execute_tool_calls(
        &mut self,
        config: &SessionConfig,
        calls: &[ToolCall],
        token: &CancellationToken,
    ) -> Vec<ToolResult> {
        self.tools.set_truncation(TruncationPolicy::new(
            config.tool_output_limits.clone(),
            config.tool_line_limits.clone(),
        ));
        let mut ctx = self.ctx_template.clone();
        ctx.shell = ShellLimits {
            default_timeout_ms: config
                .default_command_timeout_ms
                .unwrap_or_else(|| self.profile.default_shell_timeout_ms())
                .min(config.max_command_timeout_ms),
            max_timeout_ms: config.max_command_timeout_ms,
        };
        ctx.cancel = token.child_token();
        ctx.model = Some(ModelAccess { client: self.client.clone(), model: config.model.clone() });
        let mode = if config.one_call_per_step {
            BatchMode::FirstOnly
        } else if self.profile.supports_parallel_tool_calls() {
            BatchMode::Parallel
        } else {
            BatchMode::Sequential
        };
        let started: Mutex<Vec<Option<Instant>>> = Mutex::new(vec![None; calls.len()]);
        let (events, tools) = (&self.events, &self.tools);
        let cwd = ctx.cwd.as_path();
        let observe = |event: BatchEvent<'_>| match event {
            BatchEvent::Started { index, call: _ } => {
                lock(&started)[index] = Some(Instant::now());
                let call = &calls[index];
                events.emit(EventData::ToolCallStart(ToolCallStart {
                    tool_name: call.name.clone(),
                    call_id: call.id.clone(),
                    summary: tools.summary(&call.name, &call.arguments, cwd),
                    arguments: call.arguments.clone(),
                }));
            }
            BatchEvent::Finished { index, call: _, outcome } => {
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
                let call = &calls[index];
                events.emit(EventData::ToolCallEnd(ToolCallEnd {
                    tool_name: call.name.clone(),
                    call_id: call.id.clone(),
                    summary: tools.summary(&call.name, &call.arguments, cwd),
                    status,
                    outcome,
                    duration_ms,
                }));
            }
        };
        let outcomes = self.tools.execute_batch(calls, &ctx, mode, &observe).await;
        self.task_end = outcomes.iter().find_map(|o| o.ends_task.clone());
        calls.iter().zip(outcomes).map(|(call, outcome)| to_result(call, outcome)).collect()
    }

    /// Graceful shutdown (spec Appendix B): stop what runs, clean up, SESSION_END, CLOSED.
    async fn shutdown(&self) {
        lock(&self.shared.cancel).cancel();
        if let Some(agents) = &self.agents {
            agents.shutdown().await;
            // The children's parts hold the editor port, which holds the handle: let go of them,
            // keeping what transcripts read.
            let last = agents.snapshot();
            *lock(&self.shared.agents) = None;
            *lock(&self.shared.closed_agents) = last;
        }
        // A child shares its parent's environment: only the top session stops all its processes
        // (a child's own commands stopped with its cancelled turn).
        if self.depth == 0 {
            self.ctx_template.env.cleanup().await;
        }
        self.set_state(SessionState::Closed);
        self.events
            .emit(EventData::SessionEnd(SessionEnd { state: SessionState::Closed, totals: self.totals }));
    }
}

fn to_result(call: &ToolCall, outcome: ToolCallOutcome) -> ToolResult {
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

/// Aborts a timer task when the input it limits ends.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
