//! A configured server resolved against the environment: what to start or reach, with which
//! variables and headers, and its limits.
//!
//! Invariant: a program's environment is the core variables (PATH, HOME, locale, …) without
//! secrets, plus exactly what the configuration names (`env`, `env_vars`, `${VAR}`); an HTTP
//! server gets only the headers the configuration names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::mcp::substitute;
use crate::config::{Env, NetworkSettings};
use crate::config::{EnvPolicy, McpServerLayer};
use crate::exec::filter_environment;

/// How long a prompt waits for a server to start when `startup_timeout_ms` is not set.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one tool call may run when `tool_timeout_ms` is not set.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// How the server is reached.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Transport {
    /// A program speaking MCP on its stdin and stdout.
    Stdio { command: String, args: Vec<String>, env: Vec<(String, String)>, cwd: PathBuf },
    /// A Streamable HTTP endpoint, reached through `network` (the proxy and trusted CAs of the
    /// model requests: `llm::http`).
    Http { url: String, headers: Vec<(String, String)>, network: NetworkSettings },
}

impl std::fmt::Debug for Transport {
    // Values of variables and headers may be secrets: only their names are shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stdio { command, args, env, cwd } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.iter().map(|(k, _)| k).collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            Self::Http { url, headers, network } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &headers.iter().map(|(k, _)| k).collect::<Vec<_>>())
                // A proxy URL shows without its credentials.
                .field("network", network)
                .finish(),
        }
    }
}

/// One server, ready to start.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServerSpec {
    pub name: String,
    pub transport: Transport,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
}

impl ServerSpec {
    /// What the server is, for a person: the command line or the URL.
    pub fn describe(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Transport::Http { url, .. } => url.clone(),
        }
    }

    /// Resolves `layer` (server `name` of the configuration) for a workspace at `root`; an HTTP
    /// server is reached through `network`. The error says which key is wrong and what to do.
    pub fn resolve(
        name: &str,
        layer: &McpServerLayer,
        env: &Env,
        root: &Path,
        network: &NetworkSettings,
    ) -> Result<Self, String> {
        let key = format!("mcp_servers.{name}");
        let expand = |value: &str, what: &str| expand(value, env).map_err(|e| format!("`{key}.{what}`: {e}"));
        let transport = match (&layer.command, &layer.url) {
            (Some(command), None) => {
                let mut vars = filter_environment(EnvPolicy::CoreOnly, env.iter());
                let mut set = |name: &str, value: String| {
                    vars.retain(|(k, _)| k != name);
                    vars.push((name.to_string(), value));
                };
                for var in layer.env_vars.iter().flatten() {
                    match env.get(var) {
                        Some(value) => set(var, value.to_string()),
                        None => tracing::info!(server = %name, "{var} (in env_vars) is not set"),
                    }
                }
                for (var, value) in layer.env.iter().flatten() {
                    set(var, expand(value, &format!("env.{var}"))?);
                }
                let cwd = match &layer.cwd {
                    Some(dir) => root.join(expand(&dir.to_string_lossy(), "cwd")?),
                    None => root.to_path_buf(),
                };
                let args =
                    layer.args.iter().flatten().map(|a| expand(a, "args")).collect::<Result<Vec<_>, _>>()?;
                Transport::Stdio { command: expand(command, "command")?, args, env: vars, cwd }
            }
            (None, Some(url)) => {
                let mut headers = Vec::new();
                for (header, value) in layer.http_headers.iter().flatten() {
                    headers.push((header.clone(), expand(value, &format!("http_headers.{header}"))?));
                }
                for (header, var) in layer.env_http_headers.iter().flatten() {
                    let value = env.get(var).ok_or_else(|| {
                        format!("`{key}.env_http_headers.{header}` names ${var}, which is not set")
                    })?;
                    headers.push((header.clone(), value.to_string()));
                }
                if let Some(var) = &layer.bearer_token_env_var {
                    let token = env.get(var).ok_or_else(|| {
                        format!("`{key}.bearer_token_env_var` names ${var}, which is not set")
                    })?;
                    headers.push(("Authorization".into(), format!("Bearer {token}")));
                }
                Transport::Http { url: expand(url, "url")?, headers, network: network.clone() }
            }
            (Some(_), Some(_)) => return Err(format!("`{key}` sets both `command` and `url`; keep one")),
            (None, None) => {
                return Err(format!(
                    "`{key}` has no `command` (a program on stdio) or `url` (Streamable HTTP)"
                ));
            }
        };
        let ms = |value: Option<u64>, default: Duration| value.map(Duration::from_millis).unwrap_or(default);
        Ok(Self {
            name: name.to_string(),
            transport,
            startup_timeout: ms(layer.startup_timeout_ms, DEFAULT_STARTUP_TIMEOUT),
            tool_timeout: ms(layer.tool_timeout_ms, DEFAULT_TOOL_TIMEOUT),
        })
    }
}

/// Replaces `${VAR}` and `${VAR:-default}` with the variable of `env`; a variable that is not
/// set and has no default is an error.
pub fn expand(value: &str, env: &Env) -> Result<String, String> {
    substitute(value, |inner| {
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (env.get(name), default) {
            (Some(v), _) => Ok(v.to_string()),
            (None, Some(d)) => Ok(d.to_string()),
            (None, None) => Err(format!("${{{name}}} is not set")),
        }
    })
}

/// Each configured server by name: its spec, or why it cannot start.
pub fn resolve_all(
    servers: &BTreeMap<String, McpServerLayer>,
    env: &Env,
    root: &Path,
    network: &NetworkSettings,
) -> BTreeMap<String, Result<ServerSpec, String>> {
    servers
        .iter()
        .map(|(name, layer)| (name.clone(), ServerSpec::resolve(name, layer, env, root, network)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env::from_pairs([
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("GITHUB_TOKEN", "gh-secret"),
            ("PROJECT_FLAG", "1"),
            ("DOCS_KEY", "docs-secret"),
        ])
    }

    #[test]
    fn a_program_gets_core_variables_and_only_the_secrets_the_config_names() {
        let layer = McpServerLayer {
            command: Some("server".into()),
            args: Some(vec!["--home".into(), "${HOME}".into()]),
            env: Some(BTreeMap::from([("TOKEN".into(), "${GITHUB_TOKEN}".into())])),
            env_vars: Some(vec!["PROJECT_FLAG".into()]),
            cwd: Some("tools".into()),
            ..Default::default()
        };
        let spec =
            ServerSpec::resolve("gh", &layer, &env(), Path::new("/w"), &NetworkSettings::default()).unwrap();
        let Transport::Stdio { command, args, env, cwd } = spec.transport else { panic!() };
        assert_eq!(
            (command.as_str(), args, cwd),
            ("server", vec!["--home".into(), "/home/u".into()], "/w/tools".into())
        );
        let mut env = env;
        env.sort();
        assert_eq!(
            env,
            [("HOME", "/home/u"), ("PATH", "/usr/bin"), ("PROJECT_FLAG", "1"), ("TOKEN", "gh-secret")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
        );
    }

    #[test]
    fn headers_come_from_variables_by_name() {
        let layer = McpServerLayer {
            url: Some("https://docs.example/mcp".into()),
            env_http_headers: Some(BTreeMap::from([("X-Key".into(), "DOCS_KEY".into())])),
            bearer_token_env_var: Some("GITHUB_TOKEN".into()),
            http_headers: Some(BTreeMap::from([("X-Team".into(), "core".into())])),
            ..Default::default()
        };
        let spec = ServerSpec::resolve("docs", &layer, &env(), Path::new("/w"), &NetworkSettings::default())
            .unwrap();
        assert_eq!(
            spec.transport,
            Transport::Http {
                url: "https://docs.example/mcp".into(),
                headers: [
                    ("X-Team", "core"),
                    ("X-Key", "docs-secret"),
                    ("Authorization", "Bearer gh-secret")
                ]
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .to_vec(),
                network: NetworkSettings::default(),
            }
        );
        assert!(!format!("{spec:?}").contains("secret"), "{spec:?}");
        let missing = McpServerLayer { bearer_token_env_var: Some("NOPE".into()), ..layer };
        let error =
            ServerSpec::resolve("docs", &missing, &env(), Path::new("/w"), &NetworkSettings::default())
                .unwrap_err();
        assert_eq!(error, "`mcp_servers.docs.bearer_token_env_var` names $NOPE, which is not set");
    }

    #[test]
    fn expansion_takes_defaults_and_names_what_is_missing() {
        assert_eq!(expand("a${HOME}b${NOPE:-x}", &env()).unwrap(), "a/home/ub x".replace(' ', ""));
        assert_eq!(expand("${NOPE}", &env()).unwrap_err(), "${NOPE} is not set");
    }
}
