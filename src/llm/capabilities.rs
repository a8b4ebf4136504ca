//! What a model takes besides text and tools: images in a user message, and a reasoning effort.
//! Front doors ask before they offer either (ACP's `promptCapabilities.image`, its reasoning
//! effort option); the adapters send both in their dialect's shape whatever is asked.
//!
//! Invariant: one owner of the answer per provider dialect and model family, by the model's
//! name (the APIs have no capability query). An unknown model of the OpenAI-compatible dialect
//! (a local server's) takes neither: offering what it refuses costs the user a failed turn.

use crate::config::ProviderKind;

/// What a model takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ModelCapabilities {
    /// Images in user messages (and in tool results).
    pub images: bool,
    /// A reasoning effort (thinking budget or level).
    pub reasoning_effort: bool,
}

/// The model's name without an OpenRouter-style vendor prefix, lowercased.
fn bare(model: &str) -> String {
    model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase()
}

fn claude(m: &str) -> ModelCapabilities {
    // Every Claude 3+ model reads images; extended thinking came with 3.7.
    let old =
        ["claude-3-opus", "claude-3-sonnet", "claude-3-haiku", "claude-3-5"].iter().any(|p| m.starts_with(p));
    ModelCapabilities { images: m.starts_with("claude"), reasoning_effort: m.starts_with("claude") && !old }
}

fn openai(m: &str) -> ModelCapabilities {
    let reasoning =
        m.starts_with("gpt-5") || (m.starts_with('o') && m[1..].starts_with(|c: char| c.is_ascii_digit()));
    let text_only = m.starts_with("o1-mini") || m.starts_with("o3-mini") || m.starts_with("gpt-3.5");
    let images = !text_only && (reasoning || m.starts_with("gpt-4o") || m.starts_with("gpt-4.1"));
    ModelCapabilities { images, reasoning_effort: reasoning }
}

fn gemini(m: &str) -> ModelCapabilities {
    let thinking = m.starts_with("gemini-2.5") || m.starts_with("gemini-3");
    ModelCapabilities { images: m.starts_with("gemini"), reasoning_effort: thinking }
}

/// What `model` takes when reached through `provider`.
pub fn capabilities(provider: ProviderKind, model: &str) -> ModelCapabilities {
    let m = bare(model);
    match provider {
        ProviderKind::Anthropic => claude(&m),
        ProviderKind::OpenAi => openai(&m),
        ProviderKind::Gemini => gemini(&m),
        // Any family can sit behind a compatible server (OpenRouter, a gateway).
        ProviderKind::OpenAiChat if m.starts_with("claude") => claude(&m),
        ProviderKind::OpenAiChat if m.starts_with("gemini") => gemini(&m),
        ProviderKind::OpenAiChat => openai(&m),
        ProviderKind::Replay => ModelCapabilities::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_dialect_knows_its_families() {
        let both = ModelCapabilities { images: true, reasoning_effort: true };
        assert_eq!(capabilities(ProviderKind::Anthropic, "claude-sonnet-4-5"), both);
        assert_eq!(
            capabilities(ProviderKind::Anthropic, "claude-3-5-haiku-latest"),
            ModelCapabilities { images: true, reasoning_effort: false }
        );
        assert_eq!(capabilities(ProviderKind::OpenAi, "gpt-5.1-codex"), both);
        assert_eq!(
            capabilities(ProviderKind::OpenAi, "gpt-4o"),
            ModelCapabilities { images: true, reasoning_effort: false }
        );
        assert!(!capabilities(ProviderKind::OpenAi, "o3-mini").images);
        assert_eq!(capabilities(ProviderKind::Gemini, "gemini-2.5-pro"), both);
        assert!(!capabilities(ProviderKind::Gemini, "gemini-2.0-flash").reasoning_effort);
        assert_eq!(capabilities(ProviderKind::OpenAiChat, "qwen3-coder"), ModelCapabilities::default());
        assert_eq!(
            capabilities(ProviderKind::OpenAiChat, "openai/gpt-4.1"),
            capabilities(ProviderKind::OpenAi, "gpt-4.1")
        );
        assert_eq!(capabilities(ProviderKind::OpenAiChat, "anthropic/claude-opus-4-1"), both);
        assert_eq!(capabilities(ProviderKind::Replay, "replay"), ModelCapabilities::default());
    }
}
