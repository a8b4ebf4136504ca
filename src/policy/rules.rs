//! Allow-rules for shell commands, kept per project in `<data dir>/permissions.json`.
//!
//! Invariant: a rule is a command prefix matched on word boundaries, and it never matches a
//! command that chains or redirects (`;`, `&`, `|`, backticks, `$(`, `>`, `<`, newlines):
//! "always allow `cargo test`" must not allow `cargo test && rm -rf ~`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A rule could not be stored.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the permission rules {path}: {message}")]
pub struct RulesError {
    path: String,
    message: String,
}

impl RulesError {
    fn at(path: &Path, error: impl std::fmt::Display) -> Self {
        Self { path: path.display().to_string(), message: error.to_string() }
    }
}

/// The rules of every project, loaded lazily and written back on each change.
#[derive(Debug)]
pub struct PermissionRules {
    file: Option<PathBuf>,
    rules: Mutex<BTreeMap<String, Vec<String>>>,
}

const CONTROL: &[&str] = &[";", "&", "|", "`", "$(", ">", "<", "\n", "\r"];

/// Whether `prefix` allows `command`.
pub fn prefix_allows(prefix: &str, command: &str) -> bool {
    let prefix = prefix.trim();
    let command = command.trim();
    if prefix.is_empty() || CONTROL.iter().any(|c| command.contains(c)) {
        return false;
    }
    let prefix_words: Vec<&str> = prefix.split_whitespace().collect();
    let command_words: Vec<&str> = command.split_whitespace().collect();
    command_words.len() >= prefix_words.len() && command_words.iter().zip(&prefix_words).all(|(c, p)| c == p)
}

/// The prefix "always allow" records for a command: its first two words (`cargo test`,
/// `npm run`), or the only word.
pub fn rule_for(command: &str) -> String {
    command.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
}

impl PermissionRules {
    /// Rules stored in `<data_dir>/permissions.json`; `None` keeps them in memory only.
    pub fn open(data_dir: Option<&Path>) -> Self {
        let file = data_dir.map(|d| d.join("permissions.json"));
        let rules = file
            .as_deref()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|text| match serde_json::from_str(&text) {
                Ok(rules) => Some(rules),
                Err(e) => {
                    tracing::warn!("ignoring unreadable permission rules: {e}");
                    None
                }
            })
            .unwrap_or_default();
        Self { file, rules: Mutex::new(rules) }
    }

    fn key(root: &Path) -> String {
        root.display().to_string()
    }

    /// MCP rules are kept beside a project's command prefixes, under a key no path has.
    fn mcp_key(root: &Path) -> String {
        format!("mcp:{}", root.display())
    }

    /// Whether a stored rule of `root` allows `tool` of the MCP server `server`.
    pub fn allows_mcp(&self, root: &Path, server: &str, tool: &str) -> bool {
        let rule = format!("{server}/{tool}");
        let rules = self.rules.lock().unwrap_or_else(|p| p.into_inner());
        rules.get(&Self::mcp_key(root)).is_some_and(|list| list.contains(&rule))
    }

    /// Always allows `tool` of `server` in `root`, and writes the file.
    pub fn add_mcp(&self, root: &Path, server: &str, tool: &str) -> Result<(), RulesError> {
        self.add_under(Self::mcp_key(root), &format!("{server}/{tool}"))
    }

    /// Whether a stored rule of `root` allows `command`.
    pub fn allows(&self, root: &Path, command: &str) -> bool {
        let rules = self.rules.lock().unwrap_or_else(|p| p.into_inner());
        rules.get(&Self::key(root)).is_some_and(|list| list.iter().any(|p| prefix_allows(p, command)))
    }

    pub fn rules(&self, root: &Path) -> Vec<String> {
        let rules = self.rules.lock().unwrap_or_else(|p| p.into_inner());
        rules.get(&Self::key(root)).cloned().unwrap_or_default()
    }

    /// Adds `prefix` for `root` and writes the file.
    pub fn add(&self, root: &Path, prefix: &str) -> Result<(), RulesError> {
        self.add_under(Self::key(root), prefix)
    }

    fn add_under(&self, key: String, prefix: &str) -> Result<(), RulesError> {
        let snapshot = {
            let mut rules = self.rules.lock().unwrap_or_else(|p| p.into_inner());
            let list = rules.entry(key).or_default();
            if !list.iter().any(|p| p == prefix) {
                list.push(prefix.to_string());
            }
            rules.clone()
        };
        let Some(file) = &self.file else { return Ok(()) };
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(|e| RulesError::at(parent, e))?;
        }
        let text = serde_json::to_string_pretty(&snapshot).map_err(|e| RulesError::at(file, e))?;
        let tmp = file.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(|e| RulesError::at(&tmp, e))?;
        std::fs::rename(&tmp, file).map_err(|e| RulesError::at(file, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_match_whole_words_and_never_chains() {
        assert!(prefix_allows("cargo test", "cargo test --all"));
        assert!(prefix_allows("cargo test", "  cargo   test"));
        assert!(!prefix_allows("cargo test", "cargo testx"));
        assert!(!prefix_allows("cargo test", "cargo build"));
        assert!(!prefix_allows("cargo test", "cargo test && rm -rf ~"));
        assert!(!prefix_allows("cargo test", "cargo test > out"));
        assert!(!prefix_allows("", "ls"));
        assert_eq!(rule_for("cargo test --all"), "cargo test");
        assert_eq!(rule_for("ls"), "ls");
    }

    #[test]
    fn rules_persist_per_project() {
        let dir = tempfile::tempdir().expect("tempdir");
        let rules = PermissionRules::open(Some(dir.path()));
        rules.add(Path::new("/p1"), "cargo test").expect("add");
        rules.add(Path::new("/p1"), "cargo test").expect("add twice");
        let again = PermissionRules::open(Some(dir.path()));
        assert!(again.allows(Path::new("/p1"), "cargo test -q"));
        assert!(!again.allows(Path::new("/p2"), "cargo test -q"));
        assert_eq!(again.rules(Path::new("/p1")), vec!["cargo test".to_string()]);
    }
}
