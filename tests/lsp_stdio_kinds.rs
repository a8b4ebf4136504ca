//! The real binary over each kind of stdio an editor gives it: pipes (Neovim, Emacs) and socket
//! pairs (Node-based editors such as VS Code). Either way the server answers, and it does so on
//! its one thread: stdin and stdout are read and written through the reactor, not by helper
//! threads of tokio's blocking pool (which would cost two thread switches per streamed event).

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn frame(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// Reads one frame's body.
fn read_frame(input: &mut impl Read) -> String {
    let mut header = Vec::new();
    let mut byte = [0u8; 1];
    while !header.ends_with(b"\r\n\r\n") {
        input.read_exact(&mut byte).expect("a frame header");
        header.push(byte[0]);
    }
    let header = String::from_utf8(header).expect("ascii header");
    let length: usize = header
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .and_then(|n| n.trim().parse().ok())
        .expect("Content-Length");
    let mut body = vec![0u8; length];
    input.read_exact(&mut body).expect("the body");
    String::from_utf8(body).expect("utf-8 body")
}

fn threads(child: &Child) -> usize {
    std::fs::read_dir(format!("/proc/{}/task", child.id())).expect("/proc").count()
}

/// Starts the server with `stdin`/`stdout`, initializes, and returns the thread count once the
/// server is idle, after `initialized`.
fn serve_and_count_threads(
    stdin: OwnedFd,
    stdout: OwnedFd,
    to_server: &mut impl Write,
    from_server: &mut impl Read,
) -> usize {
    let data = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentls"))
        .arg("serve")
        .env("AGENTLS_DATA_DIR", data.path())
        .env("AGENTLS_LOG", "warn")
        .env("XDG_STATE_HOME", data.path())
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn agentls");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":null,"capabilities":{}}}"#;
    to_server.write_all(&frame(init)).expect("write initialize");
    let reply = read_frame(from_server);
    assert!(reply.contains(r#""id":1"#) && reply.contains("capabilities"), "{reply}");
    to_server.write_all(&frame(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#)).expect("write");
    // A request answered after `initialized` was handled: the server is idle then.
    to_server
        .write_all(&frame(r#"{"jsonrpc":"2.0","id":2,"method":"workspace/executeCommand","params":{"command":"agentls.listSessions","arguments":[]}}"#))
        .expect("write");
    let listed = read_frame(from_server);
    assert!(listed.contains(r#""id":2"#), "{listed}");
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut count = threads(&child);
    while count > 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        count = threads(&child);
    }
    let _ = child.kill();
    let _ = child.wait();
    count
}

#[test]
fn over_pipes_the_server_answers_on_one_thread() {
    let (stdin_read, mut to_server) = std::io::pipe().expect("pipe");
    let (mut from_server, stdout_write) = std::io::pipe().expect("pipe");
    let count =
        serve_and_count_threads(stdin_read.into(), stdout_write.into(), &mut to_server, &mut from_server);
    assert_eq!(count, 1, "stdin and stdout on the reactor: no helper thread");
}

#[test]
fn over_socket_pairs_the_server_answers_on_one_thread() {
    let (server_in, mut to_server) = std::os::unix::net::UnixStream::pair().expect("socketpair");
    let (server_out, mut from_server) = std::os::unix::net::UnixStream::pair().expect("socketpair");
    let count =
        serve_and_count_threads(server_in.into(), server_out.into(), &mut to_server, &mut from_server);
    assert_eq!(count, 1, "stdin and stdout on the reactor: no helper thread");
}
