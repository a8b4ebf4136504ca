//! Named choices of the configuration that several layers share: the agent profile and the
//! reasoning effort. Defined here, at the bottom of the layers, so nothing imports upwards.
//!
//! Invariant: each has one spelling on the wire (`as_str`, serde) and one parser (`FromStr`)
//! that also accepts the common aliases (`claude`, `codex`, …).

use serde::{Deserialize, Serialize};

use super::ProviderKind;

/// Which agent a model is aligned with: its tools, prompt and instruction files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
}

impl ProfileKind {
    pub const ALL: [ProfileKind; 3] = [Self::OpenAi, Self::Anthropic, Self::Gemini];
    pub const NAMES: &'static [&'static str] = &["openai", "anthropic", "gemini"];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
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

impl std::fmt::Display for ProfileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ProfileKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" | "openai-chat" | "codex" => Ok(Self::OpenAi),
            "anthropic" | "claude" => Ok(Self::Anthropic),
            "gemini" | "google" => Ok(Self::Gemini),
            other => Err(format!("unknown profile `{other}`, expected one of: {}", Self::NAMES.join(", "))),
        }
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
        assert!(error.contains("openai, anthropic, gemini"), "{error}");
    }
}
