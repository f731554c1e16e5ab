//! Certificate commands: stores, the process-wide transaction, crt-lists.
//!
//! HAProxy keeps one SSL certificate transaction for the whole process: while
//! `set ssl cert a.pem` is uncommitted, `set ssl cert b.pem` fails. A failed
//! `commit` (key and certificate do not match) leaves the transaction open.
//! So [`RuntimeApi::update_ssl_cert`] always ends with `commit` or `abort`,
//! and clones of one [`RuntimeApi`] run their updates one at a time.

use super::{RuntimeApi, ends_with_success};
use crate::{
    CrtListEntry, SocketError, SslCertDetails, SslCertList,
    cli::{self, Command, args},
};

impl RuntimeApi {
    /// `new ssl cert <path>`: an empty store, to fill with
    /// [`RuntimeApi::update_ssl_cert`] before adding it to a crt-list.
    pub async fn new_ssl_cert(&self, path: &str) -> Result<(), SocketError> {
        let path = args::word("certificate path", path)?;
        let command = Command::new(format!("new ssl cert {path}"));
        let expected = format!("New empty certificate store '{path}'!");
        self.expect_reply(&command, |text| text == expected)
            .await
            .map(drop)
    }

    /// `set ssl cert <path> <<`: opens (or updates) the transaction with a
    /// PEM bundle (certificate, chain, key). The PEM is never logged or put
    /// in errors. Leaves the transaction open: commit or abort it.
    pub async fn set_ssl_cert(&self, path: &str, pem: &str) -> Result<(), SocketError> {
        let path = args::word("certificate path", path)?;
        let command = Command::with_payload(format!("set ssl cert {path}"), args::pem_lines(pem)?);
        let created = format!("Transaction created for certificate {path}!");
        let updated = format!("Transaction updated for certificate {path}!");
        self.expect_reply(&command, |text| text == created || text == updated)
            .await
            .map(drop)
    }

    /// `commit ssl cert <path>`: swaps the transaction in everywhere the
    /// certificate is used. On failure the transaction stays open.
    pub async fn commit_ssl_cert(&self, path: &str) -> Result<(), SocketError> {
        let path = args::word("certificate path", path)?;
        let command = Command::new(format!("commit ssl cert {path}"));
        // `Committing certs/a.pem` (plus progress dots), then `Success!`.
        let committing = format!("Committing {path}");
        self.expect_reply(&command, |text| {
            text.starts_with(&committing) && ends_with_success(text)
        })
        .await
        .map(drop)
    }

    /// `abort ssl cert <path>`: drops the open transaction on `path`.
    pub async fn abort_ssl_cert(&self, path: &str) -> Result<(), SocketError> {
        let path = args::word("certificate path", path)?;
        let command = Command::new(format!("abort ssl cert {path}"));
        let expected = format!("Transaction aborted for certificate '{path}'!");
        self.expect_reply(&command, |text| text == expected)
            .await
            .map(drop)
    }

    /// `del ssl cert <path>`: deletes an unused store. Certificates named by
    /// `crt` on a `bind` line, or still in a crt-list, cannot be deleted.
    pub async fn del_ssl_cert(&self, path: &str) -> Result<(), SocketError> {
        let path = args::word("certificate path", path)?;
        let command = Command::new(format!("del ssl cert {path}"));
        let expected = format!("Certificate '{path}' deleted!");
        self.expect_reply(&command, |text| text == expected)
            .await
            .map(drop)
    }

    /// Adds `<cert> [sni...]` to a crt-list and to every bind using it.
    ///
    /// Always sent as a one-line payload: HAProxy 3.0 silently drops SNI
    /// filters given on the command line itself (`add ssl crt-list <list>
    /// <cert> <sni>`). The store must hold a certificate already.
    pub async fn add_ssl_crt_list(
        &self,
        list: &str,
        cert: &str,
        sni_filters: &[&str],
    ) -> Result<(), SocketError> {
        let list = args::word("crt-list path", list)?;
        let mut entry = args::word("certificate path", cert)?.to_owned();
        for filter in sni_filters {
            entry.push(' ');
            entry.push_str(args::word("sni filter", filter)?);
        }
        let command = Command::with_payload(format!("add ssl crt-list {list}"), [entry.as_str()]);
        let inserting = format!("Inserting certificate '{cert}' in crt-list '{list}'");
        self.expect_reply(&command, |text| {
            text.starts_with(&inserting) && ends_with_success(text)
        })
        .await
        .map(drop)
    }

    /// `del ssl crt-list <list> <entry>`, where `entry` is a certificate
    /// path, or `<path>:<line>` when the certificate has several entries
    /// (see [`RuntimeApi::show_ssl_crt_list`]). The crt-list's default
    /// certificate cannot be removed.
    pub async fn del_ssl_crt_list(&self, list: &str, entry: &str) -> Result<(), SocketError> {
        let list = args::word("crt-list path", list)?;
        let entry = args::word("crt-list entry", entry)?;
        let command = Command::new(format!("del ssl crt-list {list} {entry}"));
        // The reply names the certificate without the `:<line>` suffix.
        let cert = entry
            .rsplit_once(':')
            .filter(|(_, line)| line.chars().all(|c| c.is_ascii_digit()))
            .map_or(entry, |(cert, _)| cert);
        let expected = format!("Entry '{cert}' deleted in crtlist '{list}'!");
        self.expect_reply(&command, |text| text == expected)
            .await
            .map(drop)
    }

    /// `show ssl cert`: the stores and the open transaction.
    pub async fn show_ssl_certs(&self) -> Result<SslCertList, SocketError> {
        let command = Command::new("show ssl cert");
        let reply = self.send(&command).await?;
        SslCertList::parse(cli::text(&reply)).ok_or_else(|| cli::rejected(&command, &reply))
    }

    /// `show ssl cert <path>`: status, serial, validity, fingerprint.
    /// `*<path>` shows the uncommitted transaction copy.
    pub async fn show_ssl_cert(&self, path: &str) -> Result<SslCertDetails, SocketError> {
        let path = args::word("certificate path", path)?;
        let command = Command::new(format!("show ssl cert {path}"));
        let reply = self.send(&command).await?;
        SslCertDetails::parse(cli::text(&reply)).ok_or_else(|| cli::rejected(&command, &reply))
    }

    /// `show ssl crt-list -n <list>`: the entries with their line numbers.
    pub async fn show_ssl_crt_list(&self, list: &str) -> Result<Vec<CrtListEntry>, SocketError> {
        let list = args::word("crt-list path", list)?;
        let command = Command::new(format!("show ssl crt-list -n {list}"));
        let reply = self.send(&command).await?;
        CrtListEntry::parse_list(cli::text(&reply)).ok_or_else(|| cli::rejected(&command, &reply))
    }

    /// Replaces the certificate and key of store `path`: `set` then
    /// `commit`. On any failure the transaction is aborted before the error
    /// is returned, so no transaction is ever left open by this call (unless
    /// the abort fails too: [`SocketError::TransactionLeftOpen`]).
    pub async fn update_ssl_cert(&self, path: &str, pem: &str) -> Result<(), SocketError> {
        let _serialized = self.ssl_transaction.lock().await;
        let result = match self.set_ssl_cert(path, pem).await {
            Ok(()) => {
                // The transaction is open in HAProxy, not committed.
                hawser_failpoint::failpoint!("runtime.ssl_set_before_commit");
                self.commit_ssl_cert(path).await
            }
            Err(error) => Err(error),
        };
        let Err(failure) = result else {
            return Ok(());
        };
        // Arguments that never reached HAProxy opened nothing.
        if matches!(
            failure,
            SocketError::InvalidArgument { .. } | SocketError::PayloadTooLarge { .. }
        ) {
            return Err(failure);
        }
        match self.abort_own_transaction(path).await {
            Ok(()) => Err(failure),
            Err(abort) => Err(SocketError::TransactionLeftOpen {
                path: path.to_owned(),
                failure: Box::new(failure),
                abort: Box::new(abort),
            }),
        }
    }

    /// Aborts the transaction `show ssl cert` lists, if any, and returns
    /// its certificate: run it at agent start-up, since a crashed agent may
    /// have left one open and it blocks every other certificate update.
    pub async fn abort_open_transaction(&self) -> Result<Option<String>, SocketError> {
        let _serialized = self.ssl_transaction.lock().await;
        let Some(path) = self.show_ssl_certs().await?.transaction else {
            return Ok(None);
        };
        self.abort_ssl_cert(&path).await?;
        Ok(Some(path))
    }

    /// `abort ssl cert <path>`, also content when there was nothing of
    /// ours to abort (`No ongoing transaction!`, or another certificate's).
    async fn abort_own_transaction(&self, path: &str) -> Result<(), SocketError> {
        let path = args::word("certificate path", path)?;
        let command = Command::new(format!("abort ssl cert {path}"));
        let aborted = format!("Transaction aborted for certificate '{path}'!");
        self.expect_reply(&command, |text| {
            text == aborted
                || text == "No ongoing transaction!"
                || text.starts_with("The ongoing transaction is about ")
        })
        .await
        .map(drop)
    }
}
