//! The guard: a small process that ends the server's process groups when the server dies,
//! however it dies (SIGKILL and the OOM killer included), so no command, REPL or server the
//! agent started outlives it.
//!
//! A host that is a real `agentls` process ([`enable`], from `main`) starts the guard with the
//! first process group: the same binary, `agentls __guard`, in a process group of its own (so a
//! Ctrl-C or a signal to the server's group does not reach it), reading its standard input. Every
//! group the environment starts is announced (`+PGID`) and every group that ended is withdrawn
//! (`-PGID`). When the input ends — the kernel closes the pipe when the server exits for any
//! reason — the guard ends every group still announced: SIGTERM, [`KILL_GRACE`], SIGKILL.
//!
//! Invariants:
//! - The pipe's write end is the server's alone (close-on-exec), so only the server's death
//!   ends the guard's input.
//! - A clean stop ends the groups first (`LiveGroups::terminate_all`), so the guard finds none.
//! - Without [`enable`] (a library embedding the environment, the in-process tests) there is no
//!   guard: groups still end with their calls, their environment and their host's shutdown.
//! - Other platforms: the guard needs only POSIX process groups and pipes; where no `agentls`
//!   binary can be found it is not started, and only a clean stop ends the groups.

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The argument that runs the guard (a hidden command of the binary).
pub const GUARD_ARG: &str = "__guard";

/// Time between SIGTERM and SIGKILL when a process group is ended.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// The binary that runs the guard, set once by the host.
static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
/// The running guard, started with the first group.
static GUARD: Mutex<Option<Running>> = Mutex::new(None);

struct Running {
    child: Child,
    input: ChildStdin,
}

/// Lets this process start a guard: `program` is the `agentls` binary (normally
/// `std::env::current_exe()`).
pub fn enable(program: PathBuf) {
    let _ = PROGRAM.set(program);
}

/// Starts the guard, when this process may have one and none runs, before a group is spawned:
/// the announcement that follows the spawn is then one write, with no process start between the
/// command's first instruction and the guard knowing of it.
pub(crate) fn prepare() {
    send("", true);
}

/// Announces a process group the environment started.
pub(crate) fn watch(pgid: i32) {
    send(&format!("+{pgid}\n"), true);
}

/// Withdraws a group that ended.
pub(crate) fn forget(pgid: i32) {
    send(&format!("-{pgid}\n"), false);
}

/// Writes one line to the guard, starting it first when `start` and none runs. A guard that
/// died is started again on the next announcement (it will not know the groups before).
fn send(line: &str, start: bool) {
    let Some(program) = PROGRAM.get() else { return };
    let mut guard = GUARD.lock().unwrap_or_else(|p| p.into_inner());
    if guard.as_mut().is_some_and(|g| !matches!(g.child.try_wait(), Ok(None))) {
        tracing::warn!("the process guard stopped; starting another");
        *guard = None;
    }
    if guard.is_none() && start {
        match spawn(program) {
            Ok(running) => *guard = Some(running),
            Err(e) => {
                tracing::warn!("cannot start the process guard ({}): {e}", program.display());
                return;
            }
        }
    }
    if let Some(running) = guard.as_mut()
        && !line.is_empty()
        && let Err(e) = running.input.write_all(line.as_bytes())
    {
        tracing::warn!("cannot reach the process guard: {e}");
        *guard = None;
    }
}

fn spawn(program: &PathBuf) -> std::io::Result<Running> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(program)
        .arg(GUARD_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    let input = child.stdin.take().ok_or_else(|| std::io::Error::other("no stdin"))?;
    tracing::debug!(pid = child.id(), "process guard started");
    Ok(Running { child, input })
}

/// The guard's own work (`agentls __guard`): follows the announcements on stdin until it ends,
/// then ends every group still announced.
pub fn run() {
    let mut groups = BTreeSet::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let (sign, number) = line.split_at(line.len().min(1));
        let Ok(pgid) = number.trim().parse::<i32>() else { continue };
        if pgid <= 1 {
            continue;
        }
        match sign {
            "+" => groups.insert(pgid),
            "-" => groups.remove(&pgid),
            _ => continue,
        };
    }
    end_groups(&groups);
}

/// SIGTERM to every group, up to [`KILL_GRACE`] for them to go, then SIGKILL to what is left.
fn end_groups(groups: &BTreeSet<i32>) {
    let alive = |pgid: i32| killpg(Pid::from_raw(pgid), None).is_ok();
    let live: Vec<i32> = groups.iter().copied().filter(|g| alive(*g)).collect();
    if live.is_empty() {
        return;
    }
    for &pgid in &live {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGTERM);
    }
    let deadline = Instant::now() + KILL_GRACE;
    while Instant::now() < deadline && live.iter().any(|g| alive(*g)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    for &pgid in &live {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}
