//! LocalExecutionEnvironment with real processes and real files (spec §9.4).

use crate::support::session_harness;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentls::config::EnvPolicy;
use agentls::exec::ShellLimits;
use agentls::exec::{
    ExecError, ExecRequest, ExecutionEnvironment, LocalExecutionEnvironment, LocalOptions,
    LoggingExecutionEnvironment, ReadOnlyExecutionEnvironment,
};
use session_harness::{process_gone, read_pid};
use tokio_util::sync::CancellationToken;

fn env_with(dir: &Path, default_timeout_ms: u64, max_timeout_ms: u64) -> LocalExecutionEnvironment {
    let mut options = LocalOptions::new(dir);
    options.limits = ShellLimits { default_timeout_ms, max_timeout_ms };
    LocalExecutionEnvironment::with_options(options)
}

#[tokio::test]
async fn captures_stdout_stderr_and_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_with(dir.path(), 10_000, 600_000);
    let result = env.exec_command(ExecRequest::new("echo out; echo err >&2; exit 3")).await.unwrap();
    assert_eq!((result.stdout.as_str(), result.stderr.as_str(), result.exit_code), ("out\n", "err\n", 3));
    assert!(!result.timed_out);
    assert_eq!(result.timeout_ms, 10_000);
}

#[tokio::test]
async fn commands_run_in_the_working_directory_or_the_requested_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let env = env_with(dir.path(), 10_000, 600_000);
    let root = dir.path().canonicalize().unwrap();
    let here = env.exec_command(ExecRequest::new("pwd -P")).await.unwrap();
    assert_eq!(here.stdout.trim(), root.to_str().unwrap());
    let mut request = ExecRequest::new("pwd -P");
    request.working_dir = Some(PathBuf::from("sub"));
    let sub = env.exec_command(request).await.unwrap();
    assert_eq!(sub.stdout.trim(), root.join("sub").to_str().unwrap());
}

#[tokio::test]
async fn default_timeout_applies_when_the_call_sets_none() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_with(dir.path(), 300, 600_000);
    let result = env.exec_command(ExecRequest::new("echo partial; sleep 30")).await.unwrap();
    assert!(result.timed_out);
    assert_eq!(result.timeout_ms, 300);
    assert_eq!(result.stdout, "partial\n");
}

#[test]
fn the_default_command_timeout_is_ten_seconds() {
    assert_eq!(ShellLimits::default(), ShellLimits { default_timeout_ms: 10_000, max_timeout_ms: 600_000 });
    let dir = tempfile::tempdir().unwrap();
    let env = LocalExecutionEnvironment::new(dir.path());
    assert_eq!(env.effective_timeout_ms(0), 10_000);
    assert_eq!(env.effective_timeout_ms(5_000), 5_000);
    assert_eq!(env.effective_timeout_ms(10_000_000), 600_000);
}

#[tokio::test]
async fn per_call_timeout_overrides_the_default_up_to_the_maximum() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_with(dir.path(), 60_000, 400);
    let mut request = ExecRequest::new("sleep 30");
    request.timeout_ms = 200;
    let result = env.exec_command(request).await.unwrap();
    assert!(result.timed_out);
    assert_eq!(result.timeout_ms, 200);

    let mut request = ExecRequest::new("sleep 30");
    request.timeout_ms = 9_000_000;
    let result = env.exec_command(request).await.unwrap();
    assert!(result.timed_out);
    assert_eq!(result.timeout_ms, 400);
}

#[tokio::test]
async fn timeout_sends_sigterm_to_the_group_then_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_with(dir.path(), 300, 600_000);
    // The shell survives SIGTERM (it records it), so only SIGKILL can end it.
    let script = "echo $$ > leader.pid; trap 'echo term >> got-term' TERM; \
                  while true; do sleep 0.05; done";
    let result = env.exec_command(ExecRequest::new(script)).await.unwrap();
    assert!(result.timed_out);
    assert!(dir.path().join("got-term").exists(), "SIGTERM was not delivered first");
    let leader = read_pid(&dir.path().join("leader.pid")).await;
    assert!(process_gone(leader), "the TERM-trapping shell was not killed");
    assert_eq!(result.exit_code, 128 + 9);
}

#[tokio::test]
async fn no_orphaned_grandchild_after_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_with(dir.path(), 300, 600_000);
    let result = env
        .exec_command(ExecRequest::new("bash -c 'sleep 60 & echo $! > grandchild.pid; wait' ; wait"))
        .await
        .unwrap();
    assert!(result.timed_out);
    let pid = read_pid(&dir.path().join("grandchild.pid")).await;
    assert!(process_gone(pid), "grandchild {pid} survived the timeout");
}

#[tokio::test]
async fn no_orphaned_grandchild_after_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let env = Arc::new(env_with(dir.path(), 60_000, 600_000));
    let cancel = CancellationToken::new();
    let mut request = ExecRequest::new("bash -c 'trap \"\" TERM; sleep 60 & echo $! > grandchild.pid; wait'");
    request.cancel = cancel.clone();
    let running = tokio::spawn({
        let env = Arc::clone(&env);
        async move { env.exec_command(request).await }
    });
    let pid = read_pid(&dir.path().join("grandchild.pid")).await;
    cancel.cancel();
    let result = running.await.unwrap().unwrap();
    assert!(result.cancelled && !result.timed_out);
    assert!(process_gone(pid), "grandchild {pid} survived the cancel");
}

#[tokio::test]
async fn cleanup_ends_background_jobs_left_by_finished_commands() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_with(dir.path(), 10_000, 600_000);
    let result =
        env.exec_command(ExecRequest::new("sleep 60 >/dev/null 2>&1 & echo $! > bg.pid")).await.unwrap();
    assert_eq!(result.exit_code, 0);
    let pid = read_pid(&dir.path().join("bg.pid")).await;
    assert!(!process_gone(pid), "the background job should keep running until cleanup");
    env.cleanup().await;
    assert!(process_gone(pid), "cleanup left background job {pid} running");
}

fn parent_env() -> Vec<(String, String)> {
    [
        ("PATH", std::env::var("PATH").unwrap_or_default().as_str()),
        ("HOME", "/home/tester"),
        ("OPENAI_API_KEY", "sk-live-secret"),
        ("GITHUB_TOKEN", "ghp-secret"),
        ("DB_PASSWORD", "hunter2"),
        ("VAULT_SECRET", "v-secret"),
        ("GCP_CREDENTIAL", "c-secret"),
        ("PROJECT_FLAG", "visible"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

async fn child_env(dir: &Path, policy: EnvPolicy) -> String {
    let mut options = LocalOptions::new(dir);
    options.env_policy = policy;
    options.parent_env = Some(parent_env());
    let env = LocalExecutionEnvironment::with_options(options);
    env.exec_command(ExecRequest::new("env")).await.unwrap().stdout
}

#[tokio::test]
async fn env_filtering_removes_secrets_under_every_policy() {
    let dir = tempfile::tempdir().unwrap();
    for policy in [EnvPolicy::InheritAll, EnvPolicy::CoreOnly, EnvPolicy::None] {
        let vars = child_env(dir.path(), policy).await;
        for secret in ["sk-live-secret", "ghp-secret", "hunter2", "v-secret", "c-secret"] {
            assert!(!vars.contains(secret), "{policy:?} leaked {secret}");
        }
    }
}

#[tokio::test]
async fn env_policies_choose_what_is_inherited() {
    let dir = tempfile::tempdir().unwrap();
    let all = child_env(dir.path(), EnvPolicy::InheritAll).await;
    assert!(all.contains("PROJECT_FLAG=visible") && all.contains("HOME=/home/tester"));
    let core = child_env(dir.path(), EnvPolicy::CoreOnly).await;
    assert!(!core.contains("PROJECT_FLAG") && core.contains("HOME=/home/tester"));
    let none = child_env(dir.path(), EnvPolicy::None).await;
    assert!(!none.contains("PROJECT_FLAG") && !none.contains("HOME=/home/tester"));
}

#[tokio::test]
async fn explicit_env_vars_are_added() {
    let dir = tempfile::tempdir().unwrap();
    let env = LocalExecutionEnvironment::new(dir.path());
    let mut request = ExecRequest::new("echo $GREETING");
    request.env_vars.insert("GREETING".into(), "hello".into());
    assert_eq!(env.exec_command(request).await.unwrap().stdout, "hello\n");
}

#[tokio::test]
async fn file_operations_resolve_against_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let env = LocalExecutionEnvironment::new(dir.path());
    env.write_file(Path::new("a/b/c.txt"), "one\ntwo\nthree\n").await.unwrap();
    assert!(env.file_exists(Path::new("a/b/c.txt")).await);
    assert!(!env.file_exists(Path::new("a/b/missing.txt")).await);
    assert_eq!(env.read_file(Path::new("a/b/c.txt"), Some(2), Some(1)).await.unwrap(), "two\n");
    assert_eq!(env.read_file(Path::new("a/b/c.txt"), None, None).await.unwrap(), "one\ntwo\nthree\n");
    let listing = env.list_directory(Path::new("."), 3).await.unwrap();
    let names: Vec<_> = listing.iter().map(|e| (e.name.as_str(), e.is_dir)).collect();
    assert_eq!(names, [("a", true), ("a/b", true), ("a/b/c.txt", false)]);
    assert!(matches!(
        env.read_file(Path::new("missing.txt"), None, None).await,
        Err(ExecError::NotFound { .. })
    ));
}

#[tokio::test]
async fn paths_outside_the_workspace_are_refused_unless_configured() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "x").unwrap();
    let target = outside.path().join("secret.txt");
    let env = LocalExecutionEnvironment::new(dir.path());
    assert!(matches!(env.read_file(&target, None, None).await, Err(ExecError::OutsideWorkspace { .. })));
    assert!(matches!(env.write_file(&target, "y").await, Err(ExecError::OutsideWorkspace { .. })));

    let mut options = LocalOptions::new(dir.path());
    options.allow_outside_workspace = true;
    let lenient = LocalExecutionEnvironment::with_options(options);
    assert_eq!(lenient.read_file(&target, None, None).await.unwrap(), "x");
}

#[tokio::test]
async fn read_only_wrapper_refuses_writes_and_logging_wrapper_delegates() {
    let dir = tempfile::tempdir().unwrap();
    let local: Arc<dyn ExecutionEnvironment> = Arc::new(LocalExecutionEnvironment::new(dir.path()));
    let logged: Arc<dyn ExecutionEnvironment> =
        Arc::new(LoggingExecutionEnvironment::new(Arc::clone(&local)));
    logged.write_file(Path::new("f.txt"), "hi").await.unwrap();
    assert_eq!(logged.exec_command(ExecRequest::new("cat f.txt")).await.unwrap().stdout, "hi");

    let read_only = ReadOnlyExecutionEnvironment::new(Arc::clone(&local));
    assert_eq!(read_only.write_file(Path::new("g.txt"), "no").await, Err(ExecError::ReadOnly));
    assert!(!dir.path().join("g.txt").exists());
    assert_eq!(read_only.read_file(Path::new("f.txt"), None, None).await.unwrap(), "hi");
    assert_eq!(read_only.working_directory(), local.working_directory());
}

#[test]
fn metadata_names_the_platform() {
    let dir = tempfile::tempdir().unwrap();
    let env = LocalExecutionEnvironment::new(dir.path());
    assert_eq!(env.platform(), "linux");
    assert!(env.os_version().starts_with("linux"));
}

#[cfg(unix)]
#[tokio::test]
async fn file_operations_read_compare_write_in_place_create_exclusively_and_stat() {
    use agentls::exec::{FileKind, FileStat};
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let env = LocalExecutionEnvironment::new(dir.path());
    let root = dir.path().canonicalize().unwrap();

    // A read larger than what runs inline (it goes to the blocking pool) comes back whole.
    let large: String = (0..200_000).map(|i| format!("line {i}\n")).collect();
    let path = root.join("large.txt");
    std::fs::write(&path, &large).unwrap();
    assert_eq!(&*env.read_bytes(&path, u64::MAX).await.unwrap(), large.as_bytes());
    assert!(matches!(env.read_bytes(&path, 10).await, Err(ExecError::TooLarge { limit: 10, .. })));
    assert!(env.file_equals(&path, large.as_bytes()).await.unwrap());
    assert!(!env.file_equals(&path, &large.as_bytes()[1..]).await.unwrap());
    assert!(matches!(env.read_bytes(&root, u64::MAX).await, Err(ExecError::IsDirectory { .. })));

    // In place: the inode stays; a shorter text cuts the file.
    let inode = std::fs::metadata(&path).unwrap().ino();
    env.write_file(&path, "short\n").await.unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "short\n");
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), inode);

    // Exclusive creates, with folders and a mode; never over anything, not even a dangling link.
    let new = root.join("a/b/new.txt");
    env.create_file(&new, "new\n", Some(0o600)).await.unwrap();
    let stat = env.stat(&new).await.unwrap();
    assert_eq!(stat, Some(FileStat { kind: FileKind::File, len: 4, mode: Some(0o600) }));
    assert!(matches!(env.create_file(&new, "again\n", None).await, Err(ExecError::AlreadyExists { .. })));
    std::os::unix::fs::symlink(root.join("nowhere"), root.join("dangling")).unwrap();
    let dangling = root.join("dangling");
    assert!(matches!(env.create_file(&dangling, "x", None).await, Err(ExecError::AlreadyExists { .. })));
    assert_eq!(env.stat(&dangling).await.unwrap().map(|s| s.kind), Some(FileKind::Other));
    assert_eq!(env.stat(&root.join("a")).await.unwrap().map(|s| s.kind), Some(FileKind::Directory));
    assert_eq!(env.stat(&root.join("short.txt/below")).await.unwrap(), None);

    // A write below a file fails as a write, not as a missing file.
    let below = root.join("large.txt/x");
    assert!(matches!(env.create_file(&below, "x", None).await, Err(ExecError::Io { .. })));
    env.remove_file(&new).await.unwrap();
    assert!(matches!(env.remove_file(&new).await, Err(ExecError::NotFound { .. })));
}
