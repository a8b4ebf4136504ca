//! How a session's task is framed, behind one seam the loop asks: code mode's code-block variant
//! (seed 003: no tools offered, a reply's ```python block runs in the REPL) and seed 002's submit
//! mode (the `submit(answer)` tool ends an input; a reply without calls is told to go on).
//!
//! Invariants: the loop never branches on a mode itself; the two are independent and combine
//! (code blocks in submit mode). Both are fixed for the session's life.

use std::sync::Arc;

use super::turn::Turn;
use crate::llm::{ToolCall, ToolResult};
use crate::profiles::ProfileKind;
use crate::tools::Tool;
use crate::tools::python::{EXECUTION_HEADER, code_block};
use crate::tools::submit::{self, SubmitTool};

/// What submit mode tells the model after a reply without tool calls (seed 002's fixed
/// "continue" message).
pub const CONTINUE_MESSAGE: &str =
    "Continue with the task. When it is complete, call the `submit` tool with your final answer.";

/// How a reply becomes tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Calls {
    /// The provider's native tool calls.
    Native,
    /// No tools are offered; a reply's ```python block is a call of the `python` tool, and its
    /// result comes back as an execution message.
    CodeBlocks,
}

/// When an input is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// When the model replies without tool calls.
    Natural,
    /// When the model calls `submit`; a reply without calls gets [`CONTINUE_MESSAGE`].
    Submit,
}

/// What a reply without tool calls means.
#[derive(Debug)]
pub(super) enum Quiet {
    /// The input is done.
    Done,
    /// The model is told this and called again.
    Continue(Turn),
}

/// The task framing of one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Mode {
    calls: Calls,
    ending: Ending,
}

impl Mode {
    /// The mode of a `profile` session with these settings.
    pub(super) fn new(profile: ProfileKind, config: &super::SessionConfig) -> Self {
        let code_blocks = profile == ProfileKind::Code && !config.code.uses_tool_calls();
        Self {
            calls: if code_blocks { Calls::CodeBlocks } else { Calls::Native },
            ending: if config.submit_mode { Ending::Submit } else { Ending::Natural },
        }
    }

    /// The tools the mode adds to the session's own.
    pub(super) fn tools(&self) -> Vec<Arc<dyn Tool>> {
        match self.ending {
            Ending::Submit => vec![Arc::new(SubmitTool)],
            Ending::Natural => Vec::new(),
        }
    }

    /// Whether requests offer the model the session's tools.
    pub(super) fn offers_tools(&self) -> bool {
        self.calls == Calls::Native
    }

    /// The calls a reply makes: its native `calls`, or the code block of its `text`.
    /// `model_turns` (the session's so far) names a block's call.
    pub(super) fn calls(&self, calls: Vec<ToolCall>, text: &str, model_turns: usize) -> Vec<ToolCall> {
        if self.calls == Calls::Native || !calls.is_empty() {
            return calls;
        }
        let Some(code) = code_block(text) else { return calls };
        vec![ToolCall {
            id: format!("block-{model_turns}"),
            name: "python".into(),
            arguments: serde_json::json!({ "code": code }),
            signature: None,
        }]
    }

    /// What a reply without tool calls means.
    pub(super) fn quiet(&self) -> Quiet {
        match self.ending {
            Ending::Natural => Quiet::Done,
            Ending::Submit => Quiet::Continue(Turn::system(CONTINUE_MESSAGE)),
        }
    }

    /// The turn that tells the model a round's results.
    pub(super) fn results_turn(&self, results: Vec<ToolResult>) -> Turn {
        match self.calls {
            Calls::Native => Turn::tool_results(results),
            Calls::CodeBlocks => {
                let output = results.iter().map(|r| r.content.as_str()).collect::<Vec<_>>().join("\n");
                Turn::user(format!("{EXECUTION_HEADER}\n{output}"))
            }
        }
    }

    /// The answer a round submitted: that of its first accepted `submit` call.
    pub(super) fn submitted(&self, calls: &[ToolCall], results: &[ToolResult]) -> Option<String> {
        if self.ending != Ending::Submit {
            return None;
        }
        calls.iter().zip(results).find_map(|(call, result)| {
            (call.name == submit::SUBMIT && !result.is_error)
                .then(|| submit::answer_of(&call.arguments))
                .flatten()
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::CodeLayer;
    use crate::session::SessionConfig;

    fn result(call_id: &str, content: &str, is_error: bool) -> ToolResult {
        ToolResult {
            call_id: call_id.into(),
            name: String::new(),
            content: content.into(),
            is_error,
            images: vec![],
        }
    }

    fn code_blocks() -> SessionConfig {
        SessionConfig {
            code: CodeLayer { tool_calls: Some(false), ..CodeLayer::default() },
            ..Default::default()
        }
    }

    #[test]
    fn a_coding_session_takes_the_models_calls_and_ends_when_it_makes_none() {
        let mode = Mode::new(ProfileKind::OpenAi, &SessionConfig::default());
        assert!(mode.offers_tools() && mode.tools().is_empty());
        let calls = vec![ToolCall::from_text("c1", "shell", r#"{"command": "ls"}"#)];
        assert_eq!(mode.calls(calls.clone(), "```python\nx\n```", 1), calls);
        assert!(mode.calls(Vec::new(), "```python\nx\n```", 1).is_empty(), "a block is only text");
        assert!(matches!(mode.quiet(), Quiet::Done));
        assert!(matches!(mode.results_turn(vec![result("c1", "ok", false)]), Turn::ToolResults(_)));
        assert_eq!(mode.submitted(&calls, &[result("c1", "ok", false)]), None);
        let code = Mode::new(ProfileKind::Code, &SessionConfig::default());
        assert!(code.offers_tools(), "code mode calls its tool by default");
    }

    #[test]
    fn the_code_block_variant_runs_a_replys_block_and_tells_its_result_as_an_execution() {
        let mode = Mode::new(ProfileKind::Code, &code_blocks());
        assert!(!mode.offers_tools());
        let calls = mode.calls(Vec::new(), "Let me look.\n```python\nprint(1)\n```", 3);
        assert_eq!(calls.len(), 1);
        assert_eq!((calls[0].id.as_str(), calls[0].name.as_str()), ("block-3", "python"));
        assert_eq!(calls[0].arguments["code"], "print(1)");
        assert!(mode.calls(Vec::new(), "no code here", 3).is_empty());
        let Turn::User(told) = mode.results_turn(vec![result("block-3", "1", false)]) else {
            panic!("a user turn")
        };
        assert_eq!(told.content, format!("{EXECUTION_HEADER}\n1"));
    }

    #[test]
    fn submit_mode_offers_submit_continues_a_quiet_reply_and_ends_with_the_first_accepted_answer() {
        let mode =
            Mode::new(ProfileKind::Anthropic, &SessionConfig { submit_mode: true, ..Default::default() });
        assert_eq!(mode.tools().iter().map(|t| t.name().to_string()).collect::<Vec<_>>(), [submit::SUBMIT]);
        let Quiet::Continue(Turn::System(told)) = mode.quiet() else { panic!("the model is told to go on") };
        assert_eq!(told.content, CONTINUE_MESSAGE);
        let calls = vec![
            ToolCall {
                id: "c1".into(),
                name: "submit".into(),
                arguments: json!({"answer": "no"}),
                signature: None,
            },
            ToolCall {
                id: "c2".into(),
                name: "submit".into(),
                arguments: json!({"answer": "42"}),
                signature: None,
            },
        ];
        let results = [result("c1", "refused", true), result("c2", submit::SUBMITTED, false)];
        assert_eq!(mode.submitted(&calls, &results).as_deref(), Some("42"));
        let both = Mode::new(ProfileKind::Code, &SessionConfig { submit_mode: true, ..code_blocks() });
        assert!(!both.offers_tools() && matches!(both.quiet(), Quiet::Continue(_)), "the modes combine");
    }
}
