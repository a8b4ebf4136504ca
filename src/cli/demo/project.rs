//! The demo's sample project and the settings the server gets for it.
//!
//! Invariant: the demo only ever writes inside a folder it created or marked: a new folder, an
//! empty one, or one holding the marker `.agentls-demo/` of a previous demo. Everything the
//! server keeps (cassette, configuration, data directory, log) lives under the marker, so the
//! user's own configuration, keys and stored sessions play no part.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::config::ProviderKind;

/// The folder inside the project that holds the demo's server files.
pub const MARKER: &str = ".agentls-demo";
/// The sample project: path and text of each file.
pub const FILES: &[(&str, &str)] =
    &[("greet.py", include_str!("assets/greet.py")), ("README.md", include_str!("assets/README.md"))];
/// The file the recorded session changes.
pub const EDITED: &str = "greet.py";
/// The recorded model side of the session, played by the `replay` provider.
const CASSETTE: &str = include_str!("assets/session.jsonl");

pub struct Project {
    /// Absolute, canonical.
    pub root: PathBuf,
}

impl Project {
    /// Creates the sample project in `dir`, or in a new folder under the temporary directory.
    pub fn prepare(dir: Option<&Path>) -> Result<Self, String> {
        let root = match dir {
            Some(dir) => {
                check_reusable(dir)?;
                dir.to_path_buf()
            }
            None => std::env::temp_dir()
                .join(format!("agentls-demo-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])),
        };
        let io =
            |what: &str, path: &Path, e: std::io::Error| format!("cannot {what} {}: {e}", path.display());
        std::fs::create_dir_all(&root).map_err(|e| io("create", &root, e))?;
        let root = root.canonicalize().map_err(|e| io("resolve", &root, e))?;
        let project = Self { root };
        let marker = project.marker();
        if marker.exists() {
            std::fs::remove_dir_all(&marker).map_err(|e| io("clear", &marker, e))?;
        }
        std::fs::create_dir_all(project.data_dir()).map_err(|e| io("create", &marker, e))?;
        for (name, text) in FILES {
            let path = project.root.join(name);
            std::fs::write(&path, text).map_err(|e| io("write", &path, e))?;
        }
        std::fs::write(project.cassette(), CASSETTE).map_err(|e| io("write", &project.cassette(), e))?;
        // The user configuration file of the demo's server: only where its log goes.
        let config = format!("[log]\nfile = {}\n", toml_string(&project.log_file()));
        std::fs::write(project.config_file(), config).map_err(|e| io("write", &project.config_file(), e))?;
        Ok(project)
    }

    pub fn marker(&self) -> PathBuf {
        self.root.join(MARKER)
    }
    pub fn cassette(&self) -> PathBuf {
        self.marker().join("session.cassette.jsonl")
    }
    pub fn log_file(&self) -> PathBuf {
        self.marker().join("server.log")
    }
    fn config_file(&self) -> PathBuf {
        self.marker().join("config.toml")
    }
    fn data_dir(&self) -> PathBuf {
        self.marker().join("data")
    }

    pub fn root_uri(&self) -> String {
        url::Url::from_directory_path(&self.root)
            .map(|u| u.as_str().trim_end_matches('/').to_string())
            .unwrap_or_else(|()| format!("file://{}", self.root.display()))
    }

    pub fn original(&self, name: &str) -> Option<&'static str> {
        FILES.iter().find(|(n, _)| *n == name).map(|(_, text)| *text)
    }

    /// Environment changes for the server: its own configuration file and data directory; no
    /// provider choice, key or endpoint of the user's leaks in.
    pub fn server_env(&self) -> Vec<(String, Option<String>)> {
        let mut env = vec![
            ("AGENTLS_CONFIG".to_string(), Some(self.config_file().display().to_string())),
            ("AGENTLS_DATA_DIR".to_string(), Some(self.data_dir().display().to_string())),
            ("AGENTLS_PROVIDER".to_string(), None),
            ("AGENTLS_MODEL".to_string(), None),
        ];
        for kind in ProviderKind::ALL {
            let vars = kind.key_vars().iter().copied().chain(kind.base_url_var());
            env.extend(vars.map(|var| (var.to_string(), None)));
        }
        env
    }

    /// The server's `initializationOptions`: the replay provider with the recorded session, every
    /// change reviewed, every command asked.
    pub fn initialization_options(&self) -> Value {
        json!({
            "provider": "replay",
            "cassette": self.cassette().display().to_string(),
            "approval": "review",
            "shell": {"permission": "ask"},
        })
    }
}

/// `dir` may be used when it does not exist, is empty, or was made by a previous demo.
fn check_reusable(dir: &Path) -> Result<(), String> {
    let mut entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot use {}: {e}", dir.display())),
    };
    if entries.next().is_none() || dir.join(MARKER).is_dir() {
        return Ok(());
    }
    Err(format!(
        "{} is not empty and was not made by `agentls demo`; give --dir a new or empty folder",
        dir.display()
    ))
}

fn toml_string(path: &Path) -> String {
    Value::String(path.display().to_string()).to_string()
}
