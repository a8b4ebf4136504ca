//! Instruction files (AGENTS.md, CLAUDE.md, GEMINI.md, .codex/instructions.md): watched through
//! the client (`workspace/didChangeWatchedFiles`, registered dynamically when supported) and,
//! always, through `notify` on the workspace roots (non-recursive, so a client that announces
//! watching but does not watch the disk still gets reloads), each root's `.codex` directory (also
//! when it is created after the server started), and those ancestors of a root that hold an
//! instruction file when the watch starts. Ancestors without one are not watched: a watch on
//! `/tmp` or a home directory would wake the server for every file created there. An instruction
//! file created above a root later applies to the sessions started after it (they read the chain
//! afresh) and to all of them after the next workspace-folder change.
//!
//! Invariant: a change reloads the project-doc layer of every session whose root it can affect
//! (the file's directory is the root, above it, or below it); the reload takes effect on the
//! next model call and is announced as an `agentls/event` (`project_docs_reloaded`) and in the
//! log.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use notify::{RecursiveMode, Watcher};

use tower_lsp_server::ls_types::request::RegisterCapability;
use tower_lsp_server::ls_types::{
    DidChangeWatchedFilesRegistrationOptions, FileSystemWatcher, GlobPattern, MessageType, Registration,
    RegistrationParams,
};

use super::protocol::{EventNotification, EventParams};
use super::state::ServerState;
use crate::profiles::project_docs::{INSTRUCTION_FILES, is_instruction_file};
use crate::session::{Event, EventData, ProjectDocsReloaded};

/// Asks the client to watch instruction files (only when it supports dynamic registration).
pub async fn register_with_client(state: &ServerState) {
    if !state.profile().watch_files_dynamically {
        return;
    }
    let options = DidChangeWatchedFilesRegistrationOptions {
        watchers: INSTRUCTION_FILES
            .iter()
            .map(|name| FileSystemWatcher {
                glob_pattern: GlobPattern::String(format!("**/{name}")),
                kind: None,
            })
            .collect(),
    };
    let registration = Registration {
        id: "agentls-instruction-files".into(),
        method: "workspace/didChangeWatchedFiles".into(),
        register_options: serde_json::to_value(options).ok(),
    };
    if let Err(e) = state
        .outbound
        .request::<RegisterCapability>(RegistrationParams { registrations: vec![registration] })
        .await
    {
        tracing::warn!(
            "the editor did not register file watching ({e}); relying on the server's own watcher"
        );
    }
}

/// Directories watched for `root`: the root, its `.codex`, and every ancestor that holds an
/// instruction file now.
fn watched_dirs(root: &Path) -> Vec<PathBuf> {
    // Above the root only files of the directory itself apply (`.codex/` is the root's own).
    let holds_instructions = |dir: &Path| {
        INSTRUCTION_FILES.iter().filter(|n| !n.contains('/')).any(|name| dir.join(name).is_file())
    };
    let mut dirs = vec![root.to_path_buf()];
    dirs.extend(root.ancestors().skip(1).filter(|dir| holds_instructions(dir)).map(Path::to_path_buf));
    let codex = root.join(".codex");
    if codex.is_dir() {
        dirs.push(codex);
    }
    dirs
}

/// The server's own watcher. Kept alive by the server; a `.codex` directory created under a
/// watched directory is added to it when it appears, so its `instructions.md` is watched too.
pub struct InstructionWatcher {
    _watcher: Arc<Mutex<notify::RecommendedWatcher>>,
}

fn is_codex_dir(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == ".codex")
}

/// Starts the server-side watcher on `roots`; the returned watcher must be kept alive.
pub fn watch_roots(state: &Arc<ServerState>, roots: &[PathBuf]) -> Option<InstructionWatcher> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<PathBuf>();
    let mut watcher = match notify::recommended_watcher(move |result: notify::Result<notify::Event>| {
        if let Ok(event) = result
            && !event.kind.is_access()
        {
            let created = event.kind.is_create();
            for path in
                event.paths.into_iter().filter(|p| is_instruction_file(p) || (created && is_codex_dir(p)))
            {
                let _ = tx.send(path);
            }
        }
    }) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!("cannot watch instruction files: {e}");
            return None;
        }
    };
    let mut seen = Vec::new();
    for dir in roots.iter().flat_map(|r| watched_dirs(r)) {
        if seen.contains(&dir) {
            continue;
        }
        if let Err(e) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
            tracing::debug!("not watching {}: {e}", dir.display());
        }
        seen.push(dir);
    }
    let watcher = Arc::new(Mutex::new(watcher));
    let added = Arc::downgrade(&watcher);
    let state = Arc::downgrade(state);
    tokio::spawn(async move {
        while let Some(path) = rx.recv().await {
            let Some(state) = state.upgrade() else { break };
            if !is_codex_dir(&path) {
                reload(&state, &path).await;
                continue;
            }
            // A new `.codex` directory: watch it, and load an instructions.md written before
            // the watch was in place.
            let Some(watcher) = added.upgrade() else { break };
            let watched =
                watcher.lock().unwrap_or_else(|p| p.into_inner()).watch(&path, RecursiveMode::NonRecursive);
            if let Err(e) = watched {
                tracing::debug!("not watching {}: {e}", path.display());
            }
            let instructions = path.join("instructions.md");
            if instructions.is_file() {
                reload(&state, &instructions).await;
            }
        }
    });
    Some(InstructionWatcher { _watcher: watcher })
}

/// Reloads the project docs of every session `path` can affect.
pub async fn reload(state: &ServerState, path: &Path) {
    let dir = match path.parent() {
        Some(d) if d.file_name().is_some_and(|n| n == ".codex") => d.parent().unwrap_or(d),
        Some(d) => d,
        None => return,
    };
    let affected: Vec<_> = state
        .sessions
        .all()
        .into_iter()
        .filter(|s| s.root.starts_with(dir) || dir.starts_with(&s.root))
        .collect();
    tracing::info!(path = %path.display(), sessions = affected.len(), "instruction file changed; reloading project docs");
    for session in &affected {
        session.handle.reload_project_docs();
        if !state.profile().plugin {
            continue;
        }
        let message = format!("{} changed; it applies from the next model call", path.display());
        let reloaded = ProjectDocsReloaded { path: path.to_path_buf(), message };
        let event = Event::new(session.id.as_str().into(), EventData::ProjectDocsReloaded(reloaded));
        state.outbound.notify::<EventNotification>(EventParams::of(&event)).await;
    }
    if !affected.is_empty() {
        state
            .outbound
            .log(MessageType::INFO, format!("agentls: reloaded instructions from {}", path.display()))
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ancestors_holding_instructions_are_watched() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let top = tmp.path().canonicalize().expect("canonical");
        let quiet = top.join("quiet");
        let root = quiet.join("root");
        std::fs::create_dir_all(root.join(".codex")).expect("mkdir");
        std::fs::write(top.join("AGENTS.md"), "outer rules").expect("write");
        let dirs = watched_dirs(&root);
        assert_eq!(dirs[0], root, "the root is always watched");
        assert!(dirs.contains(&root.join(".codex")));
        assert!(dirs.contains(&top), "an ancestor with AGENTS.md is watched: {dirs:?}");
        assert!(!dirs.contains(&quiet), "an ancestor without instruction files is not: {dirs:?}");
    }
}
