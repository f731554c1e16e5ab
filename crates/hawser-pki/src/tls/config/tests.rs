#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail by panicking"
)]

use std::net::Ipv4Addr;

use rustls::ProtocolVersion;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use super::*;
use crate::issue::Role;
use crate::tls::load_dir;
use crate::tls::testing::{AGENT, CONTROLLER, Pki};

/// `role`'s identity of `pki` in a shared cell, loaded as `loaded_as`'s tls directory.
fn shared(pki: &Pki, role: Role, loaded_as: Role) -> SharedMaterial {
    let dir = tempfile::tempdir().unwrap();
    pki.files(role).write_plain(dir.path());
    SharedMaterial::with(load_dir(dir.path(), loaded_as, SystemTime::now()).unwrap())
}

/// One connection over an in-memory pipe, the client dialing an address (as the
/// controller does): a ping one way, a pong back. Each side's error, as text.
async fn exchange(
    server: Arc<ServerConfig>,
    client: Arc<ClientConfig>,
) -> (Result<(), String>, Result<(), String>) {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let serve = async move {
        let mut tls = TlsAcceptor::from(server)
            .accept(server_io)
            .await
            .map_err(|e| e.to_string())?;
        let (_, connection) = tls.get_ref();
        assert_eq!(connection.alpn_protocol(), Some(ALPN_H2));
        assert_eq!(
            connection.protocol_version(),
            Some(ProtocolVersion::TLSv1_3)
        );
        let mut ping = [0; 4];
        tls.read_exact(&mut ping).await.map_err(|e| e.to_string())?;
        tls.write_all(b"pong").await.map_err(|e| e.to_string())?;
        tls.shutdown().await.map_err(|e| e.to_string())
    };
    let dial = async move {
        let address = ServerName::IpAddress(Ipv4Addr::new(10, 0, 0, 7).into());
        let mut tls = TlsConnector::from(client)
            .connect(address, client_io)
            .await
            .map_err(|e| e.to_string())?;
        tls.write_all(b"ping").await.map_err(|e| e.to_string())?;
        let mut pong = [0; 4];
        tls.read_exact(&mut pong).await.map_err(|e| e.to_string())?;
        Ok(())
    };
    tokio::join!(serve, dial)
}

#[tokio::test]
async fn matching_identities_connect() {
    let pki = Pki::new(SystemTime::now());
    let server = server_config(shared(&pki, Role::Agent, Role::Agent), CONTROLLER.into());
    let client = client_config(
        shared(&pki, Role::Controller, Role::Controller),
        AGENT.into(),
    );
    let (served, dialed) = exchange(server, client).await;
    served.unwrap();
    dialed.unwrap();
}

#[tokio::test]
async fn an_agent_identity_cannot_dial_as_the_controller() {
    let pki = Pki::new(SystemTime::now());
    let agent = shared(&pki, Role::Agent, Role::Agent);
    let server = server_config(agent.clone(), CONTROLLER.into());
    // A stolen agent identity, presented by a client.
    let client = client_config(agent, AGENT.into());
    let (served, dialed) = exchange(server, client).await;
    let error = served.unwrap_err();
    assert!(
        error.contains("an agent certificate cannot act as the controller"),
        "{error}"
    );
    assert!(dialed.is_err());
}

#[tokio::test]
async fn the_controller_refuses_a_server_with_another_name() {
    let pki = Pki::new(SystemTime::now());
    let server = server_config(shared(&pki, Role::Agent, Role::Agent), CONTROLLER.into());
    let client = client_config(
        shared(&pki, Role::Controller, Role::Controller),
        "another-agent".into(),
    );
    let (served, dialed) = exchange(server, client).await;
    let error = dialed.unwrap_err();
    assert!(error.contains("expected \"another-agent\""), "{error}");
    assert!(served.is_err());
}

#[tokio::test]
async fn without_material_every_handshake_fails() {
    let pki = Pki::new(SystemTime::now());
    let empty = SharedMaterial::new("/var/run/hawser/tls");
    let controller = shared(&pki, Role::Controller, Role::Controller);

    let server = server_config(empty.clone(), CONTROLLER.into());
    let (served, dialed) = exchange(server, client_config(controller, AGENT.into())).await;
    assert!(served.is_err() && dialed.is_err());

    let server = server_config(shared(&pki, Role::Agent, Role::Agent), CONTROLLER.into());
    let (served, dialed) = exchange(server, client_config(empty, AGENT.into())).await;
    let error = dialed.unwrap_err();
    assert!(error.contains("has no valid material"), "{error}");
    assert!(served.is_err());
}
