//! The file tools reach files only through the workspace (open buffers) and the execution
//! environment: every one of them works against an in-memory environment rooted at a path
//! that does not exist on disk, edits included (they are committed through that environment),
//! and nothing appears on the real disk behind it.

use crate::support::memory_env;

use std::sync::Arc;

use agentls::config::Approval;
use agentls::exec::{ExecutionEnvironment, ShellLimits};
use agentls::tools::ToolContext;
use agentls::tools::apply_patch::ApplyPatchTool;
use agentls::tools::edit_file::EditFileTool;
use agentls::tools::glob::GlobTool;
use agentls::tools::grep::GrepTool;
use agentls::tools::list_dir::ListDirTool;
use agentls::tools::read_file::{ReadFileShape, ReadFileTool};
use agentls::tools::read_many_files::ReadManyFilesTool;
use agentls::tools::registry::ToolRegistry;
use agentls::tools::replace::ReplaceTool;
use agentls::tools::write_file::WriteFileTool;
use agentls::workspace::{DiskPort, DocumentStore, ReadTracker, Workspace};
use memory_env::{MemoryEnvironment, Op};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Fixture {
    /// A real, empty folder: the environment's root is a path inside it that is never created.
    disk: tempfile::TempDir,
    env: Arc<MemoryEnvironment>,
    documents: Arc<DocumentStore>,
    registry: ToolRegistry,
    ctx: ToolContext,
}

impl Fixture {
    fn new() -> Self {
        let disk = tempfile::tempdir().unwrap();
        let env = MemoryEnvironment::new(disk.path().join("remote/project"));
        let dyn_env: Arc<dyn ExecutionEnvironment> = env.clone();
        let documents = Arc::new(DocumentStore::new());
        let mut registry = ToolRegistry::new();
        registry.register(Arc::new(ReadFileTool::new(ReadFileShape::FilePath)));
        registry.register(Arc::new(ReadManyFilesTool));
        registry.register(Arc::new(WriteFileTool::new(true)));
        registry.register(Arc::new(EditFileTool::new(true)));
        registry.register(Arc::new(ReplaceTool::new(true)));
        registry.register(Arc::new(ApplyPatchTool));
        registry.register(Arc::new(ListDirTool));
        registry.register(Arc::new(GlobTool));
        registry.register(Arc::new(GrepTool));
        let ctx = ToolContext {
            env: Arc::clone(&dyn_env),
            workspace: Arc::new(Workspace::new(documents.clone())),
            editor: Arc::new(DiskPort::new(dyn_env, Approval::Auto)),
            reads: Arc::new(ReadTracker::new()),
            cwd: env.root().to_path_buf(),
            call_id: "memory".into(),
            shell: ShellLimits::default(),
            cancel: CancellationToken::new(),
            model: None,
            output: None,
            agents: None,
        };
        Self { disk, env, documents, registry, ctx }
    }

    /// Runs a tool; the output, or the error prefixed with `ERROR: `.
    async fn call(&self, tool: &str, args: Value) -> String {
        let outcome = self.registry.execute_value(tool, args, &self.ctx).await;
        if outcome.is_error { format!("ERROR: {}", outcome.content) } else { outcome.content }
    }
}

const LIB: &str = "pub fn one() -> u32 {\n    1\n}\n";

#[tokio::test]
async fn every_file_tool_works_against_an_environment_that_is_not_the_disk() {
    let fx = Fixture::new();
    fx.env.put("src/lib.rs", LIB);
    fx.env.put("README.md", "# Demo\n");
    fx.env.put("docs/guide.md", "Read the lib.\n");

    // Reading and searching.
    let read = fx.call("read_file", json!({"file_path": "src/lib.rs"})).await;
    assert_eq!(read, "  1 | pub fn one() -> u32 {\n  2 |     1\n  3 | }\n");
    let listing = fx.call("list_dir", json!({"depth": 2})).await;
    assert!(
        listing.contains("[DIR] src/") && listing.contains("src/lib.rs") && listing.contains("README.md")
    );
    assert_eq!(fx.call("glob", json!({"pattern": "**/*.rs"})).await, "src/lib.rs\n");
    let found = fx.call("grep", json!({"pattern": "fn one"})).await;
    assert!(found.contains("src/lib.rs:1:pub fn one() -> u32 {"), "{found}");
    let many = fx.call("read_many_files", json!({"paths": ["src/**/*.rs", "README.md", "docs"]})).await;
    for part in ["--- src/lib.rs ---", "--- README.md ---", "--- docs/guide.md ---", "Read the lib."] {
        assert!(many.contains(part), "{part} in {many}");
    }
    let missing = fx.call("read_file", json!({"file_path": "nope.rs"})).await;
    assert!(missing.starts_with("ERROR:") && missing.contains("no such file"), "{missing}");

    // An open buffer is read instead of the environment's file.
    let lib = fx.env.root().join("src/lib.rs");
    fx.documents.open(&lib, "pub fn one() -> u32 {\n    1 // unsaved\n}\n", 1);
    let buffer = fx.call("read_file", json!({"file_path": "src/lib.rs"})).await;
    assert!(buffer.contains("// unsaved"), "{buffer}");
    fx.documents.close(&lib);
    fx.call("read_file", json!({"file_path": "src/lib.rs"})).await;

    // Editing: every change is committed through the environment.
    let edited = fx
        .call("edit_file", json!({"file_path": "src/lib.rs", "old_string": "    1", "new_string": "    2"}))
        .await;
    assert!(!edited.starts_with("ERROR:"), "{edited}");
    assert_eq!(fx.env.text("src/lib.rs").as_deref(), Some("pub fn one() -> u32 {\n    2\n}\n"));
    let replaced = fx
        .call("replace", json!({"file_path": "src/lib.rs", "old_string": "one", "new_string": "first"}))
        .await;
    assert!(!replaced.starts_with("ERROR:"), "{replaced}");
    let written = fx.call("write_file", json!({"file_path": "notes/todo.txt", "content": "ship it\n"})).await;
    assert!(written.starts_with("Created notes/todo.txt"), "{written}");
    let onto_folder = fx.call("write_file", json!({"file_path": "src", "content": "x"})).await;
    assert!(onto_folder.contains("is a directory"), "{onto_folder}");
    let patch = "*** Begin Patch\n*** Add File: src/new.rs\n+pub fn new() {}\n*** Update File: src/lib.rs\n\
                 *** Move to: src/moved.rs\n@@\n-    2\n+    3\n*** Delete File: README.md\n*** End Patch";
    let patched = fx.call("apply_patch", json!({"patch": patch})).await;
    assert!(patched.starts_with("Success."), "{patched}");
    let files: Vec<(String, String)> = fx.env.files().into_iter().collect();
    let expected = [
        ("docs/guide.md", "Read the lib.\n"),
        ("notes/todo.txt", "ship it\n"),
        ("src/moved.rs", "pub fn first() -> u32 {\n    3\n}\n"),
        ("src/new.rs", "pub fn new() {}\n"),
    ];
    let expected: Vec<(String, String)> =
        expected.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect();
    assert_eq!(files, expected);

    // The environment saw the writes; the disk saw nothing.
    let ops: Vec<Op> = fx.env.log().into_iter().map(|(op, _)| op).collect();
    for op in
        [Op::Read, Op::Compare, Op::Write, Op::Create, Op::Remove, Op::Stat, Op::List, Op::Grep, Op::Glob]
    {
        assert!(ops.contains(&op), "{op:?} was never asked of the environment");
    }
    assert!(!fx.env.root().exists(), "nothing was created on disk");
    assert_eq!(std::fs::read_dir(fx.disk.path()).unwrap().count(), 0, "the real folder stayed empty");
}

#[tokio::test]
async fn a_move_whose_second_step_fails_leaves_the_environment_as_it_was_and_says_so() {
    let fx = Fixture::new();
    fx.env.put("src/lib.rs", LIB);
    fx.env.put_mode("src/lib.rs", 0o600);
    fx.env.put("src/other.rs", "other\n");
    // The move removes src/lib.rs, writes src/other.rs, then fails to create its target.
    fx.env.fail(Op::Create, "src/moved.rs", 0);
    let patch = "*** Begin Patch\n*** Update File: src/other.rs\n@@\n-other\n+OTHER\n*** Update File: src/lib.rs\n\
                 *** Move to: src/moved.rs\n@@\n-    1\n+    2\n*** End Patch";
    let told = fx.call("apply_patch", json!({"patch": patch})).await;
    assert!(told.starts_with("ERROR:") && told.contains("could not write"), "{told}");
    assert!(told.contains("nothing was changed"), "{told}");
    assert_eq!(fx.env.text("src/lib.rs").as_deref(), Some(LIB));
    assert_eq!(fx.env.mode("src/lib.rs"), Some(0o600), "the file comes back with its mode");
    assert_eq!(fx.env.text("src/other.rs").as_deref(), Some("other\n"));
    assert_eq!(fx.env.text("src/moved.rs"), None);
    let steps: Vec<Op> = fx
        .env
        .log()
        .into_iter()
        .map(|(op, _)| op)
        .filter(|op| matches!(op, Op::Write | Op::Create | Op::Remove))
        .collect();
    // Done: remove, write, (failed) create; undone: write back, create again.
    assert_eq!(steps, [Op::Remove, Op::Write, Op::Create, Op::Write, Op::Create]);
}

#[tokio::test]
async fn when_the_rollback_fails_too_the_model_is_told_which_files_changed() {
    let fx = Fixture::new();
    fx.env.put("a.txt", "a\n");
    // The create fails; putting a.txt back (its second write) fails as well.
    fx.env.fail(Op::Create, "c.txt", 0);
    fx.env.fail(Op::Write, "a.txt", 1);
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Add File: c.txt\n+c\n*** End Patch";
    let told = fx.call("apply_patch", json!({"patch": patch})).await;
    assert!(told.starts_with("ERROR:") && told.contains("could not write"), "{told}");
    assert!(!told.contains("nothing was changed") && !told.contains("Nothing was changed"), "{told}");
    assert!(told.contains("could not all be put back") && told.contains("a.txt"), "{told}");
    assert_eq!(fx.env.text("a.txt").as_deref(), Some("A\n"), "the model was told the truth");
    assert_eq!(fx.env.text("c.txt"), None);
}
