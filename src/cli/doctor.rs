//! `agentls doctor [--ping]`: what configuration resolved to, which keys are present (never their
//! values), where logs go, how sessions measure their context; `--ping` sends one tiny streamed
//! request and prints reply, latency and how the provider's token count calibrates the estimate;
//! `--prompt [--profile P]` prints the final system prompt and where each section came from.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::{DoctorArgs, load_config};
use crate::config::{
    Config, Env, ProviderKind, ProviderSettings, SearchProvider, ShellPermission, TrustStore,
    provider::local_server_listening, resolve_provider, resolve_search_provider,
};
use crate::llm::{Client, LlmError, Message, Request, RetryPolicy, StreamEvent, Usage};
use crate::logging;
use crate::profiles::ProfileKind;
use crate::profiles::{EnvironmentInfo, PromptOverrides, SystemPrompt, ToolSummary, discover_project_docs};
use crate::session::SessionConfig;
use crate::session::context::{Calibration, request_chars};

pub fn run(env: &Env, args: DoctorArgs) -> Result<ExitCode, String> {
    let config = load_config(env, args.cwd.clone(), args.model.layer())?;
    let log = logging::init(&config, env, false);
    if args.prompt {
        return print_prompt(env, &config, &args);
    }
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
    print_trust(&config, env);
    println!("shell permission: {}", shell_permission(&config));
    println!("log (this command): {log}");
    println!("log (server mode): {}", logging::target(&config, true));
    let settings = resolve_provider(&config, env, local_server_listening).map_err(|e| e.to_string())?;
    println!("provider: {} ({})", settings.kind, settings.chosen_by);
    println!("model: {}", settings.model);
    println!("base url: {}", settings.base_url);
    if let Some(var) = &settings.api_key_var {
        println!("key variable: {var} ({})", if settings.api_key.is_some() { "set" } else { "not set" });
    }
    print_network(&settings);
    println!("search model (codebase_search): {}", search_model(&config, env));
    print_context(&config, &settings);
    print_mcp(&config, env, args.cwd.clone())?;
    if args.ping {
        ping(&config, settings)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The project folder's trust and every project key it keeps from applying.
fn print_trust(config: &Config, env: &Env) {
    let Some(trust) = &config.trust else {
        println!("workspace trust: no project file");
        return;
    };
    if trust.trusted {
        let store = TrustStore::for_user(env);
        let store = store.file().map(|f| format!(" ({})", f.display())).unwrap_or_default();
        println!("workspace trust: {} is trusted{store}", trust.root.display());
        return;
    }
    if trust.ignored.is_empty() {
        println!("workspace trust: not trusted; {} sets nothing that needs trust", trust.file.display());
        return;
    }
    println!("workspace trust: not trusted; these keys of {} are ignored:", trust.file.display());
    for key in &trust.ignored {
        println!("  {}: {}", key.key, key.reason);
    }
    println!("  to apply them, trust the folder: {}", trust.grant_command());
}

/// The MCP servers, started as a session would start them: state, tools, last error.
fn print_mcp(config: &Config, env: &Env, cwd: Option<std::path::PathBuf>) -> Result<(), String> {
    let has_servers = config.layer.mcp_servers.as_ref().is_some_and(|s| !s.is_empty())
        || config.trust.as_ref().is_some_and(|t| !t.withheld_mcp_servers.is_empty());
    if !has_servers {
        println!("mcp servers: none");
        return Ok(());
    }
    let root = match cwd {
        Some(dir) => dir,
        None => std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let hub = crate::mcp::McpHub::one_look();
        let servers = hub.session(config, env, &root);
        servers.wait_started().await;
        println!("mcp servers:");
        super::mcp::print_list(&servers, "  ");
        for entry in servers.entries().iter().filter(|e| e.state() == crate::mcp::EntryState::Running) {
            let names: Vec<String> = entry.tools().iter().map(|t| t.name.to_string()).collect();
            println!("  {} tools: {}", entry.name, names.join(", "));
        }
        hub.shutdown().await;
    });
    Ok(())
}

/// How requests reach the provider: the proxy (never its credentials) and the trusted
/// certificate authorities.
fn print_network(settings: &ProviderSettings) {
    let network = &settings.network;
    let route = match url::Url::parse(&settings.base_url).ok().as_ref().and_then(|u| network.proxy_for(u)) {
        Some(proxy) => format!("through the proxy {} ({})", proxy.url, proxy.source),
        None if network.proxies.is_empty() => "direct (no proxy set)".to_string(),
        None => "direct (NO_PROXY names the host)".to_string(),
    };
    println!("network: {route}");
    if let Some(no_proxy) = &network.no_proxy {
        println!("  no proxy for: {no_proxy}");
    }
    match crate::llm::http::trusted_roots(network) {
        Ok(roots) => {
            let mut trusted = vec![
                "the bundled roots (Mozilla's)".to_string(),
                format!("the system store ({} certificates)", roots.system),
            ];
            for (file, count) in &roots.files {
                trusted.push(format!("{} {} ({count} certificates)", file.source, file.path.display()));
            }
            println!("  trusted certificate authorities: {}", trusted.join(", "));
        }
        Err(LlmError::Connection { message, .. }) => {
            println!("  trusted certificate authorities: unusable: {message}")
        }
        Err(e) => println!("  trusted certificate authorities: unusable: {e}"),
    }
}

/// The shell permission policy in force, as every host applies it.
fn shell_permission(config: &Config) -> String {
    let shell = config.shell();
    let mode = shell.permission.unwrap_or(ShellPermission::Ask);
    let mode = match mode {
        ShellPermission::Ask => "ask",
        ShellPermission::Allow => "allow",
        ShellPermission::Deny => "deny",
    };
    match shell.allow.filter(|a| !a.is_empty()) {
        Some(allow) => format!("{mode}; allowed without asking: {}", allow.join(", ")),
        None => mode.to_string(),
    }
}

/// Which model `codebase_search` asks, as `[search]` resolves.
fn search_model(config: &Config, env: &Env) -> String {
    let model = match resolve_search_provider(config, env) {
        Ok(None) => "the session's".into(),
        Ok(Some(SearchProvider::SessionProvider { model })) => format!("{model} (the session's provider)"),
        Ok(Some(SearchProvider::Own(s))) => format!("{} ({}, {})", s.model, s.kind, s.base_url),
        Err(error) => return format!("unusable: {error}"),
    };
    match config.search().native_tools {
        Some(false) => format!("{model}; tool calls in the XML form only"),
        _ => model,
    }
}

/// How sessions measure and manage their context with this configuration.
fn print_context(config: &Config, settings: &ProviderSettings) {
    let session = SessionConfig::from_config(config, settings.model.clone());
    let window = match session.context_window_tokens {
        Some(tokens) => format!("{tokens} tokens (context_window_tokens)"),
        None => format!(
            "{} tokens (known figure for {}; context_window_tokens overrides it)",
            config
                .profile(None, Some(settings.kind))
                .unwrap_or_else(|| ProfileKind::for_provider(settings.kind))
                .context_window(&settings.model),
            settings.model
        ),
    };
    println!("context window: {window}");
    println!(
        "token estimate: characters / {} (context.chars_per_token), calibration 1.00 until a provider \
         reports its count (--ping measures it)",
        session.chars_per_token
    );
    let summaries = session.compaction_model.as_deref().unwrap_or("the session's model");
    if session.auto_compact {
        println!(
            "compaction: automatic at {}% of the window, keeps the last {} exchanges, summaries by {summaries}",
            session.auto_compact_percent, session.keep_exchanges
        );
    } else {
        println!(
            "compaction: on request and on overflow only (context.auto_compact = false), keeps the last {} \
             exchanges, summaries by {summaries}",
            session.keep_exchanges
        );
    }
}

/// `--prompt`: the system prompt a new session in the working directory would send, after the
/// list of its sections and their sources and any problem with the user's overrides.
fn print_prompt(env: &Env, config: &Config, args: &DoctorArgs) -> Result<ExitCode, String> {
    let cwd = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    let cwd =
        cwd.canonicalize().map_err(|e| format!("working directory {} is not usable: {e}", cwd.display()))?;
    let settings = resolve_provider(config, env, local_server_listening).ok();
    let profile = config
        .profile(args.profile, settings.as_ref().map(|s| s.kind))
        .ok_or("no provider is configured, so no profile follows from it: pass --profile openai|anthropic|gemini|code")?;
    let model =
        settings.map(|s| s.model).or_else(|| config.layer.model.clone()).unwrap_or_else(|| "unknown".into());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let environment = runtime.block_on(EnvironmentInfo::capture(&cwd, &model));
    let session = SessionConfig::from_config(config, model);
    let docs = discover_project_docs(&cwd, profile);
    let overrides =
        PromptOverrides::load(profile, &session.prompt, session.user_prompts_dir.as_deref(), &cwd);
    let code_blocks = profile == ProfileKind::Code && !session.code.uses_tool_calls();
    let tools: Vec<ToolSummary> = if code_blocks { Vec::new() } else { profile.tools() }
        .iter()
        .map(|t| ToolSummary { name: t.name().to_string(), description: t.description().to_string() })
        .collect();
    let prompt = SystemPrompt {
        profile,
        environment: &environment,
        tools: &tools,
        project_docs: &docs,
        user_instructions: session.instructions.as_deref(),
        one_call_per_step: session.one_call_per_step,
        code: &session.code,
        overrides: &overrides,
    };
    let rendered = prompt.render();
    let task = prompt.task_message("(the task)");
    println!("profile: {profile}");
    println!("sections:");
    for section in &rendered.sections {
        let empty = if section.text.is_empty() { " (empty here)" } else { "" };
        println!("  {}: {}{empty}", section.section, section.source);
    }
    let task_problems = task.as_ref().map(|(_, p)| p.clone()).unwrap_or_default();
    for problem in rendered.problems.iter().chain(&task_problems) {
        println!("warning: {problem}");
    }
    println!("--- system prompt ---");
    println!("{}", rendered.text);
    if let Some((message, _)) = task {
        println!("--- task message ---");
        println!("{message}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The prompt of `--ping`: small, and answerable without tools or thinking.
const PING_PROMPT: &str = "Reply with one short sentence to confirm you can hear me.";
/// Room for a short answer even when a reasoning model thinks a little first.
const PING_MAX_TOKENS: u32 = 1024;
/// A ping that has not finished by then is reported as failed (covers retries).
const PING_TIMEOUT: Duration = Duration::from_secs(300);

/// Streams one tiny request and prints the reply as it arrives, then the latency.
fn ping(config: &Config, settings: ProviderSettings) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let client = Client::from_config(config, settings).map_err(|e| format!("ping failed: {e}"))?;
    let mut request = Request::new(client.settings().model.clone(), vec![Message::user(PING_PROMPT)]);
    request.max_tokens = Some(PING_MAX_TOKENS);
    println!("ping: sending one request to {} ...", client.settings().base_url);
    let mut calibration =
        Calibration::new(SessionConfig::from_config(config, request.model.clone()).chars_per_token);
    let estimate = calibration.raw_tokens(request_chars(&request));
    let retries = config.network().max_retries.unwrap_or(RetryPolicy::default().max_retries);
    let outcome = runtime.block_on(async {
        tokio::time::timeout(PING_TIMEOUT, stream_reply(&client, &request, retries))
            .await
            .unwrap_or_else(|_| Err(format!("no complete answer within {} s", PING_TIMEOUT.as_secs())))
    });
    match outcome {
        Ok(report) => {
            println!("latency: {} ms to first output, {} ms total", report.first_ms, report.total_ms);
            println!("tokens: {} in, {} out", report.usage.input_tokens, report.usage.output_tokens);
            calibration.observe(estimate, report.usage.input_tokens);
            if calibration.samples() > 0 {
                println!(
                    "calibration: estimated {estimate} input tokens, the provider counted {}: factor {:.2}",
                    report.usage.input_tokens,
                    calibration.factor()
                );
            } else {
                println!("calibration: the provider reported no input tokens");
            }
            Ok(())
        }
        Err(message) => Err(format!("ping failed: {message}")),
    }
}

struct PingReport {
    first_ms: u128,
    total_ms: u128,
    usage: Usage,
}

async fn stream_reply(client: &Client, request: &Request, retries: u32) -> Result<PingReport, String> {
    let started = Instant::now();
    let describe = |e: LlmError| match (e.is_retryable(), retries) {
        (false, _) => e.to_string(),
        (true, 0) => format!("{e} (no retries: network.max_retries = 0)"),
        (true, n) => format!("{e} (gave up after {n} retries)"),
    };
    let mut stream = client.stream(request).await.map_err(describe)?;
    let mut first = None;
    let mut printed = false;
    let mut out = std::io::stdout();
    print!("reply: ");
    while let Some(item) = stream.next().await {
        match item.map_err(describe)? {
            StreamEvent::TextDelta(text) => {
                first.get_or_insert_with(|| started.elapsed());
                printed = true;
                print!("{text}");
                let _ = out.flush();
            }
            StreamEvent::ThinkingDelta(_) => {
                first.get_or_insert_with(|| started.elapsed());
            }
            StreamEvent::Finish(response) => {
                if !printed {
                    print!("(no text in the reply; finish reason: {})", String::from(response.finish_reason));
                }
                println!();
                let total = started.elapsed();
                return Ok(PingReport {
                    first_ms: first.unwrap_or(total).as_millis(),
                    total_ms: total.as_millis(),
                    usage: response.usage,
                });
            }
            _ => {}
        }
    }
    println!();
    Err("the stream ended without a final event".into())
}
