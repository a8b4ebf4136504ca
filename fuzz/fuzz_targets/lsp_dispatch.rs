//! Fuzzes JSON-RPC dispatch: the real server (`lsp::serve`, in-process over pipes) is initialized,
//! then gets the fuzz input as a sequence of messages (split at NUL bytes, each framed with a
//! correct Content-Length), then one `workspace/executeCommand` request. The server must answer
//! that request: no message — unknown methods, wrong params, commands with nonsense arguments,
//! responses to nothing — stops it from serving. Only `exit` is skipped (it ends the server by
//! specification). Sessions use a replay provider with an empty cassette: no network.
#![no_main]

use std::time::Duration;

use agentls::config::Env;
use agentls::lsp::transport::{Frame, FrameReader, frame};
use agentls::lsp::{Deadlines, ServerOptions, serve};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

const PROBE_ID: &str = "fuzz-probe";
/// How long the probe may take before it counts as a hang (generous: a loaded 2-core machine).
const PATIENCE: Duration = Duration::from_secs(10);

struct Fixture {
    root: tempfile::TempDir,
    env: Env,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: std::sync::OnceLock<Fixture> = std::sync::OnceLock::new();
    FIXTURE.get_or_init(|| {
        let root = tempfile::tempdir().expect("a temporary workspace");
        let cassette = root.path().join("empty.cassette");
        std::fs::write(&cassette, "").expect("write the cassette");
        let config = root.path().join("config.toml");
        std::fs::write(
            &config,
            format!("provider = \"replay\"\ncassette = {:?}\n", cassette.display().to_string()),
        )
        .expect("write the config");
        std::fs::write(root.path().join("main.rs"), "fn main() {}\n").expect("write a file");
        let env = Env::from_pairs([
            ("AGENTLS_CONFIG", config.display().to_string()),
            ("HOME", root.path().display().to_string()),
        ]);
        Fixture { root, env }
    })
}

fn is_exit(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body)
        .is_ok_and(|m| m.get("method").and_then(Value::as_str) == Some("exit"))
}

fuzz_target!(|data: &[u8]| {
    let fixture = fixture();
    let root_uri = url::Url::from_directory_path(fixture.root.path()).expect("absolute").to_string();
    let mut input = frame(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "processId": null, "rootUri": root_uri, "capabilities": {
                "general": {"positionEncodings": ["utf-8", "utf-16"]},
                "window": {"workDoneProgress": true},
                "workspace": {"applyEdit": true, "workspaceEdit": {"documentChanges": true}, "configuration": true},
                "experimental": {"agentls": {"version": 1}}
            }
        }})
        .to_string()
        .as_bytes(),
    );
    input.extend(frame(br#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#));
    for body in data.split(|b| *b == 0).filter(|b| !b.is_empty() && !is_exit(b)) {
        input.extend(frame(body));
    }
    let probe = json!({"jsonrpc": "2.0", "id": PROBE_ID, "method": "workspace/executeCommand",
        "params": {"command": "agentls.listSessions", "arguments": [{}]}});
    input.extend(frame(probe.to_string().as_bytes()));

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let options = ServerOptions {
            env: fixture.env.clone(),
            deadlines: Deadlines { request: Duration::from_millis(200), human: Duration::from_millis(200) },
            data_dir: None,
            extra_tools: Vec::new(),
        };
        let (client, server) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server);
        tokio::spawn(serve(server_read, server_write, options));
        let (client_read, mut client_write) = tokio::io::split(client);
        let (to_server, mut outgoing) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
        tokio::spawn(async move {
            while let Some(bytes) = outgoing.recv().await {
                if client_write.write_all(&bytes).await.is_err() {
                    break;
                }
            }
        });
        to_server.send(input).expect("the writer runs");
        let answered = tokio::time::timeout(PATIENCE, async {
            let mut reader = FrameReader::new(client_read);
            loop {
                let read = reader.next().await.expect("in-memory read");
                let body = match read {
                    Some(Frame::Body(body)) => body,
                    Some(other) => panic!("the server wrote a malformed frame: {other:?}"),
                    None => panic!("the server stopped before answering the request"),
                };
                let message: Value = serde_json::from_slice(&body).expect("the server writes JSON");
                if message["id"] == PROBE_ID {
                    return message;
                }
                // Answer the server's own requests as a plain editor would.
                if let (Some(_), Some(id)) = (message.get("method"), message.get("id")) {
                    let reply = json!({"jsonrpc": "2.0", "id": id, "result": null});
                    let _ = to_server.send(frame(reply.to_string().as_bytes()));
                }
            }
        })
        .await;
        let answer = answered.expect("the server answers within its patience");
        assert!(answer.get("result").is_some() || answer.get("error").is_some(), "{answer}");
    });
    runtime.shutdown_background();
});
