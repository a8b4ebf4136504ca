//! `agentls sessions [list|show ID|rm ID|turns ID|undo ID|redo ID]`: the stored transcripts
//! under the data directory, and the checkpoints of their turns (sessions run with `exec`
//! included): undo and redo happen on disk, through the disk committer.

use std::process::ExitCode;

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::SessionsAction;
use crate::checkpoint::revert::Apply;
use crate::checkpoint::{Checkpoints, Direction};
use crate::config::Env;
use crate::exec::{ExecutionEnvironment, LocalExecutionEnvironment};
use crate::store::{StoreError, TranscriptStore, data_dir};
use crate::workspace::{Committer, DiskCommitter, FileOp, ResolvedChangeSet, Workspace, shown_path};

pub fn run(env: &Env, action: Option<SessionsAction>) -> Result<ExitCode, String> {
    let dir = data_dir(env).ok_or("no data directory; set AGENTLS_DATA_DIR")?;
    let store = TranscriptStore::new(&dir);
    match action.unwrap_or(SessionsAction::List) {
        SessionsAction::List => {
            let sessions = store.list().map_err(|e| e.to_string())?;
            if sessions.is_empty() {
                println!("no stored sessions in {}", dir.display());
            }
            for s in sessions {
                let title: String = s.title.lines().next().unwrap_or_default().chars().take(60).collect();
                println!(
                    "{}  {}  {}/{}  {}  {}",
                    s.header.session_id,
                    s.header.created,
                    s.header.profile,
                    s.header.model,
                    s.header.root.display(),
                    title
                );
            }
        }
        SessionsAction::Show { id } => {
            let t = store.load(&id).map_err(|e| e.to_string())?;
            println!(
                "session {} ({}/{}) in {}",
                t.header.session_id,
                t.header.profile,
                t.header.model,
                t.header.root.display()
            );
            for turn in crate::store::history(&t.records) {
                let turn = serde_json::to_value(&turn).unwrap_or_default();
                let kind = turn.get("type").and_then(Value::as_str).unwrap_or("record");
                let content = turn.get("content").and_then(Value::as_str).unwrap_or_default();
                println!("[{kind}] {content}");
            }
        }
        SessionsAction::Rm { id } => {
            // The transcript first: while another process has the session open, nothing goes.
            let transcript = match store.remove(&id) {
                Err(StoreError::NotFound(_)) => false,
                other => other.map(|()| true).map_err(|e| e.to_string())?,
            };
            let checkpoints = Checkpoints::remove(&dir, &id);
            if !transcript && checkpoints.is_err() {
                return Err(StoreError::NotFound(id).to_string());
            }
            println!("removed {id}");
        }
        SessionsAction::Turns { id } => {
            let checkpoints = Checkpoints::open_stored(&dir, &id).map_err(|e| e.to_string())?;
            for turn in checkpoints.turns().iter().filter(|t| t.changed_files()) {
                let state = match turn.undone {
                    Some(_) => "  (undone)",
                    None => "",
                };
                let prompt: String =
                    turn.prompt.lines().next().unwrap_or_default().chars().take(60).collect();
                println!("turn {}  {}  {prompt}{state}", turn.id, turn.started.format("%Y-%m-%d %H:%M:%S"));
                for file in &turn.files {
                    println!("  {}", shown_path(&file.path, &[checkpoints.root()]));
                }
            }
        }
        SessionsAction::Undo { id, turn } => {
            return held(&store, &id, || reverse(&dir, &id, Direction::Undo, turn));
        }
        SessionsAction::Redo { id } => {
            return held(&store, &id, || reverse(&dir, &id, Direction::Redo, None));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The files of the session's workspace, written by the disk committer.
struct OnDisk(DiskCommitter);

#[async_trait::async_trait]
impl Apply for OnDisk {
    async fn apply(&self, change: ResolvedChangeSet) -> Result<(), String> {
        self.0.commit(change).await.map(drop).map_err(|e| e.to_string())
    }
}

/// Runs `work` on session `id` while holding it, so no editor writes it meanwhile: refused while
/// another process has it open. A session without a transcript (an `agentls exec` run) has no
/// holder to wait for.
fn held(
    store: &TranscriptStore,
    id: &str,
    work: impl Fn() -> Result<ExitCode, String>,
) -> Result<ExitCode, String> {
    match store.while_held(id, &work) {
        Ok(done) => done,
        Err(StoreError::NotFound(_)) => work(),
        Err(e) => Err(e.to_string()),
    }
}

/// Undoes or redoes turns of a stored session on disk and prints what changed.
fn reverse(dir: &Path, id: &str, direction: Direction, turn: Option<u64>) -> Result<ExitCode, String> {
    let checkpoints = Checkpoints::open_stored(dir, id).map_err(|e| e.to_string())?;
    let root = checkpoints.root().to_path_buf();
    let env: Arc<dyn ExecutionEnvironment> = Arc::new(LocalExecutionEnvironment::new(root.clone()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let apply = OnDisk(DiskCommitter::new(env.clone()));
    let reversal = runtime
        .block_on(checkpoints.reverse(direction, turn, &Workspace::default(), env.as_ref(), &apply))
        .map_err(|e| e.to_string())?;
    let verb = match direction {
        Direction::Undo => "undid",
        Direction::Redo => "redid",
    };
    let turns: Vec<String> = reversal.turns.iter().map(u64::to_string).collect();
    println!("{verb} turn {} of session {id}", turns.join(", "));
    for (file, letter) in reversal.files() {
        match &file.op {
            FileOp::Rename { to } => {
                println!("  {letter} {} -> {}", file.display_path, shown_path(to, &[&root]))
            }
            _ => println!("  {letter} {}", file.display_path),
        }
    }
    for (path, reason) in &reversal.not_covered {
        println!("  not covered ({}): {}", reason.as_str(), shown_path(path, &[&root]));
    }
    Ok(ExitCode::SUCCESS)
}
