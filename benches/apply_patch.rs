//! apply_patch throughput on the workloads of docs/benchmarks.md: (a) one 100,000-line file with
//! 200 hunks, (c) a 10 MiB single-line file with one replacement (parse + apply + hunks, in
//! memory; scripts/bench-patch times the whole CLI against `git apply` and GNU `patch`).

use agentls::tools::apply_patch::{PatchOp, apply_chunks, parse_patch};
use criterion::{Criterion, criterion_group, criterion_main};

fn large_file_workload() -> (String, String) {
    let lines: Vec<String> = (0..100_000).map(|i| format!("line {i} of the large file")).collect();
    let mut patch = String::from("*** Begin Patch\n*** Update File: big.txt\n");
    for hunk in 0..200 {
        let at = 250 + hunk * 499;
        patch.push_str("@@\n");
        for line in &lines[at - 3..at] {
            patch.push_str(&format!(" {line}\n"));
        }
        patch.push_str(&format!("-{}\n+changed line {at}\n", lines[at]));
        for line in &lines[at + 1..at + 4] {
            patch.push_str(&format!(" {line}\n"));
        }
    }
    patch.push_str("*** End Patch\n");
    (lines.join("\n") + "\n", patch)
}

fn single_line_workload() -> (String, String) {
    let line = "x".repeat(10 * 1024 * 1024);
    let replaced = format!("y{}", &line[1..]);
    (
        line.clone() + "\n",
        format!("*** Begin Patch\n*** Update File: one.txt\n@@\n-{line}\n+{replaced}\n*** End Patch\n"),
    )
}

fn apply(text: &str, patch: &str) -> usize {
    let ops = parse_patch(patch).expect("valid patch");
    let PatchOp::Update { chunks, .. } = &ops[0] else { unreachable!() };
    let (out, hunks) = apply_chunks(text, chunks, "file").expect("applies");
    out.len() + hunks.len()
}

fn bench(c: &mut Criterion) {
    let (text, patch) = large_file_workload();
    c.bench_function("a_100k_lines_200_hunks", |b| b.iter(|| apply(&text, &patch)));
    let (text, patch) = single_line_workload();
    let mut group = c.benchmark_group("c_10mib_single_line");
    group.sample_size(10);
    group.bench_function("one_replacement", |b| b.iter(|| apply(&text, &patch)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
