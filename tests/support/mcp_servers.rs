//! The real MCP servers the MCP tests and `benches/mcp.rs` drive, installed from the registries
//! by `scripts/install-mcp-servers` (once per test run; a failed install fails, nothing skips):
//! `@modelcontextprotocol/server-everything` (npm) and `mcp-server-time` (PyPI).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The folder the servers are installed in.
pub fn installed() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install-mcp-servers");
        let out = std::process::Command::new(&script).output().expect("scripts/install-mcp-servers runs");
        assert!(
            out.status.success(),
            "installing the MCP servers failed (the registries must be reachable once):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    })
}

/// server-everything's program (stdio by default; `streamableHttp` as its argument).
pub fn everything() -> PathBuf {
    installed().join("npm/node_modules/.bin/mcp-server-everything")
}

/// mcp-server-time's program.
pub fn time_server() -> PathBuf {
    installed().join("venv/bin/mcp-server-time")
}

/// server-everything over Streamable HTTP on a free loopback port, once it listens; its URL.
/// The server ends when the child is dropped.
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
