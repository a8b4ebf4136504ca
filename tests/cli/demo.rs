//! `agentls demo`: the real binary plays the recorded session through a real `agentls serve`
//! child, with no key and no network. Pins the whole printed session (streamed answer, tool
//! lines, permission answer, diff, review decision, the model's acknowledgement, final file),
//! the file left on disk, the folder rules of `--dir`, and that no process is left behind.
//!
//! `AGENTLS_UPDATE_FIXTURES=1 cargo test --test cli demo::` rewrites the expected output after a
//! deliberate change.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pretty_assertions::assert_eq;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/demo");

/// The demo as a user without any key or provider setting runs it, in an isolated home.
fn demo(home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentls"));
    command.arg("demo").args(args).env("HOME", home).env("XDG_CONFIG_HOME", home).env("XDG_DATA_HOME", home);
    for var in [
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "AGENTLS_PROVIDER",
        "AGENTLS_MODEL",
        "AGENTLS_CONFIG",
        "AGENTLS_DATA_DIR",
        "NO_COLOR",
    ] {
        command.env_remove(var);
    }
    command.output().expect("run agentls demo")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The output with the run's folder, session id and command durations replaced by placeholders.
fn normalized(stdout: &str, dir: &Path) -> String {
    let stdout = stdout.replace(&dir.display().to_string(), "<DIR>");
    let duration = regex::Regex::new(r"^(\s*Duration: )\d+(\.\d)? (ms|s)$").unwrap();
    stdout
        .lines()
        .map(|line| match line.find(", session ") {
            Some(at) => {
                let rest = &line[at + ", session ".len()..];
                let end = rest.find(' ').unwrap_or(rest.len());
                format!("{}, session <SESSION>{}", &line[..at], &rest[end..])
            }
            None => duration.replace(line, "${1}<DURATION>").into_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn expect_fixture(name: &str, actual: &str) {
    let path = PathBuf::from(FIXTURES).join(name);
    if std::env::var_os("AGENTLS_UPDATE_FIXTURES").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert_eq!(expected, actual, "{name} differs (AGENTLS_UPDATE_FIXTURES=1 rewrites it)");
}

/// Processes whose working directory is inside `dir` (the server and any command it ran).
#[cfg(target_os = "linux")]
fn processes_in(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cwd) = std::fs::read_link(entry.path().join("cwd")) else { continue };
        if cwd.starts_with(dir) {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push(format!(
                "{}: {}",
                entry.file_name().to_string_lossy(),
                text(&cmdline).replace('\0', " ")
            ));
        }
    }
    found
}

#[test]
fn demo_plays_the_recorded_session_and_leaves_the_reviewed_file() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("project");
    let out = demo(home.path(), &["--dir", dir.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        text(&out.stderr)
    );
    assert!(!stdout.contains('\x1b'), "colours on a pipe:\n{stdout}");

    let dir = dir.canonicalize().unwrap();
    expect_fixture("output.txt", &normalized(&stdout, &dir));
    let expected_file = std::fs::read_to_string(PathBuf::from(FIXTURES).join("greet.expected.py")).unwrap();
    assert_eq!(expected_file, std::fs::read_to_string(dir.join("greet.py")).unwrap());

    #[cfg(target_os = "linux")]
    assert_eq!(processes_in(&dir), Vec::<String>::new(), "processes left behind");
}

#[test]
fn demo_can_run_again_in_its_own_folder() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("again");
    for run in 1..=2 {
        let out = demo(home.path(), &["--dir", dir.to_str().unwrap()]);
        assert!(out.status.success(), "run {run} failed:\n{}\n{}", text(&out.stdout), text(&out.stderr));
    }
    let expected_file = std::fs::read_to_string(PathBuf::from(FIXTURES).join("greet.expected.py")).unwrap();
    assert_eq!(expected_file, std::fs::read_to_string(dir.join("greet.py")).unwrap());
}

#[test]
fn demo_refuses_a_folder_it_did_not_make() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("mine");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "keep me\n").unwrap();
    let out = demo(home.path(), &["--dir", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "agentls: {} is not empty and was not made by `agentls demo`; give --dir a new or empty folder\n",
            dir.display()
        )
    );
    let entries: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(entries, vec![std::ffi::OsString::from("notes.txt")], "the folder was touched");
}

#[test]
fn demo_nvim_says_what_is_missing() {
    let home = tempfile::tempdir().unwrap();
    let empty_path = home.path().join("bin");
    std::fs::create_dir(&empty_path).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_agentls"))
        .args(["demo", "--nvim", "--dir"])
        .arg(home.path().join("p"))
        .env("PATH", &empty_path)
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "agentls: `--nvim` needs `nvim` on PATH (Neovim 0.10 or newer); it was not found\n"
    );
    assert!(!home.path().join("p").exists(), "nothing is created when Neovim is missing");
}

/// With `nvim` on PATH (here a stand-in that records how it was started) and the plugin found,
/// `--nvim` starts Neovim on the sample file with an init that loads the plugin, runs this binary
/// as the server with the replay settings, and sends the demo prompt once the client attaches.
/// The real Neovim journey is `tests/fixtures/demo/nvim-check/` (it needs Neovim 0.11).
#[test]
fn demo_nvim_starts_neovim_with_the_plugin_and_the_demo_settings() {
    let home = tempfile::tempdir().unwrap();
    let bin = home.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let record = home.path().join("nvim-was-started.txt");
    let fake = bin.join("nvim");
    std::fs::write(
        &fake,
        format!("#!/bin/sh\n{{ echo \"args: $*\"; echo \"cwd: $(pwd)\"; env | grep -E '^(AGENTLS_|ANTHROPIC_)' | sort; }} > '{}'\n", record.display()),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // An installed plugin (a pack of the user's Neovim), used unless this checkout has editors/nvim.
    let installed = home.path().join("data/nvim/site/pack/agentls/start/agentls");
    std::fs::create_dir_all(installed.join("lua/agentls")).unwrap();
    std::fs::write(installed.join("lua/agentls/init.lua"), "return {}\n").unwrap();

    let dir = home.path().join("p");
    let out = Command::new(env!("CARGO_BIN_EXE_agentls"))
        .args(["demo", "--nvim", "--dir"])
        .arg(&dir)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("HOME", home.path())
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("ANTHROPIC_API_KEY", "sk-ant-must-not-reach-the-server")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));

    let dir = dir.canonicalize().unwrap();
    let marker = dir.join(".agentls-demo");
    assert_eq!(
        std::fs::read_to_string(&record).unwrap(),
        format!(
            "args: -u {m}/init.lua {d}/greet.py\ncwd: {d}\nAGENTLS_CONFIG={m}/config.toml\nAGENTLS_DATA_DIR={m}/data\n",
            m = marker.display(),
            d = dir.display()
        )
    );
    let init = std::fs::read_to_string(marker.join("init.lua")).unwrap();
    let source_plugin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("editors/nvim");
    let plugin = if source_plugin.join("lua/agentls/init.lua").is_file() { source_plugin } else { installed };
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_agentls"));
    for expected in [
        format!("vim.opt.runtimepath:prepend(\"{}\")", plugin.display()),
        format!("cmd = {{ \"{}\", \"serve\", \"--stdio\" }},", exe.display()),
        format!(
            "settings = {{ [\"provider\"] = \"replay\", [\"cassette\"] = \"{}/session.cassette.jsonl\", [\"approval\"] = \"review\", [\"shell\"] = {{ [\"permission\"] = \"ask\" }} }},",
            marker.display()
        ),
        "require(\"agentls.commands\").prompt(\"Add a --verbose flag to greet.py that says what the script is doing.\")".to_string(),
    ] {
        assert!(init.contains(&expected), "init.lua lacks {expected}:\n{init}");
    }
}
