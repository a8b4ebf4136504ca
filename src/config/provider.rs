//! Which provider, model, endpoint and key a run uses.
//!
//! Order: an explicit provider (flag, LSP option, `AGENTLS_PROVIDER`, config file); otherwise the
//! first API key present (Anthropic, OpenAI, Gemini); otherwise a local OpenAI-compatible server on
//! 127.0.0.1:11434 when one answers; otherwise an error that says how to set one up.
//! Base URLs follow the official SDKs: `ANTHROPIC_BASE_URL` has no `/v1`, `OPENAI_BASE_URL` ends
//! in `/v1`, `GOOGLE_GEMINI_BASE_URL` has no version.

use serde::{Deserialize, Serialize};

use super::{Config, Env, NetworkSettings, Secret};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ProviderKind {
    #[serde(rename = "anthropic")]
    Anthropic,
    #[serde(rename = "openai")]
    OpenAi,
    #[serde(rename = "gemini")]
    Gemini,
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    /// Plays back a recorded cassette (see `llm::replay`); never reaches the network.
    #[serde(rename = "replay")]
    Replay,
}

impl ProviderKind {
    pub const ALL: [ProviderKind; 5] =
        [Self::Anthropic, Self::OpenAi, Self::Gemini, Self::OpenAiChat, Self::Replay];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAi => "openai",
            Self::Gemini => "gemini",
            Self::OpenAiChat => "openai-chat",
            Self::Replay => "replay",
        }
    }

    /// Environment variables that may hold the key, in order of preference.
    pub fn key_vars(self) -> &'static [&'static str] {
        match self {
            Self::Anthropic => &["ANTHROPIC_API_KEY"],
            Self::OpenAi | Self::OpenAiChat => &["OPENAI_API_KEY"],
            Self::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            Self::Replay => &[],
        }
    }

    pub fn base_url_var(self) -> Option<&'static str> {
        match self {
            Self::Anthropic => Some("ANTHROPIC_BASE_URL"),
            Self::OpenAi | Self::OpenAiChat => Some("OPENAI_BASE_URL"),
            Self::Gemini => Some("GOOGLE_GEMINI_BASE_URL"),
            Self::Replay => None,
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::Anthropic => "https://api.anthropic.com",
            Self::OpenAi | Self::OpenAiChat => "https://api.openai.com/v1",
            Self::Gemini => "https://generativelanguage.googleapis.com",
            Self::Replay => "",
        }
    }

    pub fn default_model(self) -> &'static str {
        match self {
            Self::Anthropic => "claude-sonnet-4-5",
            Self::OpenAi => "gpt-5.1-codex",
            Self::Gemini => "gemini-2.5-pro",
            Self::OpenAiChat => "qwen3-coder",
            Self::Replay => "replay",
        }
    }

    /// Whether requests need a key (local OpenAI-compatible servers usually do not).
    pub fn requires_key(self) -> bool {
        matches!(self, Self::Anthropic | Self::OpenAi | Self::Gemini)
    }
}

impl std::fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ProviderKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| {
            let names: Vec<_> = Self::ALL.iter().map(|k| k.as_str()).collect();
            format!("unknown provider `{s}`, expected one of: {}", names.join(", "))
        })
    }
}

/// Everything an adapter needs to reach a provider.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderSettings {
    pub kind: ProviderKind,
    pub model: String,
    /// Base URL without a trailing slash.
    pub base_url: String,
    pub api_key: Option<Secret>,
    /// The variable the key came from (or should come from), for messages.
    pub api_key_var: Option<String>,
    /// How the provider was chosen, for `agentls doctor`.
    pub chosen_by: String,
    /// The proxy and the extra certificate authorities requests go through.
    pub network: NetworkSettings,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ResolveError {
    #[error(
        "no model provider configured: set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY, \
         or start a local OpenAI-compatible server (Ollama, llama.cpp, vLLM) on 127.0.0.1:11434, \
         or choose one with --provider / AGENTLS_PROVIDER"
    )]
    NothingConfigured,
    #[error("provider {provider} needs an API key: set {var}")]
    MissingKey { provider: ProviderKind, var: String },
}

/// Address of the local OpenAI-compatible server tried when no key is set.
pub const LOCAL_FALLBACK: &str = "127.0.0.1:11434";

/// Resolves the provider. `local_server_up` is asked only when nothing else decides.
pub fn resolve_provider(
    config: &Config,
    env: &Env,
    local_server_up: impl FnOnce() -> bool,
) -> Result<ProviderSettings, ResolveError> {
    let (kind, chosen_by) = match config.layer.provider {
        Some(kind) => (kind, "configured".to_string()),
        None => {
            let by_key = [ProviderKind::Anthropic, ProviderKind::OpenAi, ProviderKind::Gemini]
                .into_iter()
                .find_map(|k| k.key_vars().iter().find(|v| env.get(v).is_some()).map(|v| (k, *v)));
            match by_key {
                Some((kind, var)) => (kind, format!("{var} is set")),
                None if local_server_up() => {
                    let mut s = settings_for(
                        config,
                        env,
                        ProviderKind::OpenAiChat,
                        "local server on 127.0.0.1:11434",
                    );
                    if config.provider_layer(ProviderKind::OpenAiChat).base_url.is_none() {
                        s.base_url = format!("http://{LOCAL_FALLBACK}/v1");
                    }
                    return Ok(s);
                }
                None => return Err(ResolveError::NothingConfigured),
            }
        }
    };
    let settings = settings_for(config, env, kind, &chosen_by);
    if kind.requires_key() && settings.api_key.is_none() {
        return Err(ResolveError::MissingKey {
            provider: kind,
            var: settings.api_key_var.clone().unwrap_or_default(),
        });
    }
    Ok(settings)
}

/// Where `codebase_search`'s search model is asked, when `[search]` names its own.
#[derive(Debug, Clone, PartialEq)]
pub enum SearchProvider {
    /// `[search] model` alone: the session's provider (and client) serves this model.
    SessionProvider { model: String },
    /// `[search] provider`: another provider, resolved as a session's would be.
    Own(ProviderSettings),
}

/// The provider and model `codebase_search` asks, when `[search]` names its own (`None`: the
/// session's). With a provider, that provider's settings (key, base URL, `model` or default
/// model) apply as for a session, never the session's model.
pub fn resolve_search_provider(config: &Config, env: &Env) -> Result<Option<SearchProvider>, ResolveError> {
    let search = config.search();
    let Some(kind) = search.provider else {
        return Ok(search.model.map(|model| SearchProvider::SessionProvider { model }));
    };
    let mut settings = settings_for(config, env, kind, "[search] provider");
    settings.model = search
        .model
        .or(config.provider_layer(kind).model)
        .unwrap_or_else(|| kind.default_model().to_string());
    if kind.requires_key() && settings.api_key.is_none() {
        return Err(ResolveError::MissingKey {
            provider: kind,
            var: settings.api_key_var.clone().unwrap_or_default(),
        });
    }
    Ok(Some(SearchProvider::Own(settings)))
}

fn settings_for(config: &Config, env: &Env, kind: ProviderKind, chosen_by: &str) -> ProviderSettings {
    let layer = config.provider_layer(kind);
    let model =
        config.layer.model.clone().or(layer.model).unwrap_or_else(|| kind.default_model().to_string());
    let base_url = layer
        .base_url
        .or_else(|| kind.base_url_var().and_then(|v| env.get(v)).map(str::to_string))
        .unwrap_or_else(|| kind.default_base_url().to_string())
        .trim_end_matches('/')
        .to_string();
    let key_vars: Vec<String> = match layer.api_key_env {
        Some(var) => vec![var],
        None => kind.key_vars().iter().map(|v| v.to_string()).collect(),
    };
    let found = key_vars.iter().find(|v| env.get(v).is_some());
    ProviderSettings {
        kind,
        model,
        base_url,
        api_key: found.and_then(|v| env.get(v)).map(Secret::new),
        api_key_var: found.or(key_vars.first()).cloned(),
        chosen_by: chosen_by.to_string(),
        network: NetworkSettings::resolve(config, env),
    }
}

/// True when something accepts TCP connections on the local fallback address (50 ms budget).
pub fn local_server_listening() -> bool {
    use std::net::{SocketAddr, TcpStream};
    let addr: SocketAddr = LOCAL_FALLBACK.parse().expect("constant address");
    TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(50)).is_ok()
}
