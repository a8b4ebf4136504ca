//! `agentls doctor [--ping]`: what configuration resolved to, which keys are present (never their
//! values), where logs go; `--ping` sends one tiny streamed request and prints reply and latency.

use std::process::ExitCode;

use super::{DoctorArgs, load_config};
use crate::config::{Env, ProviderKind, provider::local_server_listening, resolve_provider};
use crate::logging;

pub fn run(env: &Env, args: DoctorArgs) -> Result<ExitCode, String> {
    let config = load_config(env, None, args.model.layer())?;
    let log = logging::init(&config, env, false);
    println!("agentls {}", env!("CARGO_PKG_VERSION"));
    println!("config files:");
    for source in &config.sources {
        println!("  {} ({})", source.origin, if source.found { "read" } else { "not found" });
    }
    println!("api keys:");
    let mut vars: Vec<&str> = ProviderKind::ALL.iter().flat_map(|k| k.key_vars().iter().copied()).collect();
    vars.sort_unstable();
    vars.dedup();
    for var in vars {
        println!("  {var}: {}", if env.get(var).is_some() { "set" } else { "not set" });
    }
    println!("log (this command): {log}");
    println!("log (server mode): {}", logging::target(&config, true));
    let settings = resolve_provider(&config, env, local_server_listening).map_err(|e| e.to_string())?;
    println!("provider: {} ({})", settings.kind, settings.chosen_by);
    println!("model: {}", settings.model);
    println!("base url: {}", settings.base_url);
    if let Some(var) = &settings.api_key_var {
        println!("key variable: {var} ({})", if settings.api_key.is_some() { "set" } else { "not set" });
    }
    if args.ping {
        return Err("--ping is not available in this build yet".into());
    }
    Ok(ExitCode::SUCCESS)
}
