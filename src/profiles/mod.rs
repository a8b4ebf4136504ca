//! Provider-aligned profiles (spec §3.4–3.6, §6): for each model family, its base system prompt,
//! the project instruction files it loads, its shell timeout, context window and whether it runs
//! tool calls in parallel. The tool sets themselves are built by [`crate::tools`].
//!
//! Invariant: each profile's prompt is our own text, kept in `prompts/` as the templates of its
//! named sections (see [`prompt`]): `prompts/<profile>.md` the coding profiles' base,
//! `prompts/sections/` the sections they share, `prompts/code/` code mode's.

pub mod environment;
pub mod project_docs;
pub mod prompt;

use std::sync::Arc;

use crate::tools::Tool;
use crate::tools::profiles::{ToolSetOptions, profile_tools};

pub use environment::{EnvironmentInfo, GitSnapshot};
pub use project_docs::{ProjectDocs, discover as discover_project_docs};
pub use prompt::{
    PromptOverrides, RenderedPrompt, RenderedSection, SectionSource, SystemPrompt, ToolSummary,
    builtin_section, project_prompts_dir,
};

pub use crate::config::ProfileKind;

/// What each profile brings besides its name (defined with the configuration, which names it).
impl ProfileKind {
    /// The tool set aligned with this profile, in the order the model sees it.
    pub fn tools(self) -> Vec<Arc<dyn Tool>> {
        let registry = profile_tools(self, &ToolSetOptions::default());
        registry.names().iter().filter_map(|name| registry.get(name)).collect()
    }

    /// The profile's own base instructions (spec §6.2); for code mode, the template of its
    /// first section (`starter`).
    pub fn base_prompt(self) -> &'static str {
        match self {
            Self::OpenAi => include_str!("prompts/openai.md"),
            Self::Anthropic => include_str!("prompts/anthropic.md"),
            Self::Gemini => include_str!("prompts/gemini.md"),
            Self::Code => include_str!("prompts/code/starter.md"),
        }
    }

    /// Default shell timeout when the configuration sets none: Claude Code uses 120 s, codex and
    /// gemini-cli 10 s.
    pub fn default_shell_timeout_ms(self) -> u64 {
        match self {
            Self::Anthropic => crate::tools::profiles::ANTHROPIC_SHELL_TIMEOUT_MS,
            Self::OpenAi | Self::Gemini => 10_000,
            // A REPL call often computes for a while; the call's own `timeout_ms` can ask for more.
            Self::Code => 30_000,
        }
    }

    /// Whether several tool calls of one response run concurrently.
    pub fn supports_parallel_tool_calls(self) -> bool {
        true
    }

    /// Context window in tokens for `model` (a conservative default for unknown models).
    pub fn context_window(self, model: &str) -> u64 {
        let m = model.to_ascii_lowercase();
        match self {
            Self::Anthropic => 200_000,
            Self::Gemini => 1_048_576,
            // Code mode runs on any provider: the window follows the model's family.
            Self::Code if m.starts_with("claude") => 200_000,
            Self::Code if m.starts_with("gemini") => 1_048_576,
            Self::Code => Self::OpenAi.context_window(model),
            Self::OpenAi if m.starts_with("gpt-5") => 400_000,
            Self::OpenAi if m.starts_with("gpt-4.1") => 1_047_576,
            Self::OpenAi if m.starts_with("o3") || m.starts_with("o4") => 200_000,
            Self::OpenAi => 128_000,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_profile_has_its_own_prompt_covering_the_topics() {
        let prompts: Vec<_> = ProfileKind::CODING.iter().map(|k| k.base_prompt()).collect();
        assert_ne!(prompts[0], prompts[1]);
        assert_ne!(prompts[1], prompts[2]);
        assert!(ProfileKind::OpenAi.base_prompt().contains("*** Begin Patch"));
        assert!(ProfileKind::Anthropic.base_prompt().contains("old_string"));
        assert!(ProfileKind::Anthropic.base_prompt().contains("unique"));
        assert!(ProfileKind::Gemini.base_prompt().contains("GEMINI.md"));
        for p in prompts {
            assert!(p.contains("coding agent"), "identity");
            assert!(p.to_lowercase().contains("error"), "error handling guidance");
        }
    }
}
