//! Project instruction files (spec §6.5, seed 002): which files a profile loads, in what order,
//! and which ones below the working directory apply once the agent works there.
//!
//! Invariants:
//! - The rendered text never exceeds [`PROJECT_DOCS_BUDGET`] bytes of file content; when it
//!   would, the budget goes to the nearest files first (the deepest directory, then its parents),
//!   the file that no longer fits is cut at a character boundary, the ones above it are left
//!   out, and the text ends with [`TRUNCATION_MARKER`]. The project's own files are never crowded
//!   out by files above the repository.
//! - Order: `AGENTS.md` files in directories above the project root (outermost first), then for
//!   each directory from the project root down to the working directory, `AGENTS.md` followed by
//!   the profile's own file. Deeper files come later and so take precedence.
//! - Nested files ([`NestedDocs`]): the files of a directory below the project root that is not
//!   on that chain apply once the agent reads or edits a file under it. Each one reaches the
//!   model once (again only when its text changes), outermost first, within the same budget.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ProfileKind;

/// Total byte budget of project instructions.
pub const PROJECT_DOCS_BUDGET: usize = 32 * 1024;
pub const TRUNCATION_MARKER: &str = "[Project instructions truncated at 32KB]";

/// One loaded instruction file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// Every instruction file any profile loads, as a path relative to the directory it applies to:
/// the one list file watchers and the profiles read (`instruction_files` picks from it).
pub const INSTRUCTION_FILES: &[&str] = &["AGENTS.md", "CLAUDE.md", "GEMINI.md", CODEX_INSTRUCTIONS];
const CODEX_INSTRUCTIONS: &str = ".codex/instructions.md";

/// File names a profile loads in each directory, universal first.
pub fn instruction_files(kind: ProfileKind) -> &'static [&'static str] {
    match kind {
        ProfileKind::OpenAi => &["AGENTS.md", CODEX_INSTRUCTIONS],
        ProfileKind::Anthropic => &["AGENTS.md", "CLAUDE.md"],
        ProfileKind::Gemini => &["AGENTS.md", "GEMINI.md"],
        ProfileKind::Code => &["AGENTS.md"],
    }
}

/// True when `path` names an instruction file some profile loads (for file watchers).
pub fn is_instruction_file(path: &Path) -> bool {
    INSTRUCTION_FILES.iter().any(|name| {
        let mut expected = Path::new(name).components().rev();
        let mut actual = path.components().rev();
        expected.all(|e| actual.next() == Some(e))
    })
}

/// The git root containing `dir` (the nearest ancestor with a `.git` entry), if any.
pub fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|d| d.join(".git").exists()).map(Path::to_path_buf)
}

/// The canonical working directory and the project root above it (its git root, else itself).
fn root_and_cwd(cwd: &Path) -> (PathBuf, PathBuf) {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let root = git_root(&cwd).unwrap_or_else(|| cwd.clone());
    (root, cwd)
}

/// Reads the instruction files among `paths` that exist and are not blank, in order.
fn load(paths: impl IntoIterator<Item = PathBuf>) -> impl Iterator<Item = ProjectDoc> {
    paths
        .into_iter()
        .filter(|p| p.is_file())
        .filter_map(|path| match std::fs::read(&path) {
            Ok(bytes) => Some(ProjectDoc { content: String::from_utf8_lossy(&bytes).into_owned(), path }),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot read instruction file");
                None
            }
        })
        .filter(|d| !d.content.trim().is_empty())
}

/// Discovers and loads the instruction files for `cwd` under profile `kind`.
pub fn discover(cwd: &Path, kind: ProfileKind) -> ProjectDocs {
    let (root, cwd) = root_and_cwd(cwd);
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
    apply_budget(load(paths).collect())
}

/// Keeps what fits in [`PROJECT_DOCS_BUDGET`], spending it on the last (nearest) files first;
/// `docs` stay in their order.
fn apply_budget(mut docs: Vec<ProjectDoc>) -> ProjectDocs {
    let mut used = 0;
    let mut keep_from = 0;
    let mut truncated = false;
    for (index, doc) in docs.iter_mut().enumerate().rev() {
        let room = PROJECT_DOCS_BUDGET - used;
        if doc.content.len() <= room {
            used += doc.content.len();
            continue;
        }
        let mut cut = room;
        while !doc.content.is_char_boundary(cut) {
            cut -= 1;
        }
        doc.content.truncate(cut);
        truncated = true;
        keep_from = if doc.content.is_empty() { index + 1 } else { index };
        break;
    }
    ProjectDocs { docs: docs.split_off(keep_from), truncated }
}

/// Instruction files of directories below the project root that the system prompt does not
/// carry (it carries the chain from the root down to the working directory). They apply once
/// the agent reads or edits a file under their directory, as Claude Code and codex load nested
/// instruction files; the session hands each one to the model as a message of its history.
#[derive(Debug)]
pub struct NestedDocs {
    kind: ProfileKind,
    root: PathBuf,
    cwd: PathBuf,
    /// Directories already looked at (forgotten by [`NestedDocs::refresh`]).
    checked: HashSet<PathBuf>,
    /// The files handed to the model, with the text it got.
    applied: BTreeMap<PathBuf, String>,
}

impl NestedDocs {
    pub fn new(cwd: &Path, kind: ProfileKind) -> Self {
        let (root, cwd) = root_and_cwd(cwd);
        Self { kind, root, cwd, checked: HashSet::new(), applied: BTreeMap::new() }
    }

    /// Records files the model already has (the history of a resumed session).
    pub fn restore(&mut self, docs: &[ProjectDoc]) {
        for doc in docs {
            self.applied.insert(doc.path.clone(), doc.content.clone());
        }
    }

    /// The directories whose instruction files apply to `file` and are not on the root chain,
    /// outermost first.
    fn dirs_of(&self, file: &Path) -> Vec<PathBuf> {
        let inside = |path: &Path| path.starts_with(&self.root).then(|| path.to_path_buf());
        let Some(file) = inside(file).or_else(|| {
            // Not resolved the way the root is (a symlink on the way): resolve the directory.
            let parent = file.parent()?.canonicalize().ok()?;
            inside(&parent.join(file.file_name()?))
        }) else {
            return Vec::new();
        };
        let mut dirs: Vec<PathBuf> = file
            .ancestors()
            .skip(1)
            .take_while(|dir| dir.starts_with(&self.root))
            .filter(|dir| !self.cwd.starts_with(dir))
            .map(Path::to_path_buf)
            .collect();
        dirs.reverse();
        dirs
    }

    /// The instruction files that apply to `files` (read or edited by the agent, or named as a
    /// prompt's context) and were not handed to the model yet, outermost first, within the budget.
    pub fn for_files<'a>(&mut self, files: impl IntoIterator<Item = &'a Path>) -> ProjectDocs {
        let mut paths = Vec::new();
        for file in files {
            for dir in self.dirs_of(file) {
                if !self.checked.insert(dir.clone()) {
                    continue;
                }
                paths.extend(instruction_files(self.kind).iter().map(|name| dir.join(name)));
            }
        }
        let fresh: Vec<PathBuf> = paths.into_iter().filter(|p| !self.applied.contains_key(p)).collect();
        self.take(load(fresh).collect())
    }

    /// After an instruction file changed: the handed-over files whose text is now different, and
    /// every directory is looked at again on the next touch (a file may have appeared).
    pub fn refresh(&mut self) -> ProjectDocs {
        self.checked.clear();
        let changed: Vec<ProjectDoc> = load(self.applied.keys().cloned())
            .filter(|doc| self.applied.get(&doc.path) != Some(&doc.content))
            .collect();
        self.take(changed)
    }

    /// Budgets `docs` and records the ones handed over with their whole text (a cut one is not
    /// "changed" at the next refresh).
    fn take(&mut self, docs: Vec<ProjectDoc>) -> ProjectDocs {
        let mut whole: BTreeMap<PathBuf, String> =
            docs.iter().map(|doc| (doc.path.clone(), doc.content.clone())).collect();
        let kept = apply_budget(docs);
        for doc in &kept.docs {
            if let Some(text) = whole.remove(&doc.path) {
                self.applied.insert(doc.path.clone(), text);
            }
        }
        kept
    }
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

    /// The message that hands nested instruction files (see [`NestedDocs`]) to the model.
    pub fn nested_message(&self) -> String {
        format!(
            "# Project instructions for a subdirectory\n\nYou are working on files under the directories of \
             these instruction files. Follow them for work there: they take precedence over the project \
             instructions of the system prompt, and over an earlier version of the same file.\n\n{}",
            self.render()
        )
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
    fn the_budget_goes_to_the_nearest_files_first() {
        let tmp = tempfile::tempdir().unwrap();
        write(&tmp.path().join("AGENTS.md"), &"o".repeat(PROJECT_DOCS_BUDGET));
        let root = tmp.path().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        write(&root.join("AGENTS.md"), "project rules");
        write(&root.join("CLAUDE.md"), "claude rules");
        let docs = discover(&root, ProfileKind::Anthropic);
        let texts: Vec<&str> = docs.docs.iter().map(|d| d.content.as_str()).collect();
        let room = PROJECT_DOCS_BUDGET - "project rules".len() - "claude rules".len();
        assert_eq!(texts, ["o".repeat(room).as_str(), "project rules", "claude rules"]);
        assert!(docs.truncated && docs.render().ends_with(TRUNCATION_MARKER));
    }

    #[test]
    fn a_file_above_that_gets_no_room_is_left_out() {
        let tmp = tempfile::tempdir().unwrap();
        write(&tmp.path().join("AGENTS.md"), "outer");
        let root = tmp.path().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        write(&root.join("AGENTS.md"), &"p".repeat(PROJECT_DOCS_BUDGET));
        let docs = discover(&root, ProfileKind::OpenAi);
        assert_eq!(docs.docs.len(), 1);
        assert_eq!(docs.docs[0].path, root.canonicalize().unwrap().join("AGENTS.md"));
        assert!(docs.truncated);
    }

    /// A repository with instructions at the root, in `sub` (the working directory), in
    /// `sub/deep` and `other/inner` below.
    fn nested_repo() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        write(&root.join("AGENTS.md"), "root agents");
        write(&root.join("sub/AGENTS.md"), "sub agents");
        write(&root.join("sub/deep/AGENTS.md"), "deep agents");
        write(&root.join("sub/deep/CLAUDE.md"), "deep claude");
        write(&root.join("sub/deep/GEMINI.md"), "deep gemini");
        write(&root.join("sub/deep/x/lib.rs"), "");
        write(&root.join("other/AGENTS.md"), "other agents");
        write(&root.join("other/inner/mod.rs"), "");
        (tmp, root)
    }

    fn contents(docs: &ProjectDocs) -> Vec<&str> {
        docs.docs.iter().map(|d| d.content.as_str()).collect()
    }

    #[test]
    fn nested_files_apply_once_to_work_below_them_and_never_repeat_the_chain() {
        let (_tmp, root) = nested_repo();
        let mut nested = NestedDocs::new(&root.join("sub"), ProfileKind::Anthropic);
        let first = nested.for_files([root.join("sub/deep/x/lib.rs").as_path()]);
        assert_eq!(contents(&first), ["deep agents", "deep claude"], "the profile's files only");
        assert!(nested.for_files([root.join("sub/deep/x/lib.rs").as_path()]).is_empty(), "once");
        // A sibling of the working directory: its directories are not on the chain.
        let other = nested.for_files([root.join("other/inner/mod.rs").as_path()]);
        assert_eq!(contents(&other), ["other agents"]);
        // The chain itself (root and working directory) is the system prompt's.
        assert!(
            nested.for_files([root.join("sub/AGENTS.md").as_path(), root.join("x.rs").as_path()]).is_empty()
        );
        // Outside the project: nothing.
        assert!(nested.for_files([Path::new("/etc/hostname")]).is_empty());
    }

    #[test]
    fn refresh_hands_over_changed_files_and_finds_new_ones() {
        let (_tmp, root) = nested_repo();
        let mut nested = NestedDocs::new(&root.join("sub"), ProfileKind::Gemini);
        let file = root.join("sub/deep/x/lib.rs");
        assert_eq!(contents(&nested.for_files([file.as_path()])), ["deep agents", "deep gemini"]);
        write(&root.join("sub/deep/GEMINI.md"), "deep gemini, revised");
        write(&root.join("sub/deep/x/AGENTS.md"), "x agents");
        assert!(nested.for_files([file.as_path()]).is_empty(), "nothing new before a refresh");
        assert_eq!(contents(&nested.refresh()), ["deep gemini, revised"]);
        assert_eq!(contents(&nested.for_files([file.as_path()])), ["x agents"]);
        assert!(nested.refresh().is_empty());
    }

    #[test]
    fn restored_files_are_not_handed_over_again() {
        let (_tmp, root) = nested_repo();
        let mut nested = NestedDocs::new(&root.join("sub"), ProfileKind::OpenAi);
        nested
            .restore(&[ProjectDoc { path: root.join("sub/deep/AGENTS.md"), content: "deep agents".into() }]);
        assert!(nested.for_files([root.join("sub/deep/x/lib.rs").as_path()]).is_empty());
        assert!(nested.refresh().is_empty());
    }

    #[test]
    fn recognises_instruction_files() {
        assert!(is_instruction_file(Path::new("/a/AGENTS.md")));
        assert!(is_instruction_file(Path::new("/a/.codex/instructions.md")));
        assert!(!is_instruction_file(Path::new("/a/docs/instructions.md")));
        assert!(!is_instruction_file(Path::new("/a/README.md")));
    }
}
