//! `agentls sessions [list|show ID|rm ID]`: the stored transcripts under the data directory.

use std::process::ExitCode;

use serde_json::Value;

use super::SessionsAction;
use crate::config::Env;
use crate::store::{TranscriptStore, data_dir};

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
            store.remove(&id).map_err(|e| e.to_string())?;
            println!("removed {id}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
