//! Checks of docs/ARCHITECTURE.md's layering that the compiler does not make: no import circle
//! between the crate's top-level modules, nor between the files of one module.
//!
//! A file's imports are the `crate::a::b` and `super::b` paths in its code outside comments and
//! before its first `#[cfg(test)]` (tests may reach anywhere). A module's `mod.rs` is its root: it
//! may use its own parts, and they may use what it re-exports, so edges to and from it are not
//! counted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `module -> modules it uses`, for one level of the tree.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// The code of a file that counts: without comment lines, cut at its first `#[cfg(test)]`.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines().filter(|line| !line.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// The identifiers that follow `prefix` in `code` (`crate::` gives `session`, `llm`, …).
fn names_after<'a>(code: &'a str, prefix: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    code.match_indices(prefix).filter_map(move |(at, _)| {
        let preceded_by_ident =
            code[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_');
        let rest = &code[at + prefix.len()..];
        let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
        (!preceded_by_ident && end > 0).then(|| &rest[..end])
    })
}

/// The `.rs` files under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The first part of `path` under `dir`, as a module name (`session/runner.rs` → `session`).
fn head(dir: &Path, path: &Path) -> String {
    let first = path.strip_prefix(dir).unwrap().components().next().unwrap();
    first.as_os_str().to_string_lossy().trim_end_matches(".rs").to_string()
}

/// A circle in `graph`, as the modules along it, if there is one.
fn circle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        graph: &Graph,
        node: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(graph, next, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(graph, node, &mut Vec::new(), &mut done))
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level modules and what each uses of the others.
fn crate_graph() -> Graph {
    let src = src();
    let mut graph = Graph::new();
    for file in files(&src) {
        let module = head(&src, &file);
        let code = code_of(&file);
        let uses = graph.entry(module.clone()).or_default();
        uses.extend(names_after(&code, "crate::").filter(|&m| m != module).map(str::to_string));
    }
    graph
}

/// The files (or folders) directly inside `module` and what each uses of the others.
fn module_graph(module: &Path) -> Graph {
    let name = module.file_name().unwrap().to_string_lossy().to_string();
    let parts: BTreeSet<String> = std::fs::read_dir(module)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().trim_end_matches(".rs").to_string())
        .filter(|part| part != "mod")
        .collect();
    let mut graph = Graph::new();
    for file in files(module) {
        let part = head(module, &file);
        if part == "mod" {
            continue;
        }
        let code = code_of(&file);
        let depth = file.strip_prefix(module).unwrap().components().count();
        // `super::` from a file directly inside the module names a sibling; from deeper, the
        // sibling is `super::super::`.
        let sibling = if depth == 1 { "super::" } else { "super::super::" };
        let inner = format!("crate::{name}::");
        let used: BTreeSet<String> = names_after(&code, sibling)
            .chain(names_after(&code, &inner))
            .filter(|&p| p != part && parts.contains(p))
            .map(str::to_string)
            .collect();
        graph.entry(part).or_default().extend(used);
    }
    graph
}

#[test]
fn no_circle_between_top_level_modules() {
    let graph = crate_graph();
    assert!(graph.contains_key("session") && graph["session"].contains("llm"), "the scan finds imports");
    assert_eq!(circle(&graph), None, "an import circle between src/'s modules");
}

#[test]
fn no_circle_inside_a_module() {
    for entry in std::fs::read_dir(src()).unwrap() {
        let module = entry.unwrap().path();
        if module.is_dir() {
            assert_eq!(circle(&module_graph(&module)), None, "an import circle inside {}", module.display());
        }
    }
}

#[test]
fn the_scan_sees_circles_and_ignores_comments() {
    let graph: Graph = [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"]), ("d", vec!["a"])]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.into_iter().map(str::to_string).collect()))
        .collect();
    assert_eq!(circle(&graph), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
    let code =
        "use crate::llm::X;\n// crate::lsp in a comment\nfn f() { my_crate::store(); crate::exec::run() }";
    let code: String =
        code.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    assert_eq!(names_after(&code, "crate::").collect::<Vec<_>>(), ["llm", "exec"]);
}
