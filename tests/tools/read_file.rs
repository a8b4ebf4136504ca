//! read_file and read_many_files through the registry, against real files and an open buffer.

use crate::support::tools_support;

use std::sync::Arc;

use agentls::tools::read_file::{ReadFileShape, ReadFileTool};
use agentls::tools::read_many_files::ReadManyFilesTool;
use agentls::tools::registry::{ToolCallOutcome, ToolRegistry};
use agentls::workspace::{ReadTracker, Snapshot};
use tools_support::Fixture;

fn registry(shape: ReadFileShape) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry.register(Arc::new(ReadFileTool::new(shape)));
    registry.register(Arc::new(ReadManyFilesTool));
    registry
}

async fn read(fx: &Fixture, shape: ReadFileShape, args: serde_json::Value) -> ToolCallOutcome {
    registry(shape).execute("read_file", &args.to_string(), &fx.ctx).await
}

#[tokio::test]
async fn returns_line_numbered_text() {
    let fx = Fixture::new();
    fx.write("src/lib.rs", "fn a() {}\n\nfn b() {}\n");
    let outcome = read(&fx, ReadFileShape::FilePath, serde_json::json!({"file_path": "src/lib.rs"})).await;
    assert!(!outcome.is_error);
    assert_eq!(outcome.content, "  1 | fn a() {}\n  2 | \n  3 | fn b() {}\n");
}

#[tokio::test]
async fn offset_and_limit_page_through_the_file() {
    let fx = Fixture::new();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    let path = fx.write("ten.txt", &text);
    let outcome = read(
        &fx,
        ReadFileShape::FilePath,
        serde_json::json!({"file_path": path.to_str().unwrap(), "offset": 4, "limit": 2}),
    )
    .await;
    assert_eq!(
        outcome.content,
        "  4 | line 4\n  5 | line 5\n\n[Showing lines 4-5 of 10. Use offset=6 to read more.]\n"
    );
}

#[tokio::test]
async fn gemini_shape_uses_absolute_path_and_zero_based_offset() {
    let fx = Fixture::new();
    let path = fx.write("ten.txt", (1..=10).map(|i| format!("line {i}\n")).collect::<String>());
    let outcome = read(
        &fx,
        ReadFileShape::AbsolutePath,
        serde_json::json!({"absolute_path": path.to_str().unwrap(), "offset": 3, "limit": 2}),
    )
    .await;
    assert_eq!(
        outcome.content,
        "  4 | line 4\n  5 | line 5\n\n[Showing lines 4-5 of 10. Use offset=5 to read more.]\n"
    );
    // The loop spec's `file_path` is accepted as an alias; an unknown key is refused by name.
    let spec_name =
        read(&fx, ReadFileShape::AbsolutePath, serde_json::json!({"file_path": path.to_str().unwrap()}))
            .await;
    assert!(spec_name.content.starts_with("  1 | line 1\n"), "{}", spec_name.content);
    let wrong_shape =
        read(&fx, ReadFileShape::AbsolutePath, serde_json::json!({"filename": path.to_str().unwrap()})).await;
    assert!(wrong_shape.is_error && wrong_shape.content.contains("absolute_path"), "{}", wrong_shape.content);
}

#[tokio::test]
async fn offset_past_the_end_is_an_error() {
    let fx = Fixture::new();
    fx.write("short.txt", "one\ntwo\n");
    let outcome =
        read(&fx, ReadFileShape::FilePath, serde_json::json!({"file_path": "short.txt", "offset": 5})).await;
    assert!(outcome.is_error);
    assert_eq!(
        outcome.content,
        "Tool error (read_file): offset 5 is past the end of short.txt, which has 2 lines."
    );
}

#[tokio::test]
async fn binary_files_are_refused_with_a_clear_error() {
    let fx = Fixture::new();
    fx.write("blob.bin", [0u8, 159, 146, 150, 0, 1, 2]);
    let outcome = read(&fx, ReadFileShape::FilePath, serde_json::json!({"file_path": "blob.bin"})).await;
    assert!(outcome.is_error);
    assert!(
        outcome
            .content
            .starts_with("Tool error (read_file): Cannot read blob.bin: it is a binary file, not text."),
        "{}",
        outcome.content
    );
}

#[tokio::test]
async fn images_are_returned_as_image_parts() {
    let fx = Fixture::new();
    let png = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0];
    fx.write("logo.png", png);
    let outcome = read(&fx, ReadFileShape::FilePath, serde_json::json!({"file_path": "logo.png"})).await;
    assert!(!outcome.is_error, "{}", outcome.content);
    assert_eq!(outcome.images.len(), 1);
    assert_eq!(outcome.images[0].media_type, "image/png");
    assert_eq!(outcome.images[0].data, png);
}

#[tokio::test]
async fn missing_files_directories_and_outside_paths_are_errors() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.root().join("dir")).unwrap();
    let missing = read(&fx, ReadFileShape::FilePath, serde_json::json!({"file_path": "nope.txt"})).await;
    assert!(missing.is_error && missing.content.contains("no such file"), "{}", missing.content);
    let dir = read(&fx, ReadFileShape::FilePath, serde_json::json!({"file_path": "dir"})).await;
    assert!(dir.is_error && dir.content.contains("is a directory"), "{}", dir.content);
    let outside = read(&fx, ReadFileShape::FilePath, serde_json::json!({"file_path": "/etc/hostname"})).await;
    assert!(outside.is_error && outside.content.contains("outside the workspace"), "{}", outside.content);
}

#[tokio::test]
async fn reads_open_buffers_before_the_disk_and_records_the_read() {
    let fx = Fixture::new();
    let path = fx.write("main.rs", "on disk\n");
    fx.ctx.workspace.documents().open(&path, "unsaved buffer\n", 7);
    let outcome = read(&fx, ReadFileShape::FilePath, serde_json::json!({"file_path": "main.rs"})).await;
    assert_eq!(outcome.content, "  1 | unsaved buffer\n");
    let seen = Snapshot {
        version: Some(7),
        from_buffer: true,
        ..Snapshot::from_disk(path.clone(), "unsaved buffer\n")
    };
    assert_eq!(fx.ctx.reads.check(&seen), Ok(()));
    assert!(ReadTracker::new().check(&seen).is_err());
}

#[tokio::test]
async fn large_files_are_truncated_for_the_model_only() {
    let fx = Fixture::new();
    fx.write("big.txt", "x".repeat(100_000));
    let outcome = read(&fx, ReadFileShape::FilePath, serde_json::json!({"file_path": "big.txt"})).await;
    assert!(outcome.content.len() > 100_000);
    assert!(outcome.model_content.contains("[WARNING: Tool output was truncated."));
    assert!(outcome.model_content.chars().count() < 51_000);
}

#[tokio::test]
async fn read_many_files_concatenates_files_from_paths_and_globs() {
    let fx = Fixture::new();
    fx.write("a.md", "alpha\n");
    fx.write("docs/b.md", "beta");
    fx.write("docs/c.txt", "gamma\n");
    fx.write("node_modules/x.md", "dependency\n");
    fx.write("blob.md", [0u8, 1, 2]);
    let outcome = registry(ReadFileShape::AbsolutePath)
        .execute("read_many_files", r#"{"paths": ["**/*.md"], "exclude": ["blob.md"]}"#, &fx.ctx)
        .await;
    assert!(!outcome.is_error, "{}", outcome.content);
    assert_eq!(
        outcome.content,
        "--- a.md ---\n\nalpha\n\n--- docs/b.md ---\n\nbeta\n\n--- End of content ---\n"
    );
    assert!(fx.ctx.reads.has_read(&fx.root().join("docs/b.md")));
}

#[tokio::test]
async fn read_many_files_reads_directories_and_lists_skipped_files() {
    let fx = Fixture::new();
    fx.write("docs/b.md", "beta\n");
    fx.write("docs/raw.dat", [0u8, 1, 2]);
    let outcome = registry(ReadFileShape::AbsolutePath)
        .execute("read_many_files", r#"{"paths": ["docs"]}"#, &fx.ctx)
        .await;
    assert!(
        outcome.content.starts_with("--- docs/b.md ---\n\nbeta\n\n--- End of content ---\n"),
        "{}",
        outcome.content
    );
    assert!(outcome.content.contains("[Skipped 1 files: docs/raw.dat"), "{}", outcome.content);

    let nothing = registry(ReadFileShape::AbsolutePath)
        .execute("read_many_files", r#"{"paths": ["*.none"]}"#, &fx.ctx)
        .await;
    assert!(nothing.is_error);
}
