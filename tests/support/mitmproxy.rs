//! A real TLS-intercepting proxy for the tests: mitmproxy's `mitmdump` from PyPI, installed into
//! `target/mitmproxy-venv` by `scripts/install-mitmproxy` on first use. It listens on a free
//! loopback port, re-signs every TLS connection with its own CA (made in a temporary folder:
//! hand `ca_file()` to agentls) and checks the upstream's certificate against the CA given.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

/// The path of `mitmdump` (`scripts/install-mitmproxy` prints it), installing it the first time.
fn mitmdump() -> PathBuf {
    super::installed::installed("install-mitmproxy")
}

/// A running `mitmdump`; killed when dropped.
pub struct Mitmproxy {
    _child: tokio::process::Child,
    confdir: tempfile::TempDir,
    port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

impl Mitmproxy {
    /// Starts a proxy that trusts `upstream_ca` for the servers behind it; `args` are more
    /// mitmdump options (`--proxyauth user:pass`, `--mode reverse:http://host:port` for a TLS
    /// endpoint in front of a plain server).
    pub async fn start(upstream_ca: &Path, args: &[&str]) -> Self {
        let confdir = tempfile::tempdir().expect("tempdir");
        let mut child = tokio::process::Command::new(mitmdump())
            .args(["--listen-host", "127.0.0.1", "--listen-port", "0"])
            .arg("--set")
            .arg(format!("confdir={}", confdir.path().display()))
            .arg("--set")
            .arg(format!("ssl_verify_upstream_trusted_ca={}", upstream_ca.display()))
            .args(["--set", "flow_detail=1"])
            .args(args)
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("mitmdump starts");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (port_tx, port_rx) = tokio::sync::oneshot::channel();
        let mut port_tx = Some(port_tx);
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let collected = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                // "HTTP(S) proxy listening at …", "reverse proxy to … listening at …".
                if let Some(port) = line.split("listening at 127.0.0.1:").nth(1) {
                    let port: u16 = port.trim_end_matches('.').trim().parse().expect("a port");
                    if let Some(tx) = port_tx.take() {
                        let _ = tx.send(port);
                    }
                }
                collected.lock().unwrap().push(line);
            }
        });
        let mut errors = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let collected = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = errors.next_line().await {
                collected.lock().unwrap().push(line);
            }
        });
        let port = match tokio::time::timeout(Duration::from_secs(60), port_rx).await {
            Ok(Ok(port)) => port,
            _ => panic!("mitmdump did not start: {:?}", log.lock().unwrap()),
        };
        Self { _child: child, confdir, port, log }
    }

    /// `http://127.0.0.1:PORT`, for HTTPS_PROXY or `[network] proxy`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The proxy's CA certificate (PEM), which agentls must trust to talk through it.
    pub fn ca_file(&self) -> PathBuf {
        self.confdir.path().join("mitmproxy-ca-cert.pem")
    }

    /// Everything mitmdump printed so far (one line per request it passed on, among others).
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// The requests it passed on, as `METHOD URL` taken from its log.
    pub fn flows(&self) -> Vec<String> {
        self.log()
            .iter()
            .filter_map(|line| {
                let rest = line.split_once(": ")?.1;
                let mut words = rest.split_whitespace();
                let method = words.next()?;
                let url = words.next()?;
                (["GET", "HEAD", "POST"].contains(&method) && url.starts_with("http"))
                    .then(|| format!("{method} {url}"))
            })
            .collect()
    }
}
