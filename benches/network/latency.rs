//! A loopback latency proxy: a TCP relay that holds every chunk for half a round trip in each
//! direction, keeping each direction's order. Loopback completes the TCP handshake at once, so
//! the first bytes a client sends on a new connection are held one round trip longer: what a
//! real TCP handshake costs before the client may send.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

pub struct LatencyProxy {
    pub addr: SocketAddr,
    connections: Arc<AtomicUsize>,
}

impl LatencyProxy {
    /// Relays connections on a free loopback port to `upstream` with `rtt` added to each round trip.
    pub async fn start(upstream: SocketAddr, rtt: Duration) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let opened = Instant::now();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else { return };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    // The client could send only once its SYN was answered: one round trip.
                    let upward = relay(client_read, server_write, rtt / 2, Some(opened + rtt));
                    let downward = relay(server_read, client_write, rtt / 2, None);
                    let _ = tokio::join!(upward, downward);
                });
            }
        });
        Ok(Self { addr, connections })
    }

    /// TCP connections made through the proxy so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// Copies `from` to `to`, each chunk written `delay` after it was read (and never before
/// `not_before`), in order.
async fn relay(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    delay: Duration,
    not_before: Option<Instant>,
) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async move {
        let mut buf = vec![0u8; 64 * 1024];
        let mut last = not_before.map(|t| t + delay).unwrap_or_else(Instant::now);
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    last = last.max(Instant::now() + delay);
                    if tx.send((last, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            }
        }
    };
    let writer = async move {
        while let Some((due, bytes)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if to.write_all(&bytes).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}
