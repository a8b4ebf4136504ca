//! Programs the tests and benches install from the registries under target/, by
//! `scripts/install-*` (once per test binary and script; a failed install fails the test, nothing
//! is skipped): the real MCP servers (`@modelcontextprotocol/server-everything` from npm,
//! `mcp-server-time` from PyPI) and the real ACP clients.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The folder `scripts/<script>` installed into (it prints it).
pub fn installed(script: &str) -> PathBuf {
    static DIRS: Mutex<Option<HashMap<String, PathBuf>>> = Mutex::new(None);
    let mut dirs = DIRS.lock().unwrap_or_else(|p| p.into_inner());
    let dirs = dirs.get_or_insert_with(HashMap::new);
    if let Some(dir) = dirs.get(script) {
        return dir.clone();
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts").join(script);
    let out =
        std::process::Command::new(&path).output().unwrap_or_else(|e| panic!("scripts/{script} runs: {e}"));
    assert!(
        out.status.success(),
        "scripts/{script} failed (the registries must be reachable once):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    dirs.insert(script.to_string(), dir.clone());
    dir
}

/// server-everything's program (stdio by default; `streamableHttp` as its argument).
pub fn everything() -> PathBuf {
    installed("install-mcp-servers").join("npm/node_modules/.bin/mcp-server-everything")
}

/// mcp-server-time's program.
pub fn time_server() -> PathBuf {
    installed("install-mcp-servers").join("venv/bin/mcp-server-time")
}

/// server-everything over Streamable HTTP on a free loopback port, once it listens; its URL
/// (`http://127.0.0.1:PORT/mcp`). The server is killed when the child is dropped.
pub async fn everything_http() -> (tokio::process::Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let child = tokio::process::Command::new(everything())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("server-everything starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(Instant::now() < deadline, "server-everything did not listen on {port}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (child, format!("http://127.0.0.1:{port}/mcp"))
}
