//! Running one command in its own process group: output capture, timeout, cancellation, and
//! ending the group (SIGTERM, then SIGKILL after [`KILL_GRACE`]). A group whose command future is
//! dropped is killed too, so nothing outlives the call unless it was left running on purpose
//! (background jobs of a command that exited), which [`LiveGroups::terminate_all`] ends.
//! A long-lived child ([`ChildProcess`], a REPL) has its own group too: dropping it kills the
//! group, and the environment's `cleanup` ends it with the rest.

use std::collections::{BTreeSet, VecDeque};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

use super::guard::KILL_GRACE;
use super::{ExecError, OutputSink};

/// How long output is still read after the command exited (background jobs may hold the pipes).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);
/// Bytes kept from each end of a stream; the middle of larger outputs is dropped.
const CAPTURE_HALF: usize = 8 * 1024 * 1024;
const POLL: Duration = Duration::from_millis(20);
/// Upper bound on waiting for SIGKILLed processes to disappear.
const POST_KILL_WAIT: Duration = Duration::from_millis(500);
/// Bytes of each stream handed to an output sink while the command runs; the rest is only in the
/// result (a watcher needs to see progress, not megabytes twice).
const STREAM_LIMIT: usize = 1024 * 1024;

/// Process groups started by an environment and possibly still running.
#[derive(Debug, Default, Clone)]
pub(crate) struct LiveGroups(Arc<Mutex<BTreeSet<i32>>>);

impl LiveGroups {
    /// A group started: the guard hears of it too, so it ends with a server that dies.
    fn insert(&self, pgid: i32) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).insert(pgid);
        super::guard::watch(pgid);
    }
    fn remove(&self, pgid: i32) {
        if self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(&pgid) {
            super::guard::forget(pgid);
        }
    }
    /// Every group, no longer tracked (the caller ends them); the guard forgets them once they
    /// are gone.
    fn take_all(&self) -> Vec<i32> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner())).into_iter().collect()
    }

    /// Ends every group still alive: SIGTERM, grace period, SIGKILL.
    pub(crate) async fn terminate_all(&self) {
        let taken = self.take_all();
        let groups: Vec<i32> = taken.iter().copied().filter(|g| group_alive(*g)).collect();
        // The guard keeps them until they are ended: a stop cut short leaves them to it.
        let forget = || taken.iter().for_each(|&g| super::guard::forget(g));
        if groups.is_empty() {
            forget();
            return;
        }
        for &pgid in &groups {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGTERM);
        }
        let deadline = Instant::now() + KILL_GRACE;
        while Instant::now() < deadline && groups.iter().any(|g| group_alive(*g)) {
            tokio::time::sleep(POLL).await;
        }
        for &pgid in &groups {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            wait_group_gone(pgid, POST_KILL_WAIT).await;
        }
        forget();
    }

    /// Kills every group at once (no grace): used when the environment is dropped.
    pub(crate) fn kill_all_now(&self) {
        for pgid in self.take_all() {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            super::guard::forget(pgid);
        }
    }
}

/// Waits (bounded) until a killed group has exited; zombies nobody reaps may keep it "alive".
async fn wait_group_gone(pgid: i32, limit: Duration) {
    let deadline = Instant::now() + limit;
    while group_alive(pgid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Whether any process of the group still runs. Zombies do not count: an orphaned child that died
/// is reparented to PID 1, and where PID 1 does not reap (many containers) it would otherwise look
/// alive until the grace period ran out.
fn group_alive(pgid: i32) -> bool {
    if matches!(killpg(Pid::from_raw(pgid), None), Err(Errno::ESRCH)) {
        return false;
    }
    match std::fs::read_dir("/proc") {
        Ok(entries) => entries.flatten().any(|entry| {
            let name = entry.file_name();
            let is_pid = name.to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
            is_pid && live_member(&entry.path().join("stat"), pgid)
        }),
        // No procfs (not Linux): the signal check is all there is.
        Err(_) => true,
    }
}

/// Whether the process of a `/proc/<pid>/stat` file belongs to group `pgid` and is not a zombie.
fn live_member(stat: &Path, pgid: i32) -> bool {
    let Ok(text) = std::fs::read_to_string(stat) else { return false };
    // After the command name (which may contain spaces and parentheses): state, ppid, pgrp, …
    let Some((_, rest)) = text.rsplit_once(')') else { return false };
    let mut fields = rest.split_whitespace();
    let state = fields.next().unwrap_or("Z");
    let group = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
    group == Some(pgid) && state != "Z" && state != "X"
}

/// One command to spawn.
pub(crate) struct Spawn<'a> {
    pub command: &'a str,
    pub cwd: &'a Path,
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    pub cancel: CancellationToken,
    pub output: Option<OutputSink>,
}

pub(crate) struct Finished {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: i32,
    pub timed_out: bool,
    pub cancelled: bool,
    pub duration: Duration,
}

/// Commands longer than this are passed in a script file instead of `-c`.
const MAX_ARG_BYTES: usize = 96 * 1024;

/// A temporary script holding a long command; removed when dropped.
struct ScriptFile(std::path::PathBuf);

impl ScriptFile {
    fn write(command: &str) -> Result<Self, ExecError> {
        let path = std::env::temp_dir().join(format!("agentls-command-{}.sh", uuid::Uuid::new_v4()));
        std::fs::write(&path, command).map_err(|e| ExecError::io(&path, e))?;
        Ok(Self(path))
    }
}

impl Drop for ScriptFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Kills the group if the command future is dropped before it finished.
struct GroupGuard {
    pgid: i32,
    armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            let _ = killpg(Pid::from_raw(self.pgid), Signal::SIGKILL);
        }
    }
}

enum Stop {
    Exited(std::io::Result<ExitStatus>),
    TimedOut,
    Cancelled,
}

fn shell_program() -> &'static str {
    if Path::new("/bin/bash").exists() { "/bin/bash" } else { "/bin/sh" }
}

pub(crate) async fn run(spawn: Spawn<'_>, groups: &LiveGroups) -> Result<Finished, ExecError> {
    let mut command = Command::new(shell_program());
    // One argv string is limited to 128 KiB; longer scripts are run from a temporary file.
    let script_file = if spawn.command.len() > MAX_ARG_BYTES {
        let file = ScriptFile::write(spawn.command)?;
        command.arg(&file.0);
        Some(file)
    } else {
        command.arg("-c").arg(spawn.command);
        None
    };
    command
        .current_dir(spawn.cwd)
        .env_clear()
        .envs(spawn.env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    super::guard::prepare();
    let started = Instant::now();
    let mut child =
        command.spawn().map_err(|e| ExecError::Spawn(format!("{e} (in {})", spawn.cwd.display())))?;
    let pgid =
        child.id().map(|id| id as i32).ok_or_else(|| ExecError::Spawn("the process vanished".into()))?;
    groups.insert(pgid);
    let mut guard = GroupGuard { pgid, armed: true };

    let stdout = Capture::start(child.stdout.take(), spawn.output.clone());
    let stderr = Capture::start(child.stderr.take(), spawn.output);

    let stop = tokio::select! {
        status = child.wait() => Stop::Exited(status),
        _ = tokio::time::sleep(spawn.timeout) => Stop::TimedOut,
        _ = spawn.cancel.cancelled() => Stop::Cancelled,
    };
    let (status, timed_out, cancelled) = match stop {
        Stop::Exited(status) => (status.ok(), false, false),
        Stop::TimedOut => (terminate_group(pgid, &mut child).await, true, false),
        Stop::Cancelled => (terminate_group(pgid, &mut child).await, false, true),
    };
    let duration = started.elapsed();
    if !group_alive(pgid) {
        groups.remove(pgid);
    }
    guard.armed = false;

    drop(script_file);
    let deadline = tokio::time::Instant::now() + DRAIN_AFTER_EXIT;
    let stdout = stdout.finish(deadline).await;
    let stderr = stderr.finish(deadline).await;
    Ok(Finished {
        stdout,
        stderr,
        exit_code: status.map(exit_code).unwrap_or(-1),
        timed_out,
        cancelled,
        duration,
    })
}

/// SIGTERM to the group, up to [`KILL_GRACE`] for it to go away, then SIGKILL.
async fn terminate_group(pgid: i32, child: &mut Child) -> Option<ExitStatus> {
    let group = Pid::from_raw(pgid);
    let _ = killpg(group, Signal::SIGTERM);
    let deadline = Instant::now() + KILL_GRACE;
    let mut status = None;
    loop {
        if status.is_none() {
            status = child.try_wait().ok().flatten();
        }
        if status.is_some() && !group_alive(pgid) {
            return status;
        }
        if Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    let _ = killpg(group, Signal::SIGKILL);
    wait_group_gone(pgid, POST_KILL_WAIT).await;
    match status {
        Some(status) => Some(status),
        None => child.wait().await.ok(),
    }
}

fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(-1)
}

/// Head and tail of a stream; the middle of very large outputs is counted, not kept.
#[derive(Default)]
struct CaptureBuffer {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped: u64,
}

impl CaptureBuffer {
    fn push(&mut self, mut bytes: &[u8]) {
        let room = CAPTURE_HALF.saturating_sub(self.head.len());
        let into_head = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..into_head]);
        bytes = &bytes[into_head..];
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(CAPTURE_HALF);
        if excess > 0 {
            self.tail.drain(..excess);
            self.dropped += excess as u64;
        }
    }

    fn into_string(self) -> String {
        let mut bytes = self.head;
        if self.dropped > 0 {
            bytes.extend_from_slice(
                format!("\n[... {} bytes of output were not captured ...]\n", self.dropped).as_bytes(),
            );
        }
        bytes.extend(self.tail);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// A stream being read in the background.
struct Capture {
    buffer: Arc<Mutex<CaptureBuffer>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Capture {
    fn start(stream: Option<impl AsyncRead + Unpin + Send + 'static>, sink: Option<OutputSink>) -> Self {
        let buffer = Arc::new(Mutex::new(CaptureBuffer::default()));
        let task = stream.map(|mut stream| {
            let buffer = Arc::clone(&buffer);
            tokio::spawn(async move {
                let mut live = sink.map(LiveOutput::new);
                let mut chunk = vec![0u8; 64 * 1024];
                while let Ok(n) = stream.read(&mut chunk).await {
                    if n == 0 {
                        break;
                    }
                    buffer.lock().unwrap_or_else(|e| e.into_inner()).push(&chunk[..n]);
                    if let Some(live) = &mut live {
                        live.push(&chunk[..n]);
                    }
                }
                if let Some(live) = &mut live {
                    live.flush();
                }
            })
        });
        Self { buffer, task }
    }

    /// Waits for the stream's end until `deadline`, then returns what was read.
    async fn finish(mut self, deadline: tokio::time::Instant) -> String {
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout_at(deadline, &mut task).await.is_err()
        {
            task.abort();
        }
        let buffer = std::mem::take(&mut *self.buffer.lock().unwrap_or_else(|e| e.into_inner()));
        buffer.into_string()
    }
}

/// Hands a stream to an output sink as UTF-8 text: a character split between two reads is held
/// back until it is complete; invalid bytes become U+FFFD. Stops after [`STREAM_LIMIT`] bytes.
struct LiveOutput {
    sink: OutputSink,
    pending: Vec<u8>,
    sent: usize,
}

impl LiveOutput {
    fn new(sink: OutputSink) -> Self {
        Self { sink, pending: Vec::new(), sent: 0 }
    }

    fn push(&mut self, bytes: &[u8]) {
        let room = STREAM_LIMIT.saturating_sub(self.sent + self.pending.len());
        if room == 0 {
            return;
        }
        self.pending.extend_from_slice(&bytes[..bytes.len().min(room)]);
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(_) => return self.flush(),
                // An incomplete character at the end waits for the next read.
                Err(e) => match e.error_len() {
                    None => return self.send(e.valid_up_to()),
                    Some(invalid) => self.send(e.valid_up_to() + invalid),
                },
            }
        }
    }

    fn flush(&mut self) {
        self.send(self.pending.len());
    }

    fn send(&mut self, upto: usize) {
        if upto == 0 {
            return;
        }
        let bytes: Vec<u8> = self.pending.drain(..upto).collect();
        self.sent += bytes.len();
        self.sink.send(&String::from_utf8_lossy(&bytes));
    }
}

/// A long-lived program in its own process group that talks over its stdio (code mode's REPL).
/// Dropping it kills the whole group; its environment's `cleanup()` ends it as well.
pub struct ChildProcess {
    child: Child,
    pgid: i32,
    groups: LiveGroups,
    pub stdin: Option<tokio::process::ChildStdin>,
    pub stdout: Option<tokio::process::ChildStdout>,
    pub stderr: Option<tokio::process::ChildStderr>,
}

impl std::fmt::Debug for ChildProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildProcess").field("pgid", &self.pgid).finish()
    }
}

impl ChildProcess {
    /// The process id (also its process group id).
    pub fn id(&self) -> u32 {
        self.pgid as u32
    }

    /// Sends SIGINT to the group (Python raises KeyboardInterrupt).
    pub fn interrupt(&self) {
        let _ = killpg(Pid::from_raw(self.pgid), Signal::SIGINT);
    }

    /// Whether the program has exited.
    pub fn has_exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Ends the group: SIGTERM, the grace period, then SIGKILL.
    pub async fn terminate(mut self) {
        terminate_group(self.pgid, &mut self.child).await;
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        let _ = killpg(Pid::from_raw(self.pgid), Signal::SIGKILL);
        // Reaps the killed child so no zombie stays behind.
        let _ = self.child.try_wait();
        self.groups.remove(self.pgid);
    }
}

/// Starts `program` with piped stdio in its own process group, registered with `groups`.
pub(crate) fn spawn_child(
    program: &str,
    args: &[String],
    cwd: &Path,
    env: Vec<(String, String)>,
    groups: &LiveGroups,
) -> Result<ChildProcess, ExecError> {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    super::guard::prepare();
    let mut child =
        command.spawn().map_err(|e| ExecError::Spawn(format!("{program}: {e} (in {})", cwd.display())))?;
    let pgid =
        child.id().map(|id| id as i32).ok_or_else(|| ExecError::Spawn("the process vanished".into()))?;
    groups.insert(pgid);
    Ok(ChildProcess {
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        child,
        pgid,
        groups: groups.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collecting() -> (LiveOutput, Arc<Mutex<Vec<String>>>) {
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink_got = Arc::clone(&got);
        let sink = OutputSink::new(move |text| sink_got.lock().unwrap().push(text.to_string()));
        (LiveOutput::new(sink), got)
    }

    #[test]
    fn live_output_keeps_characters_whole_and_replaces_invalid_bytes() {
        let (mut live, got) = collecting();
        let euro = "€".as_bytes();
        live.push(&[b'a', euro[0]]);
        live.push(&euro[1..]);
        live.push(&[0xff, b'b', euro[0]]);
        live.flush();
        assert_eq!(*got.lock().unwrap(), ["a", "€", "\u{fffd}", "b", "\u{fffd}"]);
    }

    #[test]
    fn live_output_stops_at_the_limit() {
        let (mut live, got) = collecting();
        live.push(&vec![b'x'; STREAM_LIMIT - 1]);
        live.push(b"yz");
        live.push(b"more");
        live.flush();
        let total: usize = got.lock().unwrap().iter().map(String::len).sum();
        assert_eq!(total, STREAM_LIMIT);
        assert!(got.lock().unwrap().last().is_some_and(|s| s == "y"));
    }
}
