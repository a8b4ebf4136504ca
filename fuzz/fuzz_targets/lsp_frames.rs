//! Fuzzes the wire guard (`lsp::transport::guard_input`) with any bytes from the editor, followed
//! by one well-formed request. Whatever came before, the guard must not panic, must forward only
//! well-formed JSON-RPC frames (verbatim: each forwarded body occurs in the input), must answer
//! malformed input with JSON-RPC errors, and must still forward the request that follows: the
//! server keeps serving.
#![no_main]

use agentls::lsp::transport::{Frame, FrameReader, frame, guard_input};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const PROBE: &[u8] = br#"{"jsonrpc":"2.0","id":"fuzz-probe","method":"workspace/executeCommand","params":{"command":"agentls.listSessions","arguments":[{}]}}"#;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
    })
}

/// Every frame of `bytes`, read strictly: the guard writes nothing else.
async fn frames(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut reader = FrameReader::new(bytes);
    let mut out = Vec::new();
    while let Some(frame) = reader.next().await.expect("in-memory read") {
        match frame {
            Frame::Body(body) => out.push(body),
            other => panic!("the guard wrote a malformed frame: {other:?}"),
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let mut input = data.to_vec();
    input.extend(frame(PROBE));
    runtime().block_on(async {
        let mut forwarded: Vec<u8> = Vec::new();
        let (replies_tx, mut replies_rx) = tokio::sync::mpsc::unbounded_channel();
        guard_input(&input[..], &mut forwarded, replies_tx).await;
        let bodies = frames(&forwarded).await;
        for body in &bodies {
            let message: Value = serde_json::from_slice(body).expect("a forwarded body is JSON");
            assert_eq!(message["jsonrpc"], "2.0", "only JSON-RPC 2.0 is forwarded: {message}");
            assert!(input.windows(body.len()).any(|w| w == &body[..]), "a forwarded body is verbatim input");
        }
        assert_eq!(bodies.last().map(Vec::as_slice), Some(PROBE), "the request after the garbage is served");
        while let Ok(reply) = replies_rx.try_recv() {
            let replies = frames(&reply).await;
            assert_eq!(replies.len(), 1, "one frame per reply");
            let reply: Value = serde_json::from_slice(&replies[0]).expect("a reply is JSON");
            assert!(reply["error"]["code"].is_i64() && reply["error"]["message"].is_string(), "{reply}");
        }
    });
});
