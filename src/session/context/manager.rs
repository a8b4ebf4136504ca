//! The context manager: keeps a session's requests inside the model's context window. It
//! estimates every request (calibrated by the provider's counts), publishes the figures hosts
//! show, warns at 80%, compacts before a call whose estimate crosses the configured share, and
//! answers a context overflow by compacting, then pruning, then a clear error.
//!
//! Invariants:
//! - The history is only rewritten here, before a model call or between inputs, where every
//!   call of the history has its result.
//! - A context overflow is answered by compaction first (once per call), by pruning only when
//!   compaction cannot help, and by an error that says what to do when neither does.
//! - An automatic compaction that leaves the estimate above the threshold is not tried again
//!   in the same input (it would summarise almost nothing each step), and the user is told.
//! - The figures a host reads are published before the event that reports a change
//!   (`compaction`), so a host that hears of it reads the new figures.

use std::sync::{Arc, Mutex, OnceLock};

use tokio_util::sync::CancellationToken;

use super::{Calibration, ContextStats, compaction, message_chars, prune, tools_chars};
use crate::llm::{LlmError, Request, Response, Usage};
use crate::profiles::ProfileKind;
use crate::session::events::{Compaction, CompactionTrigger, Emitter, ErrorData, EventData, Warning};
use crate::session::history::History;
use crate::session::turn::Turn;
use crate::session::{SessionConfig, lock};

/// Why a model call gave no response.
#[derive(Debug)]
pub(in crate::session) enum CallError {
    /// The input was cancelled (by the user or its time limit).
    Cancelled,
    Llm(LlmError),
}

/// The model as the context manager calls it.
pub(in crate::session) trait Model {
    /// The call of a step (streamed: its deltas are the session's events).
    async fn reply(&self, request: Request, token: &CancellationToken) -> Result<Response, CallError>;
    /// A summary request.
    async fn summarize(&self, request: &Request, token: &CancellationToken) -> Result<Response, CallError>;
}

/// What the context manager works with for one call or compaction: the settings, the history,
/// the next request as the history stands, the model and the input's cancellation.
pub(in crate::session) struct Conversation<'a, M> {
    pub config: &'a SessionConfig,
    pub history: &'a History,
    pub next: &'a (dyn Fn() -> Request + Sync),
    pub model: &'a M,
    pub token: &'a CancellationToken,
}

/// Keeps one session inside its context window.
pub(in crate::session) struct ContextManager {
    profile: ProfileKind,
    /// The token estimate and what the provider's reports taught it.
    calibration: Calibration,
    /// Characters of the tool definitions, counted at the first estimate.
    tools_chars: OnceLock<usize>,
    /// An automatic compaction of this input left the history above the threshold.
    auto_compact_spent: bool,
    /// What the summary requests used, not yet in the session's totals.
    usage: Usage,
    /// The figures hosts read.
    published: Arc<Mutex<ContextStats>>,
    events: Emitter,
}

impl ContextManager {
    pub(in crate::session) fn new(
        profile: ProfileKind,
        config: &SessionConfig,
        published: Arc<Mutex<ContextStats>>,
        events: Emitter,
    ) -> Self {
        Self {
            profile,
            calibration: Calibration::new(config.chars_per_token),
            tools_chars: OnceLock::new(),
            auto_compact_spent: false,
            usage: Usage::default(),
            published,
            events,
        }
    }

    /// The session's tools changed (a tool source's came or went): their share is counted again.
    pub(in crate::session) fn tools_changed(&mut self) {
        self.tools_chars = OnceLock::new();
    }

    /// A new input starts: automatic compaction may be tried again.
    pub(in crate::session) fn begin_input(&mut self) {
        self.auto_compact_spent = false;
    }

    /// What the summary requests used since the last call (for the session's totals).
    pub(in crate::session) fn take_usage(&mut self) -> Usage {
        std::mem::take(&mut self.usage)
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

    /// The context figures of a request of `chars` characters.
    fn stats_of(&self, config: &SessionConfig, chars: usize) -> ContextStats {
        ContextStats {
            estimate_tokens: self.calibration.estimate(chars),
            calibration: self.calibration.factor(),
            context_window: config
                .context_window_tokens
                .unwrap_or_else(|| self.profile.context_window(&config.model)),
        }
    }

    /// The figures of `next` (the next request), published for the host.
    pub(in crate::session) fn publish(&self, config: &SessionConfig, next: &Request) -> ContextStats {
        let stats = self.stats_of(config, self.request_chars(next));
        *lock(&self.published) = stats;
        stats
    }

    /// Emits a WARNING when the next request's calibrated estimate is above 80% of the context
    /// window. Returns whether it warned.
    pub(in crate::session) fn warn_if_full(&self, stats: &ContextStats) -> bool {
        let (tokens, window) = (stats.estimate_tokens, stats.context_window);
        if window == 0 || tokens * 10 <= window * 8 {
            return false;
        }
        let percent = stats.percent().min(999);
        self.warn(Warning {
            message: format!("Context usage at ~{percent}% of context window"),
            approx_tokens: Some(tokens),
            context_window: Some(window),
            ..Warning::default()
        });
        true
    }

    fn warn(&self, warning: Warning) {
        self.events.emit(EventData::Warning(warning));
    }

    /// Calls `model` with the request `next` builds from the history. Before the call, compacts
    /// the history when the estimate crosses the configured share of the window. On a context
    /// overflow compacts and retries; prunes when compaction cannot help (nothing to summarise,
    /// or the summary request itself does not fit); fails when neither recovers.
    pub(in crate::session) async fn call(
        &mut self,
        on: &Conversation<'_, impl Model>,
    ) -> Result<Response, CallError> {
        let Conversation { config, history, next, model, token } = *on;
        let mut auto_checked = false;
        let mut compacted_for_overflow = false;
        loop {
            let mut request = next();
            let mut chars = self.request_chars(&request);
            if !auto_checked && config.auto_compact && !self.auto_compact_spent {
                auto_checked = true;
                if self.stats_of(config, chars).percent() >= u64::from(config.auto_compact_percent) {
                    match self.compact(on, CompactionTrigger::Auto).await {
                        Ok(true) => {
                            request = next();
                            chars = self.request_chars(&request);
                            self.after_auto_compaction(config, self.stats_of(config, chars));
                        }
                        Ok(false) => {}
                        Err(CallError::Cancelled) => return Err(CallError::Cancelled),
                        // The full history may still fit: the call itself tells.
                        Err(CallError::Llm(e)) => self.warn(Warning {
                            message: format!(
                                "Automatic compaction failed ({e}); continuing with the full history."
                            ),
                            ..Warning::default()
                        }),
                    }
                }
            }
            let raw = self.calibration.raw_tokens(chars);
            match model.reply(request, token).await {
                Ok(response) => {
                    self.calibration.observe(raw, response.usage.input_tokens);
                    return Ok(response);
                }
                Err(CallError::Llm(LlmError::ContextLengthExceeded { provider, message })) => {
                    if !compacted_for_overflow {
                        compacted_for_overflow = true;
                        match self.compact(on, CompactionTrigger::Overflow).await {
                            Ok(true) => continue,
                            Ok(false) | Err(CallError::Llm(LlmError::ContextLengthExceeded { .. })) => {}
                            Err(other) => return Err(other),
                        }
                    }
                    let Some(p) = history.rewrite(prune::prune) else {
                        return Err(CallError::Llm(LlmError::ContextLengthExceeded {
                            provider,
                            message: format!(
                                "{message}; neither compaction nor pruning makes it fit (the task and the latest \
                                 round alone are too large): start a new session or ask for smaller steps"
                            ),
                        }));
                    };
                    self.warn(Warning {
                        message: format!(
                            "The conversation exceeded the context window and could not be compacted; dropped \
                             the {} oldest turns ({}, {} characters) and retried.",
                            p.turns_removed, p.dropped, p.chars_removed
                        ),
                        turns_removed: Some(p.turns_removed),
                        dropped: Some(p.dropped),
                        ..Warning::default()
                    });
                }
                other => return other,
            }
        }
    }

    /// The kept exchanges alone cross the threshold: compacting before every step would
    /// summarise almost nothing each time, so this input compacts no more.
    fn after_auto_compaction(&mut self, config: &SessionConfig, after: ContextStats) {
        if after.percent() < u64::from(config.auto_compact_percent) {
            return;
        }
        self.auto_compact_spent = true;
        self.warn(Warning {
            message: format!(
                "After compaction the conversation still fills ~{}% of the context window: no more automatic \
                 compaction for this input (lower keep_exchanges to keep fewer recent exchanges).",
                after.percent()
            ),
            approx_tokens: Some(after.estimate_tokens),
            context_window: Some(after.context_window),
            ..Warning::default()
        });
    }

    /// Replaces the history before the kept exchanges with a summary the model writes.
    /// `Ok(false)` when there is nothing to summarise or the model wrote nothing.
    async fn compact(
        &mut self,
        on: &Conversation<'_, impl Model>,
        trigger: CompactionTrigger,
    ) -> Result<bool, CallError> {
        let Conversation { config, history, next, model, token } = *on;
        let turns = history.snapshot();
        let Some(cut) = compaction::plan(&turns, config.keep_exchanges) else { return Ok(false) };
        let before = self.stats_of(config, self.request_chars(&next())).estimate_tokens;
        let summarizer = config.compaction_model.clone().unwrap_or_else(|| config.model.clone());
        let response =
            model.summarize(&compaction::summary_request(&turns[..cut], &summarizer), token).await?;
        self.usage += response.usage;
        let summary = response.text();
        if summary.trim().is_empty() {
            self.warn(Warning {
                message: format!("{summarizer} wrote an empty summary; the history was not compacted."),
                ..Warning::default()
            });
            return Ok(false);
        }
        let compacted = compaction::apply(&turns, cut, summary.trim().to_string());
        let kept = compacted.len() - 1;
        let summarized = match &compacted[0] {
            Turn::Summary(s) => {
                s.turns_summarized
                    - turns[..cut]
                        .iter()
                        .map(|t| if let Turn::Summary(e) = t { e.turns_summarized } else { 0 })
                        .sum::<usize>()
            }
            _ => cut,
        };
        history.rewrite(|turns| {
            *turns = compacted;
            Some(())
        });
        let after = self.publish(config, &next()).estimate_tokens;
        self.events.emit(EventData::Compaction(Compaction {
            trigger,
            tokens_before: before,
            tokens_after: after,
            messages_summarized: summarized,
            messages_kept: kept,
            model: summarizer,
        }));
        Ok(true)
    }

    /// `agentls.compact`: a compaction between inputs; its failure is an ERROR event, nothing
    /// to compact a WARNING, and the session stays usable either way.
    pub(in crate::session) async fn compact_on_request(&mut self, on: &Conversation<'_, impl Model>) {
        match self.compact(on, CompactionTrigger::Manual).await {
            Ok(true) | Err(CallError::Cancelled) => {}
            Ok(false) => self.warn(Warning {
                message: format!(
                    "Nothing to compact: the conversation is no longer than the {} exchanges compaction keeps.",
                    on.config.keep_exchanges
                ),
                ..Warning::default()
            }),
            Err(CallError::Llm(e)) => self.events.emit(EventData::Error(ErrorData {
                message: format!("Compaction failed; the history is unchanged: {e}"),
                fatal: false,
                error: Some(e),
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use tokio::sync::mpsc;

    use super::*;
    use crate::config::ProviderKind;
    use crate::llm::ContentPart;
    use crate::session::Event;
    use crate::session::turn::{read_round, to_messages};

    /// A model that answers from a script and notes what it was asked.
    #[derive(Default)]
    struct Scripted {
        replies: Mutex<VecDeque<Result<Response, LlmError>>>,
        summaries: Mutex<VecDeque<&'static str>>,
        asked: Mutex<Vec<&'static str>>,
    }

    fn text(text: &str) -> Response {
        Response { content: vec![ContentPart::text(text)], ..Default::default() }
    }

    fn overflow() -> LlmError {
        LlmError::ContextLengthExceeded { provider: ProviderKind::Anthropic, message: "too long".into() }
    }

    impl Scripted {
        fn new(replies: Vec<Result<Response, LlmError>>, summaries: Vec<&'static str>) -> Self {
            Self {
                replies: Mutex::new(replies.into()),
                summaries: Mutex::new(summaries.into()),
                ..Self::default()
            }
        }
    }

    impl Model for Scripted {
        async fn reply(&self, _request: Request, _token: &CancellationToken) -> Result<Response, CallError> {
            lock(&self.asked).push("reply");
            lock(&self.replies).pop_front().expect("a scripted reply").map_err(CallError::Llm)
        }

        async fn summarize(
            &self,
            request: &Request,
            _token: &CancellationToken,
        ) -> Result<Response, CallError> {
            assert!(request.tools.is_empty(), "a summary request offers no tools");
            lock(&self.asked).push("summary");
            Ok(text(lock(&self.summaries).pop_front().expect("a scripted summary")))
        }
    }

    fn manager(config: &SessionConfig) -> (ContextManager, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let published =
            Arc::new(Mutex::new(ContextStats { estimate_tokens: 0, calibration: 1.0, context_window: 0 }));
        (ContextManager::new(ProfileKind::Anthropic, config, published, Emitter::new("s".into(), tx)), rx)
    }

    fn told(rx: &mut mpsc::UnboundedReceiver<Event>) -> Vec<EventData> {
        std::iter::from_fn(|| rx.try_recv().ok()).map(|e| e.data).collect()
    }

    fn only(told: Vec<EventData>) -> EventData {
        let [one]: [EventData; 1] = told.try_into().expect("one event");
        one
    }

    /// Four exchanges of a question and an answer.
    fn exchanges() -> Vec<Turn> {
        ["first", "second", "third", "fourth"]
            .into_iter()
            .flat_map(|n| {
                [Turn::user(format!("{n} question")), Turn::assistant(&text(&format!("{n} answer")))]
            })
            .collect()
    }

    fn request_of(history: &History) -> impl Fn() -> Request + Sync + '_ {
        || Request::new("m", to_messages(&history.snapshot()))
    }

    /// Asks `context` for one call of `model` on `history`.
    async fn call(
        context: &mut ContextManager,
        config: &SessionConfig,
        history: &History,
        model: &Scripted,
    ) -> Result<Response, CallError> {
        let (next, token) = (request_of(history), CancellationToken::new());
        context.call(&Conversation { config, history, next: &next, model, token: &token }).await
    }

    #[tokio::test]
    async fn an_overflow_is_compacted_and_the_call_retried() {
        let config = SessionConfig { auto_compact: false, ..SessionConfig::default() };
        let (mut context, mut events) = manager(&config);
        let history = History::new(exchanges(), None);
        let model =
            Scripted::new(vec![Err(overflow()), Ok(text("done"))], vec!["the first question was answered"]);
        let response = call(&mut context, &config, &history, &model).await;
        assert_eq!(response.map(|r| r.text()).ok().as_deref(), Some("done"));
        assert_eq!(*lock(&model.asked), ["reply", "summary", "reply"]);
        let (turns, revision) = history.with_revision();
        assert!(matches!(&turns[0], Turn::Summary(s) if s.summary == "the first question was answered"));
        assert_eq!((turns.len(), revision), (7, 1), "the summary and the three latest exchanges");
        let EventData::Compaction(compaction) = only(told(&mut events)) else { panic!("a compaction event") };
        assert_eq!((compaction.trigger, compaction.messages_summarized), (CompactionTrigger::Overflow, 2));
    }

    #[tokio::test]
    async fn what_compaction_cannot_help_is_pruned_and_what_neither_helps_is_an_error() {
        let config = SessionConfig { auto_compact: false, ..SessionConfig::default() };
        let (mut context, mut events) = manager(&config);
        // One long task: nothing before it to summarise, older rounds to drop.
        let mut turns = vec![Turn::user("one long task")];
        for id in ["a", "b", "c"] {
            turns.extend(read_round(id, "x".repeat(1000)));
        }
        let history = History::new(turns, None);
        let model = Scripted::new(vec![Err(overflow()), Ok(text("done"))], Vec::new());
        assert!(call(&mut context, &config, &history, &model).await.is_ok());
        assert_eq!(*lock(&model.asked), ["reply", "reply"], "no summary was asked for");
        assert!(history.snapshot().len() < 7);
        let EventData::Warning(pruned) = only(told(&mut events)) else { panic!("a warning") };
        assert!(pruned.message.contains("could not be compacted; dropped the"), "{}", pruned.message);

        let mut task = vec![Turn::user("task")];
        task.extend(read_round("a", "x".repeat(1000)));
        let history = History::new(task, None);
        let model = Scripted::new(vec![Err(overflow())], Vec::new());
        let failed = call(&mut context, &config, &history, &model).await;
        let Err(CallError::Llm(LlmError::ContextLengthExceeded { message, .. })) = failed else {
            panic!("{failed:?}")
        };
        assert!(message.starts_with("too long; neither compaction nor pruning makes it fit"), "{message}");
        assert_eq!(history.with_revision().1, 0, "nothing was rewritten");
    }

    #[tokio::test]
    async fn automatic_compaction_that_stays_above_the_threshold_is_not_tried_again_in_the_input() {
        let config = SessionConfig { context_window_tokens: Some(10), ..SessionConfig::default() };
        let (mut context, mut events) = manager(&config);
        let history = History::new(exchanges(), None);
        let model = Scripted::new(vec![Ok(text("one")), Ok(text("two"))], vec!["s"]);
        call(&mut context, &config, &history, &model).await.expect("a reply");
        call(&mut context, &config, &history, &model).await.expect("a reply");
        assert_eq!(*lock(&model.asked), ["summary", "reply", "reply"]);
        let told = told(&mut events);
        assert!(matches!(&told[0], EventData::Compaction(c) if c.trigger == CompactionTrigger::Auto));
        assert!(
            matches!(&told[1], EventData::Warning(w) if w.message.contains("no more automatic compaction for this input")),
            "{told:?}"
        );
        assert_eq!(context.take_usage(), Usage::default(), "the scripted summary reported none");
        assert!(
            lock(&context.published).estimate_tokens > 0,
            "the figures after the compaction are published"
        );
    }
}
