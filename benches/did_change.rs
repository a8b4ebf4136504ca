//! The in-process part of one incremental `didChange` on a 50,000-line buffer (the process-level
//! measurement, through the real server, is in `benches/server`): decoding the notification's
//! params the way the server does (bytes → JSON value → typed params), applying one insertion to
//! the document store, and the floor, the same insertion on a bare `ropey::Rope`.

use std::path::Path;

use agentls::workspace::position::{Position, PositionEncoding, TextRange, rope_char_index};
use agentls::workspace::{DocumentStore, TextChange};
use criterion::{Criterion, criterion_group, criterion_main};
use ropey::Rope;
use tower_lsp_server::ls_types::DidChangeTextDocumentParams;

const LINES: usize = 50_000;

fn buffer() -> String {
    (0..LINES).map(|i| format!("line {i:05} of the large buffer\n")).collect()
}

/// The line the `k`-th change goes to: spread over the buffer like edits in several places.
fn line_of(k: usize) -> u32 {
    ((k * 7919) % LINES) as u32
}

fn insertion(k: usize) -> TextChange {
    let at = Position::new(line_of(k), 5);
    TextChange { range: Some(TextRange { start: at, end: at }), text: "x".into() }
}

fn bench(c: &mut Criterion) {
    let text = buffer();
    let mut group = c.benchmark_group("did_change_50k_lines");

    let body = format!(
        r#"{{"textDocument":{{"uri":"file:///bench/big.txt","version":7}},"contentChanges":[{{"range":{{"start":{{"line":{line},"character":5}},"end":{{"line":{line},"character":5}}}},"text":"x"}}]}}"#,
        line = line_of(1)
    );
    group.bench_function("decode_params", |b| {
        b.iter(|| {
            let value: serde_json::Value = serde_json::from_str(&body).expect("JSON");
            serde_json::from_value::<DidChangeTextDocumentParams>(value).expect("params")
        })
    });

    let store = DocumentStore::new();
    let path = Path::new("/bench/big.txt");
    store.open(path, &text, 1);
    let mut k = 0;
    group.bench_function("document_store_insert", |b| {
        b.iter(|| {
            k += 1;
            store.change(path, k as i32 + 1, &[insertion(k)], PositionEncoding::Utf16).expect("open document")
        })
    });

    let mut rope = Rope::from_str(&text);
    let mut k = 0;
    group.bench_function("floor_rope_insert", |b| {
        b.iter(|| {
            k += 1;
            let change = insertion(k);
            let at = rope_char_index(&rope, change.range.expect("a range").start, PositionEncoding::Utf16);
            rope.insert(at, &change.text);
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
