//! What a checkpoint adds around a shell command (issue 28), on a workspace of 20,000 files,
//! side by side with `git status` and `git stash create` on the same tree; and what a
//! session's checkpoints store against the bytes its turns changed.
//!
//! `cargo bench --bench checkpoint` measures (medians); without `--bench`, as `cargo test
//! --all-targets` runs it, it checks each measurement once on a small tree.
//!
//! Time: each command runs through the session's recording environment inside a turn, and
//! bare; the difference is the checkpoint (the kept tree brought up to date before and after,
//! the candidates' texts, the changed files read). Storage: 20 turns of small edits (a line
//! changed in 5 files each) and one generator turn rewriting 1,000 files, on the same tree.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentls::checkpoint::{Checkpoints, HistoryMark, RecordingEnvironment, scan_tree};
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

/// The path of the `n`th file of [`tree`] (modulo its size).
fn source(n: usize, files: usize) -> String {
    let n = n % files;
    format!("src/m{:03}/f{n}.rs", n / 100)
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

fn timed(f: impl FnOnce()) -> Duration {
    let started = Instant::now();
    f();
    started.elapsed()
}

/// Bytes that differ between two texts: what is left of each after their common prefix and
/// suffix (a change's size, whatever the diff).
fn changed_bytes(before: &[u8], after: &[u8]) -> u64 {
    let prefix = before.iter().zip(after).take_while(|(a, b)| a == b).count();
    let (b, a) = (&before[prefix..], &after[prefix..]);
    let suffix = b.iter().rev().zip(a.iter().rev()).take_while(|(x, y)| x == y).count();
    (b.len() - suffix + a.len() - suffix) as u64
}

fn du(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => du(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

fn main() {
    let measure = std::env::args().any(|a| a == "--bench");
    let (files, runs) = if measure { (20_000, 25) } else { (200, 1) };
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
    let run = |env: &dyn ExecutionEnvironment, command: &str| {
        timed(|| {
            let result = runtime.block_on(env.exec_command(ExecRequest::new(command))).expect("runs");
            assert_eq!(result.exit_code, 0, "{command}: {}", result.stderr);
        })
    };
    let mark = HistoryMark { index: 0, timestamp: chrono::Utc::now() };
    // The session's first command walks the tree once (and watches it).
    checkpoints.begin_turn("first", mark);
    let first = run(&recording, "true");
    checkpoints.end_turn();
    let edit = |n: usize| format!("sed -i 's/^/x/' {}", source(n, files));
    let generator = "for d in src/m00*; do for f in $d/f*.rs; do echo '// generated' >> $f; done; done";
    let (mut bare, mut recorded, mut bare_edit, mut recorded_edit) = (vec![], vec![], vec![], vec![]);
    checkpoints.begin_turn("measure", mark);
    for n in 0..runs {
        bare.push(run(inner.as_ref(), "true"));
        recorded.push(run(&recording, "true"));
        bare_edit.push(run(inner.as_ref(), &edit(2 * n)));
        recorded_edit.push(run(&recording, &edit(2 * n + 1)));
    }
    let gen_bare = run(inner.as_ref(), generator);
    let gen_recorded = run(&recording, generator);
    checkpoints.end_turn();
    let generated = files.min(1_000);
    let walk = median((0..runs).map(|_| timed(|| drop(scan_tree(&root, &data)))).collect());
    let status = median((0..runs).map(|_| git(&root, &["status", "--porcelain"])).collect());
    let stash = median((0..runs).map(|_| git(&root, &["stash", "create"])).collect());
    // The floor of one walk: every file's metadata read once, without ignore rules (GNU find).
    let find = median(
        (0..runs)
            .map(|_| {
                timed(|| {
                    let out = std::process::Command::new("find")
                        .args([
                            ".",
                            "-path",
                            "./.git",
                            "-prune",
                            "-o",
                            "-type",
                            "f",
                            "-printf",
                            "%s %T@ %i\n",
                        ])
                        .current_dir(&root)
                        .output()
                        .expect("find runs");
                    assert!(out.status.success());
                })
            })
            .collect(),
    );
    // The cost is the median of each run's difference with the bare run next to it (the load of
    // a shared machine shifts both alike).
    let cost = |with: Vec<Duration>, without: &[Duration]| {
        let differences = with.iter().zip(without).map(|(w, b)| w.saturating_sub(*b)).collect();
        (median(with), median(differences))
    };
    let (recorded, overhead) = cost(recorded, &bare);
    let (recorded_edit, overhead_edit) = cost(recorded_edit, &bare_edit);
    println!("workspace: {files} files; medians of {runs} runs");
    println!("| measurement | time |");
    println!("|---|---|");
    println!("| `true` bare | {} |", ms(median(bare)));
    println!("| `true` with its checkpoint | {} |", ms(recorded));
    println!("| **the checkpoint's cost around a command** | **{}** |", ms(overhead));
    println!("| `sed -i` of one file bare | {} |", ms(median(bare_edit)));
    println!("| `sed -i` of one file with its checkpoint | {} |", ms(recorded_edit));
    println!(
        "| **the checkpoint's cost around a command that changes a file** | **{}** |",
        ms(overhead_edit)
    );
    println!(
        "| a generator appending to {generated} files: bare / with its checkpoint | {} / {} |",
        ms(gen_bare),
        ms(gen_recorded)
    );
    println!("| the session's first command (walks and watches the tree once) | {} |", ms(first));
    println!(
        "| one full walk (`checkpoint::scan_tree`: ignore rules, parallel), the unwatched fallback's unit | {} |",
        ms(walk)
    );
    println!("| one metadata pass, `find -printf '%s %T@ %i'` (floor of one walk) | {} |", ms(find));
    println!("| `git status --porcelain` | {} |", ms(status));
    println!("| `git stash create` | {} |", ms(stash));

    storage(&runtime, &root, &data, files, measure);
}

/// 20 turns of small edits and one generator turn: what the checkpoints store against what
/// the turns changed.
fn storage(runtime: &tokio::runtime::Runtime, root: &Path, data: &Path, files: usize, measure: bool) {
    let inner: Arc<dyn ExecutionEnvironment> = Arc::new(LocalExecutionEnvironment::new(root));
    let checkpoints = Arc::new(Checkpoints::open(data, "storage", root).expect("checkpoints"));
    let recording = RecordingEnvironment::new(inner, checkpoints.clone());
    let path = |n: usize| source(n, files);
    let mut turns: Vec<(String, Vec<String>)> = (0..20)
        .map(|t| {
            let targets: Vec<String> = (0..5).map(|k| path(t * 37 + k * 101)).collect();
            let command =
                targets.iter().map(|p| format!("sed -i '2s/$/ + 1/' {p}")).collect::<Vec<_>>().join(" && ");
            (command, targets)
        })
        .collect();
    let generated: Vec<String> = (0..files.min(1_000)).map(|n| path(n * 7)).collect();
    turns.push((
        format!(
            "sed -i 's/u32/u64/g' {}",
            generated.iter().take(if measure { 1_000 } else { 20 }).cloned().collect::<Vec<_>>().join(" ")
        ),
        generated,
    ));
    let (mut changed, mut touched) = (0u64, 0u64);
    for (n, (command, targets)) in turns.iter().enumerate() {
        let before: Vec<Vec<u8>> =
            targets.iter().map(|p| std::fs::read(root.join(p)).unwrap_or_default()).collect();
        checkpoints.begin_turn(&format!("turn {n}"), HistoryMark { index: n, timestamp: chrono::Utc::now() });
        let result = runtime.block_on(recording.exec_command(ExecRequest::new(command))).expect("runs");
        assert_eq!(result.exit_code, 0, "{}", result.stderr);
        let turn = checkpoints.end_turn().expect("recorded");
        for (p, old) in targets.iter().zip(&before) {
            let new = std::fs::read(root.join(p)).expect("read");
            if &new != old {
                changed += changed_bytes(old, &new);
                touched += (old.len() + new.len()) as u64;
            }
        }
        assert!(turn.changed_files(), "turn {n} recorded nothing");
    }
    let stored = du(&data.join("checkpoints/storage"));
    println!();
    println!("| storage, {} turns | bytes |", turns.len());
    println!("|---|---|");
    println!("| bytes the turns changed (each change's differing span, before and after) | {changed} |");
    println!("| the changed files' texts before and after | {touched} |");
    println!("| **the session's checkpoints on disk (blobs and index)** | **{stored}** |");
}
