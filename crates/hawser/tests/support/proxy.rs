//! A TCP proxy between a controller and an agent, for partitions: it
//! passes bytes through, cuts every connection, refuses new ones (nothing
//! listens), or passes them slowly.
//!
//! ```text
//!  controller ──► Proxy::addr ──(pass | cut | refuse | slow)──► agent
//! ```

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::haproxy::listen_address;

/// What the proxy does with connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Bytes go through as they come.
    Pass,
    /// Every byte waits this long first (a slow network).
    Slow(Duration),
    /// Open connections are cut, and nothing listens: a connection attempt
    /// is refused.
    Refuse,
}

#[derive(Debug)]
pub struct Proxy {
    pub addr: SocketAddr,
    link: watch::Sender<Link>,
    task: JoinHandle<()>,
}

impl Proxy {
    /// A proxy on a free port of the test's address, passing to `target`.
    pub async fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind((listen_address(), 0))
            .await
            .expect("bind the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let (link, watching) = watch::channel(Link::Pass);
        let task = tokio::spawn(serve(Some(listener), addr, target, watching));
        Proxy { addr, link, task }
    }

    /// From now on, connections are handled as `link` says; `Refuse` cuts
    /// those open at once.
    pub fn set(&self, link: Link) {
        self.link.send_replace(link);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    mut listener: Option<TcpListener>,
    addr: SocketAddr,
    target: SocketAddr,
    mut link: watch::Receiver<Link>,
) {
    loop {
        let now = *link.borrow_and_update();
        match (&listener, now) {
            (Some(_), Link::Refuse) => listener = None,
            (None, Link::Pass | Link::Slow(_)) => {
                // The port was ours a moment ago; nothing else takes it.
                listener = TcpListener::bind(addr).await.ok();
            }
            _ => {}
        }
        let Some(open) = &listener else {
            if link.changed().await.is_err() {
                return;
            }
            continue;
        };
        tokio::select! {
            changed = link.changed() => if changed.is_err() { return },
            accepted = open.accept() => if let Ok((client, _)) = accepted {
                tokio::spawn(relay(client, target, link.clone()));
            },
        }
    }
}

/// Relays one connection both ways until either side closes, or the link
/// refuses.
async fn relay(client: TcpStream, target: SocketAddr, mut link: watch::Receiver<Link>) {
    let Ok(server) = TcpStream::connect(target).await else {
        return;
    };
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let mut up = tokio::spawn(pump(client_read, server_write, link.clone()));
    let mut down = tokio::spawn(pump(server_read, client_write, link.clone()));
    tokio::select! {
        _ = link.wait_for(|l| *l == Link::Refuse) => {}
        _ = async { let _ = tokio::join!(&mut up, &mut down); } => {}
    }
    up.abort();
    down.abort();
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    link: watch::Receiver<Link>,
) {
    let mut buffer = vec![0; 16 * 1024];
    loop {
        let Ok(read) = from.read(&mut buffer).await else {
            return;
        };
        if read == 0 {
            let _ = to.shutdown().await;
            return;
        }
        let now = *link.borrow();
        if let Link::Slow(delay) = now {
            tokio::time::sleep(delay).await;
        }
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}
