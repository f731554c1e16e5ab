//! Authentication the render resolves from Secrets: the CA of client
//! certificates ([`resolve_client_ca`]), and basic authentication:
//! `auth-type: basic`, the users of an htpasswd
//! Secret (`auth-secret`, key `auth`) and the realm (`auth-realm`).
//!
//! Each line of the Secret is `user:hash`, the hash one crypt(3) reads:
//! bcrypt (`$2a$`, `$2b$`, `$2y$`), SHA-256-crypt (`$5$`) or SHA-512-crypt
//! (`$6$`). Any other form (MD5 `$apr1$`, `{SHA}`, plain text) refuses the
//! Ingress, naming the Secret and the line, never the hash: an Ingress that
//! asks for authentication is never served without it.

use hawser_model::{ObjectKey, Store};

use super::AnnotationError;
use super::values::Expected;

/// ingress-nginx's `auth-realm` default.
pub const DEFAULT_REALM: &str = "Authentication Required";

/// What an Ingress's basic authentication asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BasicAuth {
    /// The Secret's name, in the Ingress's namespace.
    pub secret: String,
    pub realm: String,
    /// How the Secret holds its users.
    pub format: SecretFormat,
    /// `(user, hash)`, in the Secret's order; filled from the store.
    pub users: Vec<(String, String)>,
}

/// How a basic-auth Secret holds its users (`auth-secret-type`, as
/// ingress-nginx names them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SecretFormat {
    /// `auth-file`: htpasswd lines (`user:hash`) in the key `auth`.
    #[default]
    File,
    /// `auth-map`: one key per user, a hash as its value (haproxytech's
    /// format as well).
    Map,
}

/// A realm: printable text without quotes or backslashes, at most 128 bytes.
pub fn realm(value: &str) -> Result<String, Expected> {
    let ok = !value.is_empty()
        && value.len() <= 128
        && value
            .bytes()
            .all(|b| (b' '..=b'~').contains(&b) && !b"\"\\%$`'".contains(&b));
    ok.then(|| value.to_string())
        .ok_or("printable text without quotes, backslashes, % or $ (at most 128 bytes)")
}

/// A Secret name (a DNS-1123 subdomain).
pub fn secret_name(value: &str) -> Result<String, Expected> {
    crate::validate::subdomain_name("Secret", value)
        .map(|()| value.to_string())
        .map_err(|_| "the name of a Secret in the Ingress's namespace")
}

/// Fills `auth.users` from the Secret in `namespace`; `Err` names the
/// Secret and what is wrong with it.
pub fn resolve_users(
    auth: &mut BasicAuth,
    store: &Store,
    namespace: &str,
) -> Result<(), AnnotationError> {
    let key = ObjectKey::new(namespace, &auth.secret);
    let refuse = |why: String| AnnotationError::Secret {
        annotation: super::AUTH_SECRET_ANNOTATION.to_string(),
        secret: key.to_string(),
        why,
    };
    let secret = store.secret(&key).ok_or_else(|| missing_users(&key))?;
    // (where, user, hash) of each user the Secret holds.
    let mut entries: Vec<(String, String, String)> = Vec::new();
    match auth.format {
        SecretFormat::File => {
            let text = secret
                .auth
                .as_deref()
                .ok_or_else(|| refuse("it has no key \"auth\" (htpasswd lines)".to_string()))?;
            let text = std::str::from_utf8(text)
                .map_err(|_| refuse("its key \"auth\" is not UTF-8 text".to_string()))?;
            for (number, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let place = format!("line {} of its key \"auth\"", number + 1);
                let (user, hash) = line
                    .split_once(':')
                    .ok_or_else(|| refuse(format!("{place} is not user:hash")))?;
                entries.push((place, user.to_string(), hash.to_string()));
            }
        }
        SecretFormat::Map => {
            for (user, hash) in &secret.entries {
                let hash = std::str::from_utf8(hash).map_err(|_| {
                    refuse("the value of one of its keys is not UTF-8 text".to_string())
                })?;
                entries.push((
                    "one of its keys".to_string(),
                    user.clone(),
                    hash.trim().to_string(),
                ));
            }
        }
    }
    let mut users: Vec<(String, String)> = Vec::new();
    for (place, user, hash) in entries {
        let at = |why: &str| refuse(format!("{place} {why}"));
        let user_ok = !user.is_empty()
            && user.len() <= 64
            && user
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._@-".contains(&b));
        if !user_ok {
            return Err(at(
                "names a user with characters other than letters, digits and . _ @ -",
            ));
        }
        if !crypt_hash(&hash) {
            return Err(at(
                "holds a hash that is not bcrypt ($2a$, $2b$, $2y$), SHA-256-crypt ($5$) or SHA-512-crypt ($6$); make one with htpasswd -B or openssl passwd -6",
            ));
        }
        if users.iter().any(|(u, _)| *u == user) {
            return Err(at("names a user twice"));
        }
        users.push((user, hash));
    }
    if users.is_empty() {
        return Err(refuse(match auth.format {
            SecretFormat::File => "its key \"auth\" names no user".to_string(),
            SecretFormat::Map => {
                "it holds no user (one key per user, a hash as its value)".to_string()
            }
        }));
    }
    auth.users = users;
    Ok(())
}

/// Reads the CA client certificates are verified with (`client-auth-secret`,
/// key `ca.crt`) from the Secret in `namespace`; `Err` names the Secret.
pub fn resolve_client_ca(
    client: &mut super::ClientAuth,
    store: &Store,
    namespace: &str,
) -> Result<(), AnnotationError> {
    let key = ObjectKey::new(namespace, &client.secret);
    let file = crate::tls::ca_file(store, &key).map_err(|why| AnnotationError::Secret {
        annotation: super::CLIENT_AUTH_SECRET_ANNOTATION.to_string(),
        secret: key.to_string(),
        why,
    })?;
    client.ca = Some(file);
    Ok(())
}

/// The refusal of an Ingress whose basic-auth Secret `key` does not exist
/// (the admission webhook recognises it: it may not hold that Secret yet).
pub fn missing_users(key: &ObjectKey) -> AnnotationError {
    AnnotationError::Secret {
        annotation: super::AUTH_SECRET_ANNOTATION.to_string(),
        secret: key.to_string(),
        why: crate::tls::SECRET_MISSING.to_string(),
    }
}

/// A bcrypt or SHA-crypt hash of the characters those use.
fn crypt_hash(hash: &str) -> bool {
    let known = ["$2a$", "$2b$", "$2y$", "$5$", "$6$"]
        .iter()
        .any(|prefix| hash.starts_with(prefix));
    known
        && hash.len() <= 256
        && hash
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"./$=".contains(&b))
}

#[cfg(test)]
mod tests {
    use hawser_model::{Object, Secret};

    use super::*;

    fn store_with(auth: Option<&str>) -> Store {
        let mut store = Store::new();
        store.insert(Object::Secret(Secret {
            key: ObjectKey::new("app", "users"),
            secret_type: "Opaque".to_string(),
            tls_crt: None,
            tls_key: None,
            auth: auth.map(|a| a.as_bytes().to_vec()),
            ca_crt: None,
            entries: Default::default(),
        }));
        store
    }

    fn resolve(auth: Option<&str>) -> Result<Vec<(String, String)>, String> {
        let mut basic = BasicAuth {
            secret: "users".to_string(),
            realm: DEFAULT_REALM.to_string(),
            format: SecretFormat::File,
            users: Vec::new(),
        };
        resolve_users(&mut basic, &store_with(auth), "app")
            .map(|()| basic.users)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn htpasswd_lines_become_users() {
        let users = resolve(Some(
            "# team\nalice:$2y$05$abcdefghijklmnopqrstuuq0Q1bVd5nY1Lc5h4ZbI3VQd5jP3m1Gq\nbob:$6$salt$hashvalue\n",
        ))
        .unwrap();
        assert_eq!(users.len(), 2);
        assert_eq!(users[1].0, "bob");
    }

    #[test]
    fn what_cannot_be_served_names_the_secret_and_line_not_the_hash() {
        for (auth, expected) in [
            (None, "has no key \"auth\""),
            (
                Some("alice:$apr1$x$y"),
                "line 1 of its key \"auth\" holds a hash",
            ),
            (Some("alice:{SHA}abc"), "line 1"),
            (Some("alice:plaintext"), "line 1"),
            (Some("al ice:$6$s$h"), "names a user"),
            (
                Some("alice:$6$s$h\nalice:$6$s$i"),
                "line 2 of its key \"auth\" names a user twice",
            ),
            (Some("alice:$6$s$h'\nbind :1"), "line 1"),
            (Some("\n"), "names no user"),
        ] {
            let error = resolve(auth).unwrap_err();
            assert!(error.contains("Secret app/users"), "{error}");
            assert!(error.contains(expected), "{auth:?}: {error}");
            assert!(
                !error.contains("apr1") && !error.contains("plaintext"),
                "{error}"
            );
        }
        let mut basic = BasicAuth {
            secret: "gone".to_string(),
            realm: DEFAULT_REALM.to_string(),
            format: SecretFormat::File,
            users: Vec::new(),
        };
        let error = resolve_users(&mut basic, &Store::new(), "app").unwrap_err();
        assert!(
            error
                .to_string()
                .contains("Secret app/gone: it does not exist")
        );
    }
}
