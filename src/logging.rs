//! Logging through `tracing`, to stderr or a file — never stdout, which is the LSP wire.
//!
//! The filter comes from `AGENTLS_LOG` (then the config's `log.filter`, then the mode's default):
//! comma-separated `level` and `target=level` directives (`agentls=debug,warn`). It is parsed
//! without regular expressions (`filter::Targets`), so starting the server compiles none.
//! HTTP internals (hyper, h2, reqwest, rustls) are capped at `info` unless the filter names them,
//! so header values never reach a log even at `trace`.

use std::path::{Path, PathBuf};

use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::config::{Config, Env};

/// Where logs go.
#[derive(Debug, Clone, PartialEq)]
pub enum LogTarget {
    Stderr,
    File(PathBuf),
}

impl std::fmt::Display for LogTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stderr => f.write_str("stderr"),
            Self::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// The default log file of server mode: `<state dir>/agentls/agentls.log`.
pub fn default_log_file() -> Option<PathBuf> {
    dirs::state_dir().or_else(dirs::data_local_dir).map(|d| d.join("agentls").join("agentls.log"))
}

/// Where logs go for this config: the configured file, else the default file in server mode,
/// else stderr.
pub fn target(config: &Config, server_mode: bool) -> LogTarget {
    let configured = config.layer.log.as_ref().and_then(|l| l.file.clone());
    match configured.or_else(|| server_mode.then(default_log_file).flatten()) {
        Some(p) => LogTarget::File(p),
        None => LogTarget::Stderr,
    }
}

fn filter(config: &Config, env: &Env, default: &str) -> String {
    let base = env
        .get("AGENTLS_LOG")
        .map(str::to_string)
        .or_else(|| config.layer.log.as_ref().and_then(|l| l.filter.clone()))
        .unwrap_or_else(|| default.to_string());
    let mut directives = base;
    for noisy in ["hyper", "hyper_util", "h2", "reqwest", "rustls"] {
        if !directives.contains(noisy) {
            directives.push_str(&format!(",{noisy}=info"));
        }
    }
    directives
}

fn open_log_file(path: &Path) -> std::io::Result<std::fs::File> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::OpenOptions::new().create(true).append(true).open(path)
}

/// Installs the global subscriber. Falls back to stderr when the log file cannot be opened.
/// Returns where logs actually go.
pub fn init(config: &Config, env: &Env, server_mode: bool) -> LogTarget {
    let default = if server_mode { "info" } else { "warn" };
    let filter: Targets = filter(config, env, default).parse().unwrap_or_else(|e| {
        eprintln!("agentls: ignoring invalid AGENTLS_LOG filter: {e}");
        default.parse().unwrap_or_default()
    });
    let mut target = target(config, server_mode);
    let writer = match &target {
        LogTarget::File(path) => match open_log_file(path) {
            Ok(file) => BoxMakeWriter::new(std::sync::Mutex::new(file)),
            Err(e) => {
                eprintln!("agentls: cannot open log file {}: {e}; logging to stderr", path.display());
                target = LogTarget::Stderr;
                BoxMakeWriter::new(std::io::stderr)
            }
        },
        LogTarget::Stderr => BoxMakeWriter::new(std::io::stderr),
    };
    let _ = tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(false))
        .with(filter)
        .try_init();
    target
}
