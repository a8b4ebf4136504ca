//! `agentls trust [DIR]`, `--list`, `--remove DIR`: the user's trusted folders
//! (`config::trust`). The store is the one the language server and every other host read.

use std::process::ExitCode;

use super::TrustArgs;
use crate::config::{Env, TrustStore};

pub fn run(env: &Env, args: TrustArgs) -> Result<ExitCode, String> {
    let store = TrustStore::for_user(env);
    let file = store.file().map(|f| f.display().to_string()).unwrap_or_else(|| "(no config folder)".into());
    if args.list {
        let folders = store.folders().map_err(|e| e.to_string())?;
        if folders.is_empty() {
            println!("no trusted folders ({file})");
        }
        for folder in folders {
            println!("{}", folder.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(dir) = args.remove {
        return if store.remove(&dir).map_err(|e| e.to_string())? {
            println!("no longer trusted: {} ({file})", dir.display());
            Ok(ExitCode::SUCCESS)
        } else {
            Err(format!("{} is not a trusted folder; `agentls trust --list` shows them", dir.display()))
        };
    }
    let dir = match args.dir {
        Some(dir) => dir,
        None => std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    let trusted = store.trust(&dir).map_err(|e| e.to_string())?;
    println!("trusted: {} and its subfolders ({file})", trusted.display());
    println!("its .agentls.toml applies in full to sessions started from now on");
    Ok(ExitCode::SUCCESS)
}
