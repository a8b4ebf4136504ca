//! grep and glob against ripgrep on a large real tree (the cargo registry's unpacked sources):
//! `agentls tool grep|glob --cwd TREE ARGS` against `rg` with the same ignore rules
//! (`--no-require-git`: agentls honours .gitignore outside git repositories too). Both write to a
//! pipe this process drains (ripgrep stops at the first match per file when it sees /dev/null).
//! agentls gets output limits high enough that it prints every result, as rg does; the match
//! counts of both are compared, so a fast wrong answer shows. Wall time per run, fresh process,
//! warm page cache (one untimed run of each first), the two tools taking turns.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::stats::{median, ms};

/// One comparison: what agentls runs and what rg runs.
pub struct Case {
    pub name: &'static str,
    pub tool: &'static str,
    pub args: serde_json::Value,
    pub rg: Vec<&'static str>,
}

pub fn cases() -> Vec<Case> {
    use serde_json::json;
    vec![
        Case {
            name: "grep, literal `unsafe impl`",
            tool: "grep",
            args: json!({"pattern": "unsafe impl", "max_results": 100_000_000}),
            rg: vec!["-n", "--no-require-git", "unsafe impl"],
        },
        Case {
            name: r"grep, regex `fn \w+_mut\(`",
            tool: "grep",
            args: json!({"pattern": r"fn \w+_mut\(", "max_results": 100_000_000}),
            rg: vec!["-n", "--no-require-git", r"fn \w+_mut\("],
        },
        Case {
            name: "glob `**/*.rs`",
            tool: "glob",
            args: json!({"pattern": "**/*.rs"}),
            rg: vec!["--files", "--no-require-git", "-g", "*.rs"],
        },
        Case {
            name: "glob `**/*` (every file)",
            tool: "glob",
            args: json!({"pattern": "**/*"}),
            rg: vec!["--files", "--no-require-git"],
        },
    ]
}

#[derive(Debug, Clone, Default)]
pub struct CaseResult {
    pub agentls_ms: Vec<f64>,
    pub rg_ms: Vec<f64>,
    /// Result lines (matches or files) each printed.
    pub agentls_results: usize,
    pub rg_results: usize,
}

impl CaseResult {
    pub fn ratio(&self) -> Option<f64> {
        Some(median(&self.agentls_ms)? / median(&self.rg_ms)?)
    }
}

/// Runs `command`, draining its stdout; returns the wall time and the result lines.
fn timed(mut command: Command) -> Result<(f64, usize), String> {
    command.stdout(Stdio::piped()).stderr(Stdio::null()).stdin(Stdio::null());
    let began = Instant::now();
    let mut child = command.spawn().map_err(|e| format!("{command:?}: {e}"))?;
    let mut output = Vec::new();
    child.stdout.take().expect("piped").read_to_end(&mut output).map_err(|e| e.to_string())?;
    let status = child.wait().map_err(|e| e.to_string())?;
    let took = ms(began.elapsed());
    if !status.success() {
        return Err(format!("{command:?} exited with {status}"));
    }
    // agentls separates non-adjacent matches of a file with `--`; neither prints anything else.
    let results = output.split(|b| *b == b'\n').filter(|l| !l.is_empty() && *l != b"--").count();
    Ok((took, results))
}

pub struct Tools {
    pub agentls: PathBuf,
    pub rg: PathBuf,
    /// A configuration file with output limits no result set reaches.
    pub config: PathBuf,
}

fn agentls_command(tools: &Tools, tree: &Path, case: &Case) -> Command {
    let mut command = Command::new(&tools.agentls);
    command
        .args(["tool", case.tool, "--cwd"])
        .arg(tree)
        .arg(case.args.to_string())
        .env("AGENTLS_CONFIG", &tools.config)
        .env_remove("AGENTLS_LOG");
    command
}

fn rg_command(tools: &Tools, tree: &Path, case: &Case) -> Command {
    let mut command = Command::new(&tools.rg);
    command.args(&case.rg).current_dir(tree);
    command
}

pub fn measure(tools: &Tools, tree: &Path, runs: usize) -> Vec<(String, Result<CaseResult, String>)> {
    cases()
        .into_iter()
        .map(|case| {
            let result = (|| {
                let mut result = CaseResult::default();
                (_, result.agentls_results) = timed(agentls_command(tools, tree, &case))?;
                (_, result.rg_results) = timed(rg_command(tools, tree, &case))?;
                for _ in 0..runs {
                    result.agentls_ms.push(timed(agentls_command(tools, tree, &case))?.0);
                    result.rg_ms.push(timed(rg_command(tools, tree, &case))?.0);
                }
                Ok(result)
            })();
            (case.name.to_string(), result)
        })
        .collect()
}

/// Writes the configuration that lifts agentls's output limits for these tools.
pub fn unlimited_config(dir: &Path) -> std::io::Result<PathBuf> {
    let path = dir.join("unlimited-output.toml");
    std::fs::write(
        &path,
        "[tool_output_limits]\ngrep = 1000000000\nglob = 1000000000\n\n[tool_line_limits]\ngrep = 100000000\nglob = 100000000\n",
    )?;
    Ok(path)
}
