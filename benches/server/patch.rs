//! apply_patch against `git apply` and GNU `patch`: the rows of `scripts/bench-patch`'s table
//! (which scripts/bench runs in the same run), read back from its output.

#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub name: String,
    pub agentls_ms: f64,
    pub git_ms: f64,
    pub gnu_ms: f64,
    pub input_mib: f64,
    pub agentls_rss_mib: f64,
    pub git_rss_mib: f64,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct PatchTable {
    pub baseline_rss_mib: Option<f64>,
    pub workloads: Vec<Workload>,
}

pub fn parse(output: &str) -> PatchTable {
    let mut table = PatchTable::default();
    for line in output.lines() {
        if let Some(rest) = line.strip_prefix("agentls baseline peak RSS (one-line patch):") {
            table.baseline_rss_mib = rest.trim().trim_end_matches("MiB").trim().parse().ok();
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().filter(|f| *f != "MiB").collect();
        if fields.len() != 7 || !["a", "b", "c"].contains(&fields[0]) {
            continue;
        }
        let numbers: Vec<f64> = fields[1..].iter().filter_map(|f| f.parse().ok()).collect();
        if let [agentls_ms, git_ms, gnu_ms, input_mib, agentls_rss_mib, git_rss_mib] = numbers[..] {
            table.workloads.push(Workload {
                name: fields[0].to_string(),
                agentls_ms,
                git_ms,
                gnu_ms,
                input_mib,
                agentls_rss_mib,
                git_rss_mib,
            });
        }
    }
    table
}

pub fn describe(name: &str) -> &'static str {
    match name {
        "a" => "(a) one 100,000-line file, 200 hunks",
        "b" => "(b) 1,000 files, one hunk each",
        _ => "(c) a 10 MiB single-line file, one replacement",
    }
}
