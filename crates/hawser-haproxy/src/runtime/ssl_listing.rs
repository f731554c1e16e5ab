//! Parsing `show ssl cert`, `show ssl cert <file>` and `show ssl crt-list -n <list>`.

use std::collections::BTreeMap;

/// `show ssl cert`: the certificate stores and the open transaction, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SslCertList {
    /// Every certificate store, by file name (`certs/a.pem`).
    pub certs: Vec<String>,
    /// The certificate of the process-wide transaction (`set ssl cert`
    /// without `commit` or `abort`), listed under `# transaction`.
    pub transaction: Option<String>,
}

impl SslCertList {
    /// Parses the listing; `None` when it is not one.
    pub(super) fn parse(text: &str) -> Option<Self> {
        let mut list = Self::default();
        // HAProxy answers nothing at all when it holds no certificate.
        if text.trim().is_empty() {
            return Some(list);
        }
        let mut in_transaction = None;
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            match line {
                "# transaction" => in_transaction = Some(true),
                "# filename" => in_transaction = Some(false),
                // `*certs/a.pem`: the star marks the uncommitted copy.
                _ => match in_transaction? {
                    true => list.transaction = Some(line.trim_start_matches('*').to_owned()),
                    false => list.certs.push(line.to_owned()),
                },
            }
        }
        in_transaction.map(|_| list)
    }
}

/// `show ssl cert <file>`: one certificate store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SslCertDetails {
    /// `Filename` (`*<file>` for the uncommitted transaction copy).
    pub filename: String,
    /// `Status`: `Used`, `Unused` or `Empty`.
    pub status: String,
    /// `Serial`, upper-case hexadecimal; `None` for an empty store.
    pub serial: Option<String>,
    /// `notAfter`, e.g. `Dec 30 05:26:48 2026 GMT`.
    pub not_after: Option<String>,
    /// `SHA1 FingerPrint`, upper-case hexadecimal.
    pub sha1_fingerprint: Option<String>,
    /// Every `Key: value` line (the first one for repeated keys), e.g.
    /// `Subject`, `Issuer`, `Subject Alternative Name`, `notBefore`.
    pub fields: BTreeMap<String, String>,
}

impl SslCertDetails {
    /// Parses the details; `None` when the reply has no `Filename` and `Status`.
    pub(super) fn parse(text: &str) -> Option<Self> {
        let mut fields = BTreeMap::new();
        for line in text.lines() {
            if let Some((key, value)) = line.split_once(':') {
                fields
                    .entry(key.trim().to_owned())
                    .or_insert_with(|| value.trim().to_owned());
            }
        }
        let field = |key: &str| fields.get(key).filter(|value| !value.is_empty()).cloned();
        Some(Self {
            filename: field("Filename")?,
            status: field("Status")?,
            serial: field("Serial"),
            not_after: field("notAfter"),
            sha1_fingerprint: field("SHA1 FingerPrint"),
            fields,
        })
    }
}

/// One line of `show ssl crt-list -n <list>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrtListEntry {
    /// The certificate file.
    pub cert: String,
    /// The line number, for `del ssl crt-list <list> <cert>:<line>` when
    /// the certificate has several entries. Numbers are not reused after a
    /// deletion.
    pub line: u32,
    /// SSL options between brackets, e.g. `alpn h2`.
    pub options: Option<String>,
    /// SNI filters (`!`-prefixed ones exclude).
    pub sni_filters: Vec<String>,
}

impl CrtListEntry {
    /// Parses the listing (its `# <list>` header and one entry a line);
    /// `None` when it is not one.
    pub(super) fn parse_list(text: &str) -> Option<Vec<Self>> {
        let mut lines = text.lines().filter(|line| !line.trim().is_empty());
        lines.next()?.strip_prefix("# ")?;
        lines.map(Self::parse).collect()
    }

    /// `certs/b.pem:3 [alpn h2\0] b.example.test *.b.example.test`. HAProxy
    /// 3.0 prints a NUL byte before `]`; it is dropped.
    fn parse(line: &str) -> Option<Self> {
        let line = line.replace('\0', "");
        let (first, rest) = line.split_once(' ').unwrap_or((&line, ""));
        let (cert, number) = first.rsplit_once(':')?;
        let (options, filters) = match rest.trim_start().strip_prefix('[') {
            Some(bracketed) => {
                let (options, filters) = bracketed.split_once(']')?;
                (Some(options.trim().to_owned()), filters)
            }
            None => (None, rest),
        };
        Some(Self {
            cert: cert.to_owned(),
            line: number.parse().ok()?,
            options,
            sni_filters: filters.split_whitespace().map(str::to_owned).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cert_list_with_and_without_transaction() {
        let open = "# transaction\n*certs/a.pem\n# filename\ncerts/a.pem\ncerts/default.pem";
        assert_eq!(
            SslCertList::parse(open),
            Some(SslCertList {
                certs: vec!["certs/a.pem".into(), "certs/default.pem".into()],
                transaction: Some("certs/a.pem".into()),
            })
        );
        let closed = SslCertList::parse("# filename\ncerts/a.pem").unwrap();
        assert_eq!(closed.transaction, None);
        assert_eq!(SslCertList::parse("Unknown command"), None);
    }

    #[test]
    fn cert_details() {
        let text = "Filename: certs/a.pem\nStatus: Used\nSerial: 17F6A7D68676D8C97260DC55184B61320531B5C8\nnotBefore: Nov 30 05:29:23 2026 GMT\nnotAfter: Dec 30 05:29:23 2026 GMT\nSubject Alternative Name: DNS:a.example.test\nAlgorithm: EC256\nSHA1 FingerPrint: 2C97B97818326FF348820E82D7A3CED923AF9F40\nSubject: /CN=a.example.test\nIssuer: /CN=a.example.test\nOCSP Response Key: ";
        let details = SslCertDetails::parse(text).unwrap();
        assert_eq!(details.status, "Used");
        assert_eq!(
            details.serial.as_deref(),
            Some("17F6A7D68676D8C97260DC55184B61320531B5C8")
        );
        assert_eq!(
            details.not_after.as_deref(),
            Some("Dec 30 05:29:23 2026 GMT")
        );
        assert_eq!(details.fields["Subject"], "/CN=a.example.test");
        let empty =
            SslCertDetails::parse("Filename: certs/e.pem\nStatus: Empty\nOCSP Response Key: ")
                .unwrap();
        assert_eq!((empty.status.as_str(), empty.serial), ("Empty", None));
        assert_eq!(
            SslCertDetails::parse(
                "Can't display the certificate: Not found or the certificate is a bundle!"
            ),
            None
        );
    }

    #[test]
    fn crt_list_entries() {
        let text = "# certs/crt-list.txt\ncerts/a.pem:1\ncerts/b.pem:3 [alpn h2\0] b.example.test *.b.example.test\ncerts/b.pem:5 b.example.test !x.b.example.test";
        let entries = CrtListEntry::parse_list(text).unwrap();
        assert_eq!(entries.len(), 3);
        assert_eq!(
            entries[0],
            CrtListEntry {
                cert: "certs/a.pem".into(),
                line: 1,
                options: None,
                sni_filters: vec![],
            }
        );
        assert_eq!(entries[1].options.as_deref(), Some("alpn h2"));
        assert_eq!(
            entries[1].sni_filters,
            ["b.example.test", "*.b.example.test"]
        );
        assert_eq!(
            entries[2].sni_filters,
            ["b.example.test", "!x.b.example.test"]
        );
        assert_eq!(
            CrtListEntry::parse_list("didn't find the specified filename"),
            None
        );
    }
}
