//! Project instruction files (spec §6.5, seed 002): which files a profile loads and in what order.
//!
//! Invariant: the rendered text never exceeds [`PROJECT_DOCS_BUDGET`] bytes of file content;
//! when it would, it is cut at a character boundary and ends with [`TRUNCATION_MARKER`].
//! Order: `AGENTS.md` files in directories above the project root (outermost first), then for each
//! directory from the project root down to the working directory, `AGENTS.md` followed by the
//! profile's own file. Deeper files come later and so take precedence.

use std::path::{Path, PathBuf};

use super::ProfileKind;

/// Total byte budget of project instructions.
pub const PROJECT_DOCS_BUDGET: usize = 32 * 1024;
pub const TRUNCATION_MARKER: &str = "[Project instructions truncated at 32KB]";

/// One loaded instruction file.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectDoc {
    pub path: PathBuf,
    pub content: String,
}

/// The instruction files found for a working directory, rendered for the system prompt.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProjectDocs {
    pub docs: Vec<ProjectDoc>,
    /// True when the budget cut the text.
    pub truncated: bool,
}

/// File names a profile loads in each directory, universal first.
pub fn instruction_files(kind: ProfileKind) -> &'static [&'static str] {
    match kind {
        ProfileKind::OpenAi => &["AGENTS.md", ".codex/instructions.md"],
        ProfileKind::Anthropic => &["AGENTS.md", "CLAUDE.md"],
        ProfileKind::Gemini => &["AGENTS.md", "GEMINI.md"],
    }
}

/// True when `path` names an instruction file some profile loads (for file watchers).
pub fn is_instruction_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    matches!(name, "AGENTS.md" | "CLAUDE.md" | "GEMINI.md")
        || (name == "instructions.md"
            && path.parent().and_then(|p| p.file_name()).is_some_and(|p| p == ".codex"))
}

/// The git root containing `dir` (the nearest ancestor with a `.git` entry), if any.
pub fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|d| d.join(".git").exists()).map(Path::to_path_buf)
}

/// Discovers and loads the instruction files for `cwd` under profile `kind`.
pub fn discover(cwd: &Path, kind: ProfileKind) -> ProjectDocs {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let root = git_root(&cwd).unwrap_or_else(|| cwd.clone());
    let mut paths = Vec::new();
    // Seed 002: AGENTS.md along the whole directory chain, also above the project root.
    let above: Vec<&Path> = root.ancestors().skip(1).collect();
    for dir in above.into_iter().rev() {
        paths.push(dir.join("AGENTS.md"));
    }
    let below: Vec<&Path> = cwd.ancestors().take_while(|d| d.starts_with(&root)).collect();
    for dir in below.into_iter().rev() {
        for name in instruction_files(kind) {
            paths.push(dir.join(name));
        }
    }
    let docs = paths
        .into_iter()
        .filter(|p| p.is_file())
        .filter_map(|path| match std::fs::read(&path) {
            Ok(bytes) => Some(ProjectDoc { content: String::from_utf8_lossy(&bytes).into_owned(), path }),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot read instruction file");
                None
            }
        })
        .filter(|d| !d.content.trim().is_empty());
    apply_budget(docs)
}

fn apply_budget(docs: impl Iterator<Item = ProjectDoc>) -> ProjectDocs {
    let mut out = ProjectDocs::default();
    let mut used = 0;
    for mut doc in docs {
        let room = PROJECT_DOCS_BUDGET - used;
        if doc.content.len() > room {
            let mut cut = room;
            while !doc.content.is_char_boundary(cut) {
                cut -= 1;
            }
            doc.content.truncate(cut);
            out.truncated = true;
            if !doc.content.is_empty() {
                out.docs.push(doc);
            }
            break;
        }
        used += doc.content.len();
        out.docs.push(doc);
    }
    out
}

impl ProjectDocs {
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The text that goes into the system prompt: each file under a header naming its path.
    pub fn render(&self) -> String {
        let mut text = String::new();
        for doc in &self.docs {
            text.push_str(&format!("## {}\n\n{}\n\n", doc.path.display(), doc.content.trim_end()));
        }
        if self.truncated {
            text.push_str(TRUNCATION_MARKER);
            text.push('\n');
        }
        text.trim_end().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn loads_root_to_cwd_with_provider_files_only() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        write(&root.join("AGENTS.md"), "root agents");
        write(&root.join("CLAUDE.md"), "root claude");
        write(&root.join("GEMINI.md"), "root gemini");
        write(&root.join(".codex/instructions.md"), "root codex");
        write(&root.join("sub/AGENTS.md"), "sub agents");
        write(&root.join("other/AGENTS.md"), "not on the path");
        let cwd = root.join("sub");

        let names =
            |kind| -> Vec<String> { discover(&cwd, kind).docs.iter().map(|d| d.content.clone()).collect() };
        assert_eq!(names(ProfileKind::Anthropic), ["root agents", "root claude", "sub agents"]);
        assert_eq!(names(ProfileKind::Gemini), ["root agents", "root gemini", "sub agents"]);
        assert_eq!(names(ProfileKind::OpenAi), ["root agents", "root codex", "sub agents"]);
    }

    #[test]
    fn agents_md_above_the_root_comes_first() {
        let tmp = tempfile::tempdir().unwrap();
        write(&tmp.path().join("AGENTS.md"), "outer");
        let root = tmp.path().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        write(&root.join("AGENTS.md"), "inner");
        let docs = discover(&root, ProfileKind::OpenAi);
        let texts: Vec<_> = docs.docs.iter().map(|d| d.content.as_str()).collect();
        assert_eq!(texts, ["outer", "inner"]);
    }

    #[test]
    fn budget_cuts_with_marker() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join(".git")).unwrap();
        write(&tmp.path().join("AGENTS.md"), &"é".repeat(20_000));
        let docs = discover(tmp.path(), ProfileKind::Anthropic);
        assert!(docs.truncated);
        let body: usize = docs.docs.iter().map(|d| d.content.len()).sum();
        assert!(body <= PROJECT_DOCS_BUDGET);
        assert!(docs.render().ends_with(TRUNCATION_MARKER));
    }

    #[test]
    fn recognises_instruction_files() {
        assert!(is_instruction_file(Path::new("/a/AGENTS.md")));
        assert!(is_instruction_file(Path::new("/a/.codex/instructions.md")));
        assert!(!is_instruction_file(Path::new("/a/docs/instructions.md")));
        assert!(!is_instruction_file(Path::new("/a/README.md")));
    }
}
