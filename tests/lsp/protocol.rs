//! The server's protocol surface without a model: initialize and encoding negotiation, command
//! argument errors, and bad input after which the server must keep answering.

use crate::support::lsp_client;

use lsp_client::{LspClient, plain_capabilities, plugin_capabilities};
use serde_json::{Value, json};

fn options(data: &std::path::Path) -> agentls::lsp::ServerOptions {
    let mut options = agentls::lsp::ServerOptions::from_env(agentls::config::Env::from_pairs([(
        "AGENTLS_DATA_DIR",
        data.to_str().expect("utf-8 path"),
    )]));
    options.deadlines.request = std::time::Duration::from_secs(30);
    options
}

async fn started(capabilities: Value) -> (LspClient, tempfile::TempDir, Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).expect("mkdir");
    let client = LspClient::in_process(options(&dir.path().join("data")));
    let init = client.initialize(&root, capabilities, Value::Null).await;
    (client, dir, init)
}

#[tokio::test]
async fn initialize_negotiates_encoding_and_announces_commands() {
    let (_client, _dir, init) = started(plugin_capabilities()).await;
    let caps = &init["capabilities"];
    assert_eq!(caps["positionEncoding"], "utf-8");
    assert_eq!(caps["textDocumentSync"]["change"], 2);
    let commands: Vec<&str> = caps["executeCommandProvider"]["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        commands,
        [
            "agentls.newSession",
            "agentls.prompt",
            "agentls.steer",
            "agentls.followUp",
            "agentls.cancel",
            "agentls.closeSession",
            "agentls.listSessions",
            "agentls.resumeSession",
            "agentls.history",
            "agentls.configure",
            "agentls.compact",
            "agentls.undoTurn",
            "agentls.redoTurn",
            "agentls.resolveReview",
            "agentls.resolvePermission",
            "agentls.trustFolder",
            "agentls.mcpServers",
            "agentls.mcpRestart",
        ]
    );
    assert_eq!(init["serverInfo"]["name"], "agentls");

    let (_c, _d, plain) = started(plain_capabilities()).await;
    assert_eq!(plain["capabilities"]["positionEncoding"], "utf-16");
    let (_c, _d, utf32) = started(json!({"general": {"positionEncodings": ["utf-32"]}})).await;
    assert_eq!(utf32["capabilities"]["positionEncoding"], "utf-32");
}

#[tokio::test]
async fn command_errors_name_the_field() {
    let (client, _dir, _) = started(plugin_capabilities()).await;
    let err = client.command("agentls.doesNotExist", json!({})).await.expect_err("unknown command");
    assert_eq!(err["code"], -32602);
    assert!(err["message"].as_str().unwrap().contains("unknown command `agentls.doesNotExist`"), "{err}");

    let err = client
        .command("agentls.resolvePermission", json!({"requestId": 7, "decision": "deny"}))
        .await
        .unwrap_err();
    assert_eq!(err["message"], "invalid argument `requestId`: expected a string");
    let err = client
        .command("agentls.resolvePermission", json!({"requestId": "r", "decision": "sure"}))
        .await
        .unwrap_err();
    assert!(err["message"].as_str().unwrap().starts_with("invalid argument `decision`"), "{err}");
    let err = client
        .command("agentls.resolvePermission", json!({"requestId": "r", "decision": "deny"}))
        .await
        .unwrap_err();
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid argument `requestId`: expected the id of a pending")
    );

    let err = client
        .request("workspace/executeCommand", json!({"command": "agentls.listSessions", "arguments": ["x"]}))
        .await
        .unwrap_err();
    assert_eq!(err["data"], "arguments[0]");
}

#[tokio::test]
async fn bad_input_gets_errors_and_the_server_keeps_serving() {
    let (client, _dir, _) = started(plugin_capabilities()).await;
    // Malformed JSON in a well-framed message.
    let body = b"{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\": ";
    client.send_raw(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    client.send_raw(body);
    // Valid JSON that is not a JSON-RPC message.
    let junk = b"[1, 2, 3]";
    client.send_raw(format!("Content-Length: {}\r\n\r\n", junk.len()).as_bytes());
    client.send_raw(junk);
    // Wrong parameter types for a known method.
    let wrong = client.request("workspace/executeCommand", json!({"command": 5})).await.unwrap_err();
    assert_eq!(wrong["code"], -32602);
    // An unknown method.
    let unknown = client.request("agentls/noSuchMethod", json!({})).await.unwrap_err();
    assert_eq!(unknown["code"], -32601);
    // A huge message: 8 MiB of argument text.
    let huge = "x".repeat(8 << 20);
    let err = client
        .command("agentls.resolvePermission", json!({"requestId": huge, "decision": "deny"}))
        .await
        .unwrap_err();
    assert_eq!(err["code"], -32602);
    // Notifications with garbage parameters are ignored.
    client.notify("textDocument/didChange", json!({"textDocument": 3}));
    client.notify("textDocument/didOpen", json!(null));

    let errors: Vec<Value> =
        client.all_messages().into_iter().filter(|m| m.get("error").is_some() && m["id"].is_null()).collect();
    assert!(!errors.is_empty(), "malformed input is answered with an error");
    // Still serving.
    let err = client.command("agentls.resolvePermission", json!({"decision": "deny"})).await.unwrap_err();
    assert_eq!(err["message"], "invalid argument `requestId`: expected a string (it is required)");
    client.shutdown().await;
}
