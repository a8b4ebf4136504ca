//! The environment block (spec §6.3) and git snapshot (§6.4), captured once at session start.
//!
//! Invariant: capturing never fails: a missing `git`, a non-repository or an unreadable OS
//! version just leave the corresponding fields out. Git runs with a short timeout, and only
//! inside a repository.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{NaiveDate, Utc};

const GIT_TIMEOUT: Duration = Duration::from_secs(3);
const RECENT_COMMITS: usize = 10;

/// What the model is told about where it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvironmentInfo {
    pub working_directory: PathBuf,
    pub platform: String,
    pub os_version: Option<String>,
    pub date: NaiveDate,
    pub model: String,
    pub knowledge_cutoff: Option<&'static str>,
    pub git: Option<GitSnapshot>,
}

/// Repository state at session start.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GitSnapshot {
    pub branch: Option<String>,
    pub modified: usize,
    pub untracked: usize,
    /// `<short hash> <subject>`, newest first.
    pub recent_commits: Vec<String>,
}

impl EnvironmentInfo {
    /// Captures the environment of `cwd` for `model`.
    pub async fn capture(cwd: &Path, model: &str) -> Self {
        Self {
            working_directory: cwd.to_path_buf(),
            platform: std::env::consts::OS.to_string(),
            os_version: os_version().await,
            date: Utc::now().date_naive(),
            model: model.to_string(),
            knowledge_cutoff: knowledge_cutoff(model),
            git: GitSnapshot::capture(cwd).await,
        }
    }

    /// The `<environment>` block of the system prompt.
    pub fn render(&self) -> String {
        let mut lines = vec![
            format!("Working directory: {}", self.working_directory.display()),
            format!("Is git repository: {}", self.git.is_some()),
        ];
        if let Some(branch) = self.git.as_ref().and_then(|g| g.branch.as_ref()) {
            lines.push(format!("Git branch: {branch}"));
        }
        lines.push(format!("Platform: {}", self.platform));
        if let Some(v) = &self.os_version {
            lines.push(format!("OS version: {v}"));
        }
        lines.push(format!("Today's date: {}", self.date.format("%Y-%m-%d")));
        lines.push(format!("Model: {}", self.model));
        lines.push(format!("Knowledge cutoff: {}", self.knowledge_cutoff.unwrap_or("unknown")));
        format!("<environment>\n{}\n</environment>", lines.join("\n"))
    }
}

impl GitSnapshot {
    /// The snapshot of the repository containing `cwd`, or `None` outside a repository.
    ///
    /// No `git` runs when no directory from `cwd` up holds a `.git` entry (and `GIT_DIR` is
    /// unset): a session outside a repository starts without a process. Inside one, the four
    /// queries run at once.
    pub async fn capture(cwd: &Path) -> Option<Self> {
        if std::env::var_os("GIT_DIR").is_none() && super::project_docs::git_root(cwd).is_none() {
            return None;
        }
        let recent = RECENT_COMMITS.to_string();
        let log_args = ["log", "--oneline", "--no-decorate", "-n", &recent];
        let (inside, branch, status, log) = tokio::join!(
            git(cwd, &["rev-parse", "--is-inside-work-tree"]),
            git(cwd, &["rev-parse", "--abbrev-ref", "HEAD"]),
            git(cwd, &["status", "--porcelain"]),
            git(cwd, &log_args),
        );
        if inside?.trim() != "true" {
            return None;
        }
        let branch = branch.map(|b| b.trim().to_string()).filter(|b| !b.is_empty() && b != "HEAD");
        let branch = match branch {
            Some(b) => Some(b),
            // A fresh repository has no commit yet; HEAD still names the branch.
            None => git(cwd, &["symbolic-ref", "--short", "HEAD"]).await.map(|b| b.trim().to_string()),
        };
        let status = status.unwrap_or_default();
        let untracked = status.lines().filter(|l| l.starts_with("??")).count();
        let modified = status.lines().filter(|l| !l.is_empty() && !l.starts_with("??")).count();
        let recent_commits = log.unwrap_or_default().lines().map(str::to_string).collect();
        Some(Self { branch, modified, untracked, recent_commits })
    }

    /// The git section of the system prompt.
    pub fn render(&self) -> String {
        let mut text = String::from("<git>\n");
        text.push_str(&format!("Current branch: {}\n", self.branch.as_deref().unwrap_or("(detached)")));
        text.push_str(&format!(
            "Status: {} modified, {} untracked (run `git status` for details)\n",
            self.modified, self.untracked
        ));
        if self.recent_commits.is_empty() {
            text.push_str("Recent commits: none\n");
        } else {
            text.push_str("Recent commits:\n");
            for c in &self.recent_commits {
                text.push_str(&format!("- {c}\n"));
            }
        }
        text.push_str("</git>");
        text
    }
}

async fn git(cwd: &Path, args: &[&str]) -> Option<String> {
    let mut cmd = tokio::process::Command::new("git");
    cmd.args(args).current_dir(cwd).stdin(std::process::Stdio::null()).kill_on_drop(true);
    let out = tokio::time::timeout(GIT_TIMEOUT, cmd.output()).await.ok()?.ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The OS's name and version, read once per process (it does not change while we run).
async fn os_version() -> Option<String> {
    static VERSION: tokio::sync::OnceCell<Option<String>> = tokio::sync::OnceCell::const_new();
    VERSION.get_or_init(read_os_version).await.clone()
}

async fn read_os_version() -> Option<String> {
    // A few hundred bytes from the page cache: not worth a blocking-pool thread.
    if let Ok(text) = std::fs::read_to_string("/etc/os-release") {
        let pretty = text.lines().find_map(|l| l.strip_prefix("PRETTY_NAME="));
        if let Some(name) = pretty {
            return Some(name.trim_matches('"').to_string());
        }
    }
    let out = tokio::process::Command::new("uname").args(["-sr"]).output().await.ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Training cutoff of well-known model families (as published by their providers).
pub fn knowledge_cutoff(model: &str) -> Option<&'static str> {
    let m = model.to_ascii_lowercase();
    let table: &[(&str, &str)] = &[
        ("claude-opus-4", "2025-03"),
        ("claude-sonnet-4-5", "2025-07"),
        ("claude-haiku-4-5", "2025-02"),
        ("claude-sonnet-4", "2025-03"),
        ("claude-3-7", "2024-11"),
        ("gpt-5", "2024-09"),
        ("gpt-4.1", "2024-06"),
        ("gemini-3", "2025-01"),
        ("gemini-2.5", "2025-01"),
    ];
    table.iter().find(|(prefix, _)| m.starts_with(prefix)).map(|(_, d)| *d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn block_lists_every_field() {
        let tmp = tempfile::tempdir().unwrap();
        let info = EnvironmentInfo::capture(tmp.path(), "claude-sonnet-4-5").await;
        let text = info.render();
        for field in [
            "Working directory: ",
            "Is git repository: false",
            "Platform: ",
            "Today's date: ",
            "Model: claude-sonnet-4-5",
            "Knowledge cutoff: 2025-07",
        ] {
            assert!(text.contains(field), "missing {field:?} in {text}");
        }
    }

    #[tokio::test]
    async fn git_snapshot_counts_and_commits() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let run = |args: &[&str]| {
            let ok = std::process::Command::new("git").args(args).current_dir(dir).output().unwrap();
            assert!(ok.status.success(), "{:?}", String::from_utf8_lossy(&ok.stderr));
        };
        run(&["init", "-q", "-b", "trunk"]);
        run(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first"]);
        std::fs::write(dir.join("new.txt"), "x").unwrap();
        let snap = GitSnapshot::capture(dir).await.expect("a repository");
        assert_eq!(snap.branch.as_deref(), Some("trunk"));
        assert_eq!(snap.untracked, 1);
        assert_eq!(snap.modified, 0);
        assert_eq!(snap.recent_commits.len(), 1);
        assert!(snap.recent_commits[0].ends_with("first"));
        let info = EnvironmentInfo::capture(dir, "gpt-5.1-codex").await;
        assert!(info.render().contains("Git branch: trunk"));
        assert!(snap.render().contains("1 untracked"));
    }
}
