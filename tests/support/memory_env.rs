//! An execution environment held in memory and rooted at a path that does not exist on disk:
//! what a container or a remote host looks like to the tools. It records every operation and
//! can be told to fail one, so a test sees what the tools and the committer asked of it, and
//! that nothing reached the real disk behind it. Runs no commands.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use agentls::exec::{
    DirEntry, ExecError, ExecRequest, ExecResult, ExecutionEnvironment, FileKind, FileStat, GrepFile,
    GrepLine, GrepMode, GrepOptions, GrepResult,
};
use async_trait::async_trait;

/// The operations the environment records and can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Compare,
    Write,
    Create,
    Remove,
    Stat,
    List,
    Grep,
    Glob,
}

struct File {
    bytes: Vec<u8>,
    mode: u32,
    /// Bumped on every write, for glob's newest-first order.
    written_at: u64,
}

/// One failure to inject: the `skip + 1`-th `op` on `path` fails.
struct Fault {
    op: Op,
    path: PathBuf,
    skip: usize,
}

#[derive(Default)]
struct State {
    files: BTreeMap<PathBuf, File>,
    dirs: BTreeSet<PathBuf>,
    clock: u64,
    log: Vec<(Op, PathBuf)>,
    faults: Vec<Fault>,
}

pub struct MemoryEnvironment {
    root: PathBuf,
    state: Mutex<State>,
}

impl MemoryEnvironment {
    /// An empty environment whose working directory and only root is `root`.
    pub fn new(root: impl Into<PathBuf>) -> Arc<Self> {
        let root = root.into();
        let mut state = State::default();
        state.dirs.insert(root.clone());
        Arc::new(Self { root, state: Mutex::new(state) })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Puts a file (and its folders) at `relative` below the root.
    pub fn put(&self, relative: &str, text: &str) {
        let path = self.root.join(relative);
        let mut state = self.lock();
        add_parents(&mut state, &path);
        state.clock += 1;
        let written_at = state.clock;
        state.files.insert(path, File { bytes: text.as_bytes().to_vec(), mode: 0o644, written_at });
    }

    pub fn put_mode(&self, relative: &str, mode: u32) {
        if let Some(file) = self.lock().files.get_mut(&self.root.join(relative)) {
            file.mode = mode;
        }
    }

    /// The text at `relative`, `None` when no file is there.
    pub fn text(&self, relative: &str) -> Option<String> {
        let state = self.lock();
        state
            .files
            .get(&self.root.join(relative))
            .map(|file| String::from_utf8_lossy(&file.bytes).into_owned())
    }

    pub fn mode(&self, relative: &str) -> Option<u32> {
        self.lock().files.get(&self.root.join(relative)).map(|file| file.mode)
    }

    /// Every file below the root, relative, with its text.
    pub fn files(&self) -> BTreeMap<String, String> {
        let state = self.lock();
        state
            .files
            .iter()
            .map(|(path, file)| {
                let relative = path.strip_prefix(&self.root).unwrap_or(path).display().to_string();
                (relative, String::from_utf8_lossy(&file.bytes).into_owned())
            })
            .collect()
    }

    /// Makes the `skip + 1`-th `op` on `relative` fail.
    pub fn fail(&self, op: Op, relative: &str, skip: usize) {
        self.lock().faults.push(Fault { op, path: self.root.join(relative), skip });
    }

    /// The operations asked of the environment so far.
    pub fn log(&self) -> Vec<(Op, PathBuf)> {
        self.lock().log.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records `op` on `path` (which must be inside the root) and fails it when told to.
    fn enter(&self, op: Op, path: &Path) -> Result<(PathBuf, std::sync::MutexGuard<'_, State>), ExecError> {
        let path = self.resolve_path(path)?;
        let mut state = self.lock();
        state.log.push((op, path.clone()));
        if let Some(at) = state.faults.iter().position(|fault| fault.op == op && fault.path == path) {
            if state.faults[at].skip == 0 {
                state.faults.remove(at);
                return Err(ExecError::Io {
                    path: path.display().to_string(),
                    message: format!("injected failure of {op:?}"),
                });
            }
            state.faults[at].skip -= 1;
        }
        Ok((path, state))
    }

    fn relative<'p>(&self, path: &'p Path, below: &Path) -> &'p Path {
        path.strip_prefix(below).unwrap_or(path)
    }
}

fn add_parents(state: &mut State, path: &Path) {
    for ancestor in path.ancestors().skip(1) {
        if !state.dirs.insert(ancestor.to_path_buf()) {
            break;
        }
    }
}

fn not_found(path: &Path) -> ExecError {
    ExecError::NotFound { path: path.display().to_string() }
}

#[async_trait]
impl ExecutionEnvironment for MemoryEnvironment {
    async fn read_file(
        &self,
        path: &Path,
        offset: Option<usize>,
        limit: Option<usize>,
    ) -> Result<String, ExecError> {
        let (path, state) = self.enter(Op::Read, path)?;
        let file = state.files.get(&path).ok_or_else(|| not_found(&path))?;
        let text = String::from_utf8(file.bytes.clone())
            .map_err(|_| ExecError::InvalidInput(format!("{} is not text", path.display())))?;
        let skip = offset.unwrap_or(1).saturating_sub(1);
        Ok(text.split_inclusive('\n').skip(skip).take(limit.unwrap_or(usize::MAX)).collect())
    }

    async fn read_bytes(&self, path: &Path, max_len: u64) -> Result<Arc<[u8]>, ExecError> {
        let (path, state) = self.enter(Op::Read, path)?;
        if state.dirs.contains(&path) {
            return Err(ExecError::IsDirectory { path: path.display().to_string() });
        }
        let file = state.files.get(&path).ok_or_else(|| not_found(&path))?;
        if file.bytes.len() as u64 > max_len {
            let size = file.bytes.len() as u64;
            return Err(ExecError::TooLarge { path: path.display().to_string(), size, limit: max_len });
        }
        Ok(Arc::from(file.bytes.as_slice()))
    }

    async fn file_equals(&self, path: &Path, expected: &[u8]) -> Result<bool, ExecError> {
        let (path, state) = self.enter(Op::Compare, path)?;
        if state.dirs.contains(&path) {
            return Err(ExecError::IsDirectory { path: path.display().to_string() });
        }
        Ok(state.files.get(&path).ok_or_else(|| not_found(&path))?.bytes == expected)
    }

    async fn write_file(&self, path: &Path, content: &str) -> Result<(), ExecError> {
        let (path, mut state) = self.enter(Op::Write, path)?;
        if state.dirs.contains(&path) {
            return Err(ExecError::IsDirectory { path: path.display().to_string() });
        }
        add_parents(&mut state, &path);
        state.clock += 1;
        let written_at = state.clock;
        let mode = state.files.get(&path).map_or(0o644, |file| file.mode);
        state.files.insert(path, File { bytes: content.as_bytes().to_vec(), mode, written_at });
        Ok(())
    }

    async fn create_file(&self, path: &Path, content: &str, mode: Option<u32>) -> Result<(), ExecError> {
        let (path, mut state) = self.enter(Op::Create, path)?;
        if state.files.contains_key(&path) || state.dirs.contains(&path) {
            return Err(ExecError::AlreadyExists { path: path.display().to_string() });
        }
        add_parents(&mut state, &path);
        state.clock += 1;
        let written_at = state.clock;
        let file = File { bytes: content.as_bytes().to_vec(), mode: mode.unwrap_or(0o644), written_at };
        state.files.insert(path, file);
        Ok(())
    }

    async fn remove_file(&self, path: &Path) -> Result<(), ExecError> {
        let (path, mut state) = self.enter(Op::Remove, path)?;
        if state.dirs.contains(&path) {
            return Err(ExecError::IsDirectory { path: path.display().to_string() });
        }
        state.files.remove(&path).map(|_| ()).ok_or_else(|| not_found(&path))
    }

    async fn stat(&self, path: &Path) -> Result<Option<FileStat>, ExecError> {
        let (path, state) = self.enter(Op::Stat, path)?;
        if state.dirs.contains(&path) {
            return Ok(Some(FileStat { kind: FileKind::Directory, len: 0, mode: Some(0o755) }));
        }
        Ok(state.files.get(&path).map(|file| FileStat {
            kind: FileKind::File,
            len: file.bytes.len() as u64,
            mode: Some(file.mode),
        }))
    }

    async fn file_exists(&self, path: &Path) -> bool {
        matches!(self.stat(path).await, Ok(Some(_)))
    }

    async fn list_directory(&self, path: &Path, depth: usize) -> Result<Vec<DirEntry>, ExecError> {
        let (path, state) = self.enter(Op::List, path)?;
        if !state.dirs.contains(&path) {
            return Err(not_found(&path));
        }
        let dirs = state.dirs.iter().map(|dir| (dir, None));
        let files = state.files.iter().map(|(file, contents)| (file, Some(contents.bytes.len() as u64)));
        let mut entries: Vec<DirEntry> = dirs
            .chain(files)
            .filter(|(entry, _)| entry.starts_with(&path) && **entry != path)
            .map(|(entry, size)| {
                let relative = self.relative(entry, &path);
                DirEntry {
                    name: relative.display().to_string(),
                    is_dir: size.is_none(),
                    size,
                    depth: relative.components().count() - 1,
                }
            })
            .filter(|entry| entry.depth < depth.max(1))
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    async fn exec_command(&self, _request: ExecRequest) -> Result<ExecResult, ExecError> {
        Err(ExecError::Spawn("this environment runs no commands".into()))
    }

    async fn grep(&self, pattern: &str, path: &Path, options: GrepOptions) -> Result<GrepResult, ExecError> {
        let regex = regex::RegexBuilder::new(pattern)
            .case_insensitive(options.case_insensitive)
            .build()
            .map_err(|e| ExecError::InvalidInput(e.to_string()))?;
        let (path, state) = self.enter(Op::Grep, path)?;
        let mut result = GrepResult::default();
        for (file, contents) in state.files.iter().filter(|(file, _)| file.starts_with(&path)) {
            let text = match options.buffers.get(file) {
                Some(buffer) => buffer.to_string(),
                None => String::from_utf8_lossy(&contents.bytes).into_owned(),
            };
            let lines: Vec<GrepLine> = text
                .lines()
                .enumerate()
                .filter(|(_, line)| regex.is_match(line))
                .map(|(at, line)| GrepLine {
                    line_number: at as u64 + 1,
                    text: line.to_string(),
                    is_context: false,
                })
                .collect();
            if lines.is_empty() {
                continue;
            }
            let match_count = lines.len() as u64;
            let lines = if options.mode == GrepMode::Content { lines } else { Vec::new() };
            result.files.push(GrepFile { path: file.clone(), lines, match_count, modified: None });
        }
        Ok(result)
    }

    async fn glob(&self, pattern: &str, path: &Path) -> Result<Vec<PathBuf>, ExecError> {
        let matcher = globset::Glob::new(pattern)
            .map_err(|e| ExecError::InvalidInput(e.to_string()))?
            .compile_matcher();
        let by_name = !pattern.contains('/');
        let (path, state) = self.enter(Op::Glob, path)?;
        let mut found: Vec<(u64, PathBuf)> = state
            .files
            .iter()
            .filter(|(file, _)| file.starts_with(&path))
            .filter(|(file, _)| {
                let relative = self.relative(file, &path);
                matcher.is_match(relative)
                    || (by_name && file.file_name().is_some_and(|n| matcher.is_match(n)))
            })
            .map(|(file, contents)| (contents.written_at, file.clone()))
            .collect();
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        Ok(found.into_iter().map(|(_, file)| file).collect())
    }

    fn resolve_path(&self, path: &Path) -> Result<PathBuf, ExecError> {
        // `Path::components` drops `.`; a `..` is refused rather than followed.
        let resolved: PathBuf = self.root.join(path).components().collect();
        if resolved.starts_with(&self.root) && !resolved.components().any(|c| c == Component::ParentDir) {
            Ok(resolved)
        } else {
            Err(ExecError::OutsideWorkspace {
                path: resolved.display().to_string(),
                roots: self.root.display().to_string(),
            })
        }
    }

    fn working_directory(&self) -> &Path {
        &self.root
    }

    fn platform(&self) -> String {
        "memory".into()
    }

    fn os_version(&self) -> String {
        "memory".into()
    }
}
