//! Conformance scenarios for the editing tools: each folder under tests/fixtures/patch holds an
//! input tree (`before/`), a patch (`patch.txt`, for apply_patch) or a tool call (`call.json`),
//! and either the expected tree (`after/`) or the error (`error.txt`: every line must appear in
//! the error, and the tree must be left untouched). `output.txt` lines must appear in the output.
//! Each scenario runs through the tool registry with the real disk committer on a temp dir.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentls::config::Approval;
use agentls::config::ProfileKind;
use agentls::exec::ShellLimits;
use agentls::exec::{ExecutionEnvironment, LocalExecutionEnvironment};
use agentls::tools::ToolContext;
use agentls::tools::profiles::{ToolSetOptions, profile_tools};
use agentls::workspace::{DiskPort, ReadTracker, Workspace};
use tokio_util::sync::CancellationToken;

fn read_tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut tree = BTreeMap::new();
    if !root.exists() {
        return tree;
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                tree.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    tree
}

fn write_tree(root: &Path, tree: &BTreeMap<String, Vec<u8>>) {
    for (relative, bytes) in tree {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

fn profile_for(tool: &str) -> ProfileKind {
    match tool {
        "edit_file" => ProfileKind::Anthropic,
        "replace" => ProfileKind::Gemini,
        _ => ProfileKind::OpenAi,
    }
}

/// Runs one scenario; returns a description of the mismatch, if any.
async fn run_scenario(dir: &Path) -> Result<(), String> {
    let before = read_tree(&dir.join("before"));
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("project");
    std::fs::create_dir(&root).unwrap();
    write_tree(&root, &before);
    let root = root.canonicalize().unwrap();

    let (tool, args) = if dir.join("patch.txt").exists() {
        let patch = std::fs::read_to_string(dir.join("patch.txt")).unwrap();
        ("apply_patch".to_string(), serde_json::json!({ "patch": patch }))
    } else {
        let call: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("call.json")).unwrap())
                .map_err(|error| format!("call.json: {error}"))?;
        (call["tool"].as_str().unwrap().to_string(), call["args"].clone())
    };
    let registry = profile_tools(profile_for(&tool), &ToolSetOptions { read_before_edit: false });
    let env: Arc<dyn ExecutionEnvironment> = Arc::new(LocalExecutionEnvironment::new(root.clone()));
    let ctx = ToolContext {
        env: Arc::clone(&env),
        workspace: Arc::new(Workspace::default()),
        editor: Arc::new(DiskPort::new(env, Approval::Auto)),
        reads: Arc::new(ReadTracker::new()),
        cwd: root.clone(),
        call_id: "conformance".into(),
        shell: ShellLimits::default(),
        cancel: CancellationToken::new(),
        model: None,
        output: None,
        agents: None,
    };
    let outcome = registry.execute(&tool, &args.to_string(), &ctx).await;
    let after = read_tree(&root);

    if let Ok(expected_error) = std::fs::read_to_string(dir.join("error.txt")) {
        if !outcome.is_error {
            return Err(format!("expected an error, got success:\n{}", outcome.content));
        }
        for needle in expected_error.lines().filter(|line| !line.is_empty()) {
            if !outcome.content.contains(needle) {
                return Err(format!("the error lacks `{needle}`:\n{}", outcome.content));
            }
        }
        if after != before {
            return Err("a failed call changed the tree".into());
        }
    } else {
        if outcome.is_error {
            return Err(format!("unexpected error:\n{}", outcome.content));
        }
        let expected = read_tree(&dir.join("after"));
        if after != expected {
            let show = |tree: &BTreeMap<String, Vec<u8>>| {
                tree.iter()
                    .map(|(path, bytes)| format!("{path}: {:?}\n", String::from_utf8_lossy(bytes)))
                    .collect::<String>()
            };
            return Err(format!("tree mismatch\nexpected:\n{}actual:\n{}", show(&expected), show(&after)));
        }
    }
    if let Ok(expected_output) = std::fs::read_to_string(dir.join("output.txt")) {
        for needle in expected_output.lines().filter(|line| !line.is_empty()) {
            if !outcome.content.contains(needle) {
                return Err(format!("the output lacks `{needle}`:\n{}", outcome.content));
            }
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_conformance_scenario_passes() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/patch");
    let mut scenarios: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    scenarios.sort();
    assert!(scenarios.len() >= 40, "expected at least 40 scenarios, found {}", scenarios.len());
    let mut failures = Vec::new();
    for scenario in &scenarios {
        if let Err(problem) = run_scenario(scenario).await {
            failures.push(format!("== {}\n{problem}", scenario.file_name().unwrap().to_string_lossy()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed:\n{}",
        failures.len(),
        scenarios.len(),
        failures.join("\n")
    );
}
