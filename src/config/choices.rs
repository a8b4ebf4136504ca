//! Named choices of the configuration that several layers share: the agent profile, the
//! sections of its system prompt and the reasoning effort. Defined here, at the bottom of the layers, so nothing imports upwards.
//!
//! Invariant: each has one spelling on the wire (`as_str`, serde) and one parser (`FromStr`)
//! that also accepts the common aliases (`claude`, `codex`, …).

use serde::{Deserialize, Serialize};

use super::ProviderKind;

/// Which agent a model is aligned with: its tools, prompt and instruction files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ProfileKind {
    /// codex-aligned: apply_patch editing.
    #[serde(rename = "openai")]
    OpenAi,
    /// Claude Code-aligned: edit_file with old_string/new_string.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// gemini-cli-aligned: replace, read_many_files, list_dir.
    #[serde(rename = "gemini")]
    Gemini,
    /// Code mode (seed 003): one `python` tool, a persistent Python REPL.
    #[serde(rename = "code")]
    Code,
}

impl ProfileKind {
    pub const ALL: [ProfileKind; 4] = [Self::OpenAi, Self::Anthropic, Self::Gemini, Self::Code];
    pub const NAMES: &'static [&'static str] = &["openai", "anthropic", "gemini", "code"];
    /// The coding-agent profiles, aligned with a provider's own agent (all but code mode).
    pub const CODING: [ProfileKind; 3] = [Self::OpenAi, Self::Anthropic, Self::Gemini];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::Code => "code",
        }
    }

    /// The named sections of this profile's system prompt, in the order they are joined.
    pub fn prompt_sections(self) -> &'static [PromptSection] {
        use PromptSection::*;
        match self {
            Self::OpenAi | Self::Anthropic | Self::Gemini => {
                &[Base, Environment, Git, Tools, ProjectDocs, UserInstructions]
            }
            Self::Code => &[
                Starter,
                Objectives,
                Workflow,
                Interactions,
                Output,
                Notes,
                Environment,
                ProjectDocs,
                UserInstructions,
            ],
        }
    }

    /// Sections rendered for other messages than the system prompt (code mode's task message).
    pub fn message_sections(self) -> &'static [PromptSection] {
        match self {
            Self::Code => &[PromptSection::UserPrompt],
            _ => &[],
        }
    }

    /// The profile a provider's models are aligned with. OpenAI-compatible servers get the
    /// codex profile.
    pub fn for_provider(kind: ProviderKind) -> Self {
        match kind {
            ProviderKind::Anthropic => Self::Anthropic,
            ProviderKind::Gemini => Self::Gemini,
            ProviderKind::OpenAi | ProviderKind::OpenAiChat | ProviderKind::Replay => Self::OpenAi,
        }
    }
}

/// Each choice displays as its one spelling (`as_str`).
macro_rules! display_as_str {
    ($($ty:ty),*) => {$(
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}

display_as_str!(ProfileKind, PromptSection);

impl std::str::FromStr for ProfileKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" | "openai-chat" | "codex" => Ok(Self::OpenAi),
            "anthropic" | "claude" => Ok(Self::Anthropic),
            "gemini" | "google" => Ok(Self::Gemini),
            "code" | "python" | "code-mode" | "repl" => Ok(Self::Code),
            other => Err(format!("unknown profile `{other}`, expected one of: {}", Self::NAMES.join(", "))),
        }
    }
}

/// A named, overridable part of a profile's prompt (`[prompt.sections]`,
/// `.agentls/prompts/<profile>/<section>.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptSection {
    /// A coding profile's own instructions (`prompts/<profile>.md`).
    Base,
    /// The `<environment>` block.
    Environment,
    /// The `<git>` snapshot.
    Git,
    /// The list of available tools.
    Tools,
    /// The project's instruction files (AGENTS.md, …).
    ProjectDocs,
    /// The configuration's `instructions`.
    UserInstructions,
    /// Code mode (seed 003): the agent's role.
    Starter,
    /// Code mode: resources and rules.
    Objectives,
    /// Code mode: the steps of a task.
    Workflow,
    /// Code mode: the kinds of message (code-block variant).
    Interactions,
    /// Code mode: how replies are formatted.
    Output,
    /// Code mode: closing guidance.
    Notes,
    /// Code mode: the message each task is sent as.
    UserPrompt,
}

impl PromptSection {
    pub const ALL: [PromptSection; 13] = [
        Self::Base,
        Self::Environment,
        Self::Git,
        Self::Tools,
        Self::ProjectDocs,
        Self::UserInstructions,
        Self::Starter,
        Self::Objectives,
        Self::Workflow,
        Self::Interactions,
        Self::Output,
        Self::Notes,
        Self::UserPrompt,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Base => "base",
            Self::Environment => "environment",
            Self::Git => "git",
            Self::Tools => "tools",
            Self::ProjectDocs => "project_docs",
            Self::UserInstructions => "user_instructions",
            Self::Starter => "starter",
            Self::Objectives => "objectives",
            Self::Workflow => "workflow",
            Self::Interactions => "interactions",
            Self::Output => "output",
            Self::Notes => "notes",
            Self::UserPrompt => "user_prompt",
        }
    }
}

impl std::str::FromStr for PromptSection {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|section| section.as_str() == s).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|s| s.as_str()).collect();
            format!("unknown prompt section `{s}`, expected one of: {}", names.join(", "))
        })
    }
}

/// How hard a reasoning model should think. Adapters map it onto each provider's knob.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    Minimal,
    Low,
    Medium,
    High,
}

impl ReasoningEffort {
    pub const NAMES: &'static [&'static str] = &["minimal", "low", "medium", "high"];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

impl std::str::FromStr for ReasoningEffort {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "minimal" => Ok(Self::Minimal),
            "low" => Ok(Self::Low),
            "medium" => Ok(Self::Medium),
            "high" => Ok(Self::High),
            other => Err(format!(
                "unknown reasoning effort `{other}`, expected one of: {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_parse_their_names_and_aliases() {
        for kind in ProfileKind::ALL {
            assert_eq!(kind.as_str().parse::<ProfileKind>(), Ok(kind));
            assert_eq!(serde_json::to_value(kind).unwrap(), serde_json::json!(kind.as_str()));
        }
        assert_eq!(" Claude ".parse::<ProfileKind>(), Ok(ProfileKind::Anthropic));
        assert_eq!("codex".parse::<ProfileKind>(), Ok(ProfileKind::OpenAi));
        let error = "gpt".parse::<ProfileKind>().unwrap_err();
        assert!(error.contains("openai, anthropic, gemini, code"), "{error}");
        assert_eq!("python".parse::<ProfileKind>(), Ok(ProfileKind::Code));
        for section in PromptSection::ALL {
            assert_eq!(section.as_str().parse::<PromptSection>(), Ok(section));
            assert_eq!(serde_json::to_value(section).unwrap(), serde_json::json!(section.as_str()));
        }
    }
}
