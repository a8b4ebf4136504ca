//! Link-time settings of the `agentls` binary. The binary stays linked as rustc links it:
//! position-independent (PIE), full RELRO. What is added here only shortens its cold start and
//! its memory after start (docs/benchmarks.md), and `scripts/test` fails when any of it no
//! longer holds (`scripts/check-release-binary`, `scripts/startup-order --check`).
//!
//! On Linux with glibc 2.36 or later (the first that reads them), the binary's relative
//! relocations are packed (`-z pack-relative-relocs`, DT_RELR): the table the dynamic loader
//! reads at every start shrinks from ~600 KB to ~11 KB. Older glibc (or an unknown C library)
//! gets the usual table; GNU ld before 2.38 ignores the option with a warning.
//!
//! Release builds linked by LLD (rustc's default linker on x86_64 Linux since 1.90) lay out the
//! functions that run from process start to the first model request first and next to each
//! other, in an output section of their own placed before `.text` (a linker script of `INSERT
//! BEFORE .text`, generated here from `scripts/link/startup.order`, which `scripts/startup-order`
//! records). The kernel maps an executable's pages in blocks around each fault, so with that code
//! scattered over the 14 MB of text a start maps ~100 blocks; packed, a few. The list names
//! functions without the hash that Rust's legacy mangling appends (`17h<16 hex digits>E`): that
//! hash changes with every change of the dependency graph or features, the path does not, so the
//! script matches each function's section by its path and any hash (an instance of a generic,
//! whose path many instances share, keeps its hash). A name that no longer exists
//! matches nothing; `scripts/startup-order --check` fails when too many no longer match or the
//! memory after start is over target. Another linker (a `-C linker` or `-fuse-ld` in RUSTFLAGS,
//! say) gets no layout, and `AGENTLS_NO_STARTUP_ORDER=1` turns it off for any other setup whose
//! linker refuses it.
//!
//! On Linux with glibc the `agentls` binary (no other binary or test) links GCC's unwinder
//! (`_Unwind_*`, which panics and `catch_unwind` use) statically, as `gcc -static-libgcc` does:
//! Rust's standard library asks for `-lgcc_s`, and a folder of the build holding a copy of GCC's
//! static `libgcc_eh.a` under that name is searched first. Each start then skips loading
//! `libgcc_s.so.1` (its mappings, relocations and a constructor that queries the CPU, which traps
//! to the hypervisor on a virtual machine). When the C compiler does not know `libgcc_eh.a` the
//! shared library is used, and `scripts/check-release-binary` fails on its `DT_NEEDED`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target == host && target.contains("linux-gnu") && glibc_reads_relr() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-env-changed=CC");
    if target == host
        && target.contains("linux-gnu")
        && let Some(folder) = static_unwinder()
    {
        // A linker argument of this binary only: a `rustc-link-search` would reach every binary
        // and test of the package, and every crate that links the library (fuzz/).
        println!("cargo:rustc-link-arg-bin=agentls=-L{}", folder.display());
    }
    let order = "scripts/link/startup.order";
    println!("cargo:rerun-if-changed={order}");
    println!("cargo:rerun-if-env-changed=RUSTFLAGS");
    println!("cargo:rerun-if-env-changed=AGENTLS_NO_STARTUP_ORDER");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let order_path = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join(order);
    if release
        && target == "x86_64-unknown-linux-gnu"
        && links_with_rust_lld()
        && let Ok(order) = std::fs::read_to_string(&order_path)
        && let Some(out_dir) = std::env::var_os("OUT_DIR")
    {
        let script = PathBuf::from(out_dir).join("startup-layout.ld");
        if std::fs::write(&script, layout_script(&order)).is_ok() {
            println!("cargo:rustc-link-arg-bin=agentls=-Wl,-T,{}", script.display());
        }
    }
}

/// The linker script that places the functions of `order` (one name a line, in layout order)
/// before the rest of `.text`. Each function is in a section of its own (`.text.<symbol>`, as
/// rustc emits them); a name in legacy mangling without its hash matches that path with any hash.
fn layout_script(order: &str) -> String {
    let mut script = String::from("SECTIONS {\n  .text.agentls_start : {\n");
    for name in order.lines().map(str::trim).filter(|n| !n.is_empty()) {
        // The order file is ours, but a glob or script character would change what is matched.
        if name.contains(|c: char| c.is_whitespace() || "*?[]{}();\"\\".contains(c)) {
            continue;
        }
        // A legacy-mangled name (`_ZN`) without its hash matches that path with any hash; an
        // instance of a generic is named with its hash.
        let any_hash = if name.starts_with("_ZN") && !has_legacy_hash(name) { "17h*" } else { "" };
        script.push_str(&format!("    *(.text.{name}{any_hash})\n"));
    }
    script.push_str("  }\n}\nINSERT BEFORE .text;\n");
    script
}

/// Whether the binary is linked by rustc's own LLD: rustc 1.90 or later on this target, with no
/// linker chosen in RUSTFLAGS or in `CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER`, and the
/// layout not turned off.
fn links_with_rust_lld() -> bool {
    if std::env::var_os("AGENTLS_NO_STARTUP_ORDER").is_some_and(|v| !v.is_empty() && v != "0") {
        return false;
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if ["linker", "link-self-contained", "fuse-ld"].iter().any(|f| flags.contains(f)) {
        return false;
    }
    if std::env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some() {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("--version").output() else { return false };
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let text = String::from_utf8_lossy(&out.stdout);
    let mut numbers = text.split_whitespace().nth(1).unwrap_or("").split('.').map(|n| n.parse::<u32>());
    match (numbers.next(), numbers.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => (major, minor) >= (1, 90),
        _ => false,
    }
}

/// A folder holding GCC's static unwinder as `libgcc_s.a`, found through the C compiler the
/// build links with (`cc -print-file-name=libgcc_eh.a`); `None` when there is none.
fn static_unwinder() -> Option<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(cc).arg("-print-file-name=libgcc_eh.a").output().ok()?;
    let archive = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    // Without the file the compiler prints the bare name back.
    if !archive.is_absolute() || !archive.is_file() {
        return None;
    }
    let folder = PathBuf::from(std::env::var_os("OUT_DIR")?).join("static-libgcc");
    std::fs::create_dir_all(&folder).ok()?;
    std::fs::copy(&archive, folder.join("libgcc_s.a")).ok()?;
    Some(folder)
}

/// Whether `symbol` ends in a legacy-mangling hash: `17h` and 16 hex digits, then `E`.
fn has_legacy_hash(symbol: &str) -> bool {
    let Some(rest) = symbol.strip_suffix('E') else { return false };
    rest.len() > 19
        && rest.is_char_boundary(rest.len() - 19)
        && rest[rest.len() - 19..]
            .strip_prefix("17h")
            .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Whether this machine's glibc is 2.36 or later (`getconf GNU_LIBC_VERSION`: "glibc 2.36").
fn glibc_reads_relr() -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else { return false };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut numbers = text.trim().trim_start_matches("glibc ").split('.').map(|n| n.parse::<u32>());
    match (numbers.next(), numbers.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => (major, minor) >= (2, 36),
        _ => false,
    }
}
