//! `agentls tool NAME [--cwd DIR] [--profile P] ARGS_JSON|-`: runs one tool of a profile against
//! a directory, with no model, edits committed to disk and commands allowed, and prints exactly
//! what the model would receive (the truncated output).
//!
//! Exit codes: 0 the tool succeeded, 1 the tool reported an error (its message is printed as the
//! model would see it), 2 usage errors (unknown tool or profile, arguments that are not a JSON
//! object, a missing directory, bad configuration).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{ToolArgs, load_config};
use crate::config::{Approval, Config, ConfigLayer, Env, ProfileKind};
use crate::exec::{ExecutionEnvironment, LocalExecutionEnvironment, LocalOptions};
use crate::policy::{PermissionRules, PolicedPort, ShellPolicy};
use crate::tools::profiles::{ToolSetOptions, profile_tools};
use crate::tools::registry::ToolRegistry;
use crate::tools::truncate::TruncationPolicy;
use crate::tools::{ToolContext, ToolImage};
use crate::workspace::{DiskPort, ReadTracker, Workspace};

const USAGE_ERROR: u8 = 2;

fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("agentls tool: {message}");
    ExitCode::from(USAGE_ERROR)
}

/// The profile a session would use: the configured `profile`, else the configured provider's.
fn configured_profile(config: &Config) -> Option<ProfileKind> {
    config.profile(None, config.layer.provider)
}

/// The registry to use: the named profile, else the first profile (configured one first) that
/// has the tool.
fn pick_registry(
    name: &str,
    profile: Option<&str>,
    config: &Config,
    options: &ToolSetOptions,
) -> Result<ToolRegistry, String> {
    if let Some(profile) = profile {
        let profile: ProfileKind = profile.parse()?;
        let registry = profile_tools(profile, options);
        if registry.get(name).is_none() {
            return Err(format!(
                "the {} profile has no tool `{name}`; its tools are: {}",
                profile.as_str(),
                registry.names().join(", ")
            ));
        }
        return Ok(registry);
    }
    let order = configured_profile(config).into_iter().chain(ProfileKind::ALL);
    let mut known = Vec::new();
    for profile in order {
        let registry = profile_tools(profile, options);
        // Exact names only: an alias must not pick another profile's look-alike tool.
        if registry.names().iter().any(|n| n == name) {
            return Ok(registry);
        }
        known.extend(registry.names());
    }
    known.sort();
    known.dedup();
    Err(format!("unknown tool `{name}`; available tools: {}", known.join(", ")))
}

fn read_arguments(tool: &str, raw: &str) -> Result<serde_json::Value, String> {
    let text = if raw == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read arguments from stdin: {e}"))?;
        text
    } else {
        raw.to_string()
    };
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(value) if value.is_object() => Ok(value),
        // A raw patch (of any size) on stdin for apply_patch, passed on without a copy.
        Err(_) if tool == "apply_patch" && text.contains("*** Begin Patch") => {
            let mut args = serde_json::Map::new();
            args.insert("patch".to_string(), serde_json::Value::String(text));
            Ok(serde_json::Value::Object(args))
        }
        Ok(_) => Err("the arguments must be a JSON object, e.g. '{\"file_path\": \"src/main.rs\"}'".into()),
        Err(e) => Err(format!("the arguments are not valid JSON: {e}")),
    }
}

pub fn run(env: &Env, args: ToolArgs) -> Result<ExitCode, String> {
    let cwd = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    let cwd: PathBuf = match cwd.canonicalize() {
        Ok(dir) if dir.is_dir() => dir,
        Ok(dir) => return Ok(usage_error(format!("{} is not a directory", dir.display()))),
        Err(e) => return Ok(usage_error(format!("cannot use --cwd {}: {e}", cwd.display()))),
    };
    let config = match load_config(env, Some(cwd.clone()), ConfigLayer::default()) {
        Ok(config) => config,
        Err(message) => return Ok(usage_error(message)),
    };
    crate::logging::init(&config, env, false);
    if let Some(report) = config.trust.as_ref().and_then(|t| t.report()) {
        eprintln!("agentls: {report}");
    }

    let options = ToolSetOptions { read_before_edit: false };
    let mut registry = match pick_registry(&args.name, args.profile.as_deref(), &config, &options) {
        Ok(registry) => registry,
        Err(message) => return Ok(usage_error(message)),
    };
    registry.set_truncation(TruncationPolicy::new(
        config.layer.tool_output_limits.clone().unwrap_or_default(),
        config.layer.tool_line_limits.clone().unwrap_or_default(),
    ));
    let arguments = match read_arguments(&args.name, &args.args) {
        Ok(arguments) => arguments,
        Err(message) => return Ok(usage_error(message)),
    };

    let local_options = LocalOptions::from_config(&config, &cwd);
    let limits = local_options.limits.clone();
    let exec_env: Arc<dyn ExecutionEnvironment> =
        Arc::new(LocalExecutionEnvironment::with_options(local_options));
    let cancel = CancellationToken::new();
    let ctx = ToolContext {
        env: Arc::clone(&exec_env),
        workspace: Arc::new(Workspace::default()),
        // The user typed this call, so the port allows what the policy would ask about; what
        // the policy denies stays denied.
        editor: Arc::new(PolicedPort::new(
            Arc::new(DiskPort::new(Arc::clone(&exec_env), Approval::Auto)),
            ShellPolicy::new(
                &config.shell(),
                cwd.clone(),
                Arc::new(PermissionRules::open(crate::store::data_dir(env).as_deref())),
            ),
        )),
        reads: Arc::new(ReadTracker::new()),
        cwd,
        call_id: "cli".to_string(),
        shell: limits,
        cancel: cancel.clone(),
        model: None,
        output: None,
        agents: None,
    };

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let outcome = runtime.block_on(async {
        let interrupt = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        });
        let outcome = registry.execute_value(&args.name, arguments, &ctx).await;
        exec_env.cleanup().await;
        interrupt.abort();
        outcome
    });

    let mut stdout = std::io::stdout().lock();
    let mut text = outcome.model_content;
    for image in &outcome.images {
        text.push_str(&image_note(image));
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    stdout.write_all(text.as_bytes()).map_err(|e| format!("cannot write the output: {e}"))?;
    stdout.flush().map_err(|e| format!("cannot write the output: {e}"))?;
    Ok(if outcome.is_error { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn image_note(image: &ToolImage) -> String {
    format!("\n[image part for the model: {}, {} bytes]", image.media_type, image.data.len())
}
