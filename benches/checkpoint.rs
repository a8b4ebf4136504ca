//! What a checkpoint adds around a shell command (issue 28), on a workspace of 20,000 files,
//! side by side with `git status` and `git stash create` on the same tree.
//!
//! `cargo bench --bench checkpoint` measures (median of the runs); without `--bench`, as
//! `cargo test --all-targets` runs it, it checks each measurement once on a small tree.
//! The command each time is `true`: what is measured is the two scans, the reads of the
//! candidates and the comparison, not the command.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentls::checkpoint::{Checkpoints, HistoryMark, RecordingEnvironment};
use agentls::exec::{ExecRequest, ExecutionEnvironment, LocalExecutionEnvironment};

fn tree(root: &Path, files: usize) {
    for i in 0..files {
        let dir = root.join(format!("src/m{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        let text = format!("pub fn f{i}() -> u32 {{\n    {i}\n}}\n").repeat(4);
        std::fs::write(dir.join(format!("f{i}.rs")), text).expect("write");
    }
    std::fs::write(root.join(".gitignore"), "target/\n").expect("write");
}

fn git(root: &Path, args: &[&str]) -> Duration {
    let started = Instant::now();
    let out = std::process::Command::new("git").args(args).current_dir(root).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    started.elapsed()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let measure = std::env::args().any(|a| a == "--bench");
    let (files, runs) = if measure { (20_000, 15) } else { (200, 1) };
    let dir = tempfile::tempdir().expect("tempdir");
    let (root, data) = (dir.path().join("ws"), dir.path().join("data"));
    std::fs::create_dir_all(&root).expect("mkdir");
    tree(&root, files);
    git(&root, &["init", "-q"]);
    git(&root, &["add", "-A"]);
    git(&root, &["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "tree"]);
    // One changed file, so `git stash create` has something to store.
    std::fs::write(root.join("src/m000/f0.rs"), "changed\n").expect("write");

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let inner: Arc<dyn ExecutionEnvironment> = Arc::new(LocalExecutionEnvironment::new(&root));
    let checkpoints = Arc::new(Checkpoints::open(&data, "bench", &root).expect("checkpoints"));
    let recording = RecordingEnvironment::new(inner.clone(), checkpoints.clone());
    let run = |env: &dyn ExecutionEnvironment| {
        let started = Instant::now();
        runtime.block_on(env.exec_command(ExecRequest::new("true"))).expect("runs");
        started.elapsed()
    };
    let mark = HistoryMark { index: 0, timestamp: chrono::Utc::now() };
    checkpoints.begin_turn("bench", mark);
    let bare = median((0..runs).map(|_| run(inner.as_ref())).collect());
    let recorded = median((0..runs).map(|_| run(&recording)).collect());
    checkpoints.end_turn();
    let status = median((0..runs).map(|_| git(&root, &["status", "--porcelain"])).collect());
    let stash = median((0..runs).map(|_| git(&root, &["stash", "create"])).collect());
    // The floor: every file's metadata read once, without ignore rules (GNU find).
    let find = median(
        (0..runs)
            .map(|_| {
                let started = Instant::now();
                let out = std::process::Command::new("find")
                    .args([".", "-path", "./.git", "-prune", "-o", "-type", "f", "-printf", "%s %T@ %i\n"])
                    .current_dir(&root)
                    .output()
                    .expect("find runs");
                assert!(out.status.success());
                started.elapsed()
            })
            .collect(),
    );
    let overhead = recorded.saturating_sub(bare);
    println!("workspace: {files} files; median of {runs} runs");
    println!("| measurement | time |");
    println!("|---|---|");
    println!("| `true` through the environment | {} |", ms(bare));
    println!("| `true` with its checkpoint (two scans, candidates read, compared) | {} |", ms(recorded));
    println!("| **the checkpoint's cost** | **{}** |", ms(overhead));
    println!("| one metadata pass, `find -printf '%s %T@ %i'` (floor of one scan) | {} |", ms(find));
    println!("| `git status --porcelain` | {} |", ms(status));
    println!("| `git stash create` | {} |", ms(stash));
}
