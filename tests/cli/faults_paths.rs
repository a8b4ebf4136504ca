//! Paths that escape the workspace — `..`, absolute paths, a symlinked file and a symlinked
//! folder pointing outside — are refused by every file tool of every profile, run through the
//! real binary (`agentls tool NAME --cwd WS --profile P ARGS`): the tool reports an error naming
//! the workspace, nothing outside is read, listed or written.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

const SECRET: &str = "TOP-SECRET-OUTSIDE";
/// What the tools are asked to find or replace: it matches the secret without being it, so an
/// error that quotes the request does not look like a leak.
const NEEDLE: &str = "SECRET-OUTSIDE";
const PATTERN: &str = "SECRET-OUT[S]IDE";

/// `tmp/outside/` (a secret file and a folder) and the workspace `tmp/ws/` with a file and three
/// symlinks into `outside/` (to the file, to the folder, and to a file not created yet).
struct Layout {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
}

fn layout() -> Layout {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().canonicalize().expect("canonical");
    let (ws, outside) = (base.join("ws"), base.join("outside"));
    std::fs::create_dir_all(outside.join("sub")).expect("mkdir");
    std::fs::write(outside.join("secret.txt"), format!("{SECRET}\n")).expect("write");
    std::fs::write(outside.join("sub/inner.txt"), format!("{SECRET} inner\n")).expect("write");
    std::fs::create_dir_all(&ws).expect("mkdir");
    std::fs::write(ws.join("inside.txt"), "inside\n").expect("write");
    std::os::unix::fs::symlink(outside.join("secret.txt"), ws.join("link_file")).expect("symlink");
    std::os::unix::fs::symlink(&outside, ws.join("link_dir")).expect("symlink");
    // Dangling: it names a file outside that does not exist yet.
    std::os::unix::fs::symlink(outside.join("created.txt"), ws.join("link_new")).expect("symlink");
    Layout { _dir: dir, ws, outside }
}

fn tool(layout: &Layout, profile: &str, name: &str, args: &Value) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_agentls"))
        .args(["tool", name, "--cwd"])
        .arg(&layout.ws)
        .args(["--profile", profile, &args.to_string()])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &layout.ws)
        .env("AGENTLS_CONFIG", layout.ws.join("no-config.toml"))
        .output()
        .expect("agentls runs")
}

/// Every file under `dir` with its content (symlinks not followed).
fn snapshot(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let path = entry.path();
        if entry.file_type().expect("type").is_dir() {
            out.extend(snapshot(&path));
        } else {
            out.push((path.clone(), std::fs::read_to_string(&path).unwrap_or_default()));
        }
    }
    out.sort();
    out
}

/// The escaping spellings of a file outside (`secret.txt`) and of a new file outside.
fn escaping_files(layout: &Layout) -> Vec<(String, String)> {
    let absolute = |p: &str| layout.outside.join(p).display().to_string();
    vec![
        ("../outside/secret.txt".into(), "../outside/new.txt".into()),
        ("sub/../../outside/secret.txt".into(), "sub/../../outside/new.txt".into()),
        (absolute("secret.txt"), absolute("new.txt")),
        ("link_file".into(), "link_dir/new.txt".into()),
        ("link_file".into(), "link_new".into()),
        ("link_dir/secret.txt".into(), "link_dir/sub/new.txt".into()),
    ]
}

/// The escaping spellings of the folder outside.
fn escaping_dirs(layout: &Layout) -> Vec<String> {
    vec![
        "..".into(),
        "../outside".into(),
        layout.outside.display().to_string(),
        "link_dir".into(),
        "link_dir/sub".into(),
    ]
}

/// Every file tool call that names an escaping path, per profile.
fn calls(layout: &Layout) -> Vec<(&'static str, &'static str, Value)> {
    let mut calls = Vec::new();
    let in_ws = |p: &str| {
        if Path::new(p).is_absolute() { p.to_string() } else { layout.ws.join(p).display().to_string() }
    };
    for (existing, new) in escaping_files(layout) {
        for profile in ["openai", "anthropic"] {
            calls.push((profile, "read_file", json!({"file_path": existing})));
            calls.push((profile, "write_file", json!({"file_path": new, "content": "pwned\n"})));
            calls.push((profile, "write_file", json!({"file_path": existing, "content": "pwned\n"})));
        }
        calls.push((
            "anthropic",
            "edit_file",
            json!({"file_path": existing, "old_string": NEEDLE, "new_string": "pwned"}),
        ));
        for (header, body) in
            [("Update File", format!("@@\n-TOP-{NEEDLE}\n+pwned\n")), ("Delete File", String::new())]
        {
            let patch = format!("*** Begin Patch\n*** {header}: {existing}\n{body}*** End Patch\n");
            calls.push(("openai", "apply_patch", json!({"patch": patch})));
        }
        let patch = format!("*** Begin Patch\n*** Add File: {new}\n+pwned\n*** End Patch\n");
        calls.push(("openai", "apply_patch", json!({"patch": patch})));
        let patch = format!(
            "*** Begin Patch\n*** Update File: inside.txt\n*** Move to: {new}\n@@\n-inside\n+moved\n*** End Patch\n"
        );
        calls.push(("openai", "apply_patch", json!({"patch": patch})));
        calls.push(("gemini", "read_file", json!({"absolute_path": in_ws(&existing)})));
        calls.push(("gemini", "write_file", json!({"file_path": new, "content": "pwned\n"})));
        calls.push((
            "gemini",
            "replace",
            json!({"file_path": existing, "old_string": NEEDLE, "new_string": "pwned", "instruction": "x"}),
        ));
        calls.push(("gemini", "read_many_files", json!({"paths": [existing]})));
    }
    for dir in escaping_dirs(layout) {
        for profile in ["openai", "anthropic", "gemini"] {
            calls.push((profile, "grep", json!({"pattern": PATTERN, "path": dir})));
            calls.push((profile, "glob", json!({"pattern": "**/*.txt", "path": dir})));
        }
        calls.push(("gemini", "list_dir", json!({"path": in_ws(&dir)})));
        calls.push(("gemini", "read_many_files", json!({"paths": [format!("{dir}/secret.txt")]})));
    }
    calls
}

#[test]
fn every_file_tool_refuses_paths_outside_the_workspace() {
    let layout = layout();
    let before = snapshot(&layout.outside);
    let mut failures = Vec::new();
    for (profile, name, args) in calls(&layout) {
        let out = tool(&layout, profile, name, &args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let refused = out.status.code() == Some(1) && stdout.contains("outside the workspace");
        if !refused || stdout.contains(SECRET) {
            failures.push(format!(
                "{profile} {name} {args}: exit {:?}\n{stdout}{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert_eq!(snapshot(&layout.outside), before, "nothing outside the workspace changed");
    assert!(failures.is_empty(), "{} calls were not refused:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn searches_of_the_whole_workspace_do_not_follow_symlinks_out_of_it() {
    let layout = layout();
    for profile in ["openai", "anthropic", "gemini"] {
        for (name, args) in [
            ("grep", json!({"pattern": PATTERN})),
            ("glob", json!({"pattern": "**/*.txt"})),
            ("glob", json!({"pattern": "../outside/*.txt"})),
        ] {
            let out = tool(&layout, profile, name, &args);
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                !stdout.contains(SECRET) && !stdout.contains("secret.txt") && !stdout.contains("inner.txt"),
                "{profile} {name} {args} reached outside: {stdout}"
            );
        }
    }
    let out = tool(&layout, "gemini", "read_many_files", &json!({"paths": ["**/*.txt"]}));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains(SECRET), "read_many_files followed a symlink out: {stdout}");
    let out =
        tool(&layout, "gemini", "list_dir", &json!({"path": layout.ws.display().to_string(), "depth": 3}));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("inner.txt"), "list_dir descended through a symlink: {stdout}");
}
