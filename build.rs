//! Link-time settings of the `agentls` binary.
//!
//! On Linux with glibc 2.36 or later (the first that reads them), the binary's relative
//! relocations are packed (`-z pack-relative-relocs`, DT_RELR): the table the dynamic loader
//! reads at every start shrinks from ~770 KB to ~25 KB, which shortens the server's cold start
//! and keeps those pages out of its resident memory. Older glibc (or an unknown C library)
//! gets the usual table; GNU ld before 2.38 ignores the option with a warning.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target == host && target.contains("linux-gnu") && glibc_reads_relr() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
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
