//! HTTP basic authentication for the ALTO server (`--alto-auth FILE`).
//!
//! The file is what `htpasswd -B` writes: one `user:hash` per line, bcrypt hashes (`$2y$`,
//! `$2b$`, `$2a$`), `#` comments and blank lines ignored. bcrypt is slow on purpose (tens of
//! milliseconds a check), so an `Authorization` value that once checked is remembered (hashed
//! with SHA-256, at most [`CACHE`] of them) and not checked again. Use it over TLS: basic
//! credentials travel in the clear otherwise. (RFC 7285 §8.3.5 names HTTP Digest and TLS
//! client authentication; basic over TLS is what clients and proxies support today.)

use super::counters::{AltoCounters, Refusal};
use anyhow::Context as _;
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use sha2::{Digest as _, Sha256};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Most `Authorization` values remembered as good.
pub const CACHE: usize = 1024;

/// The users and their bcrypt hashes.
#[derive(Debug)]
pub struct Credentials {
    users: HashMap<String, String>,
    good: Mutex<HashSet<[u8; 32]>>,
}

impl Credentials {
    /// Read an htpasswd-style file of bcrypt hashes.
    pub fn load(path: &Path) -> anyhow::Result<Credentials> {
        let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
        Self::parse(&text).with_context(|| format!("{}", path.display()))
    }

    /// Parse the file's text.
    pub fn parse(text: &str) -> anyhow::Result<Credentials> {
        let mut users = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (user, hash) = line
                .split_once(':')
                .with_context(|| format!("line {}: not user:hash", n + 1))?;
            if !(hash.starts_with("$2y$") || hash.starts_with("$2b$") || hash.starts_with("$2a$")) {
                anyhow::bail!(
                    "line {}: {user}'s hash is not bcrypt (make it with `htpasswd -B`)",
                    n + 1
                );
            }
            users.insert(user.to_owned(), hash.to_owned());
        }
        if users.is_empty() {
            anyhow::bail!("no users");
        }
        Ok(Credentials {
            users,
            good: Mutex::new(HashSet::new()),
        })
    }

    /// Whether an `Authorization` header value carries a known user's password.
    pub fn check(&self, authorization: &str) -> bool {
        let key: [u8; 32] = Sha256::digest(authorization.as_bytes()).into();
        if self
            .good
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&key)
        {
            return true;
        }
        let Some(b64) = authorization
            .strip_prefix("Basic ")
            .or_else(|| authorization.strip_prefix("basic "))
        else {
            return false;
        };
        let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(b64.trim()) else {
            return false;
        };
        let Ok(raw) = String::from_utf8(raw) else {
            return false;
        };
        let Some((user, password)) = raw.split_once(':') else {
            return false;
        };
        let ok = self
            .users
            .get(user)
            .is_some_and(|h| bcrypt::verify(password, h).unwrap_or(false));
        if ok {
            let mut good = self.good.lock().unwrap_or_else(|p| p.into_inner());
            if good.len() >= CACHE {
                good.clear();
            }
            good.insert(key);
        }
        ok
    }
}

/// The middleware: 401 with a `WWW-Authenticate: Basic` challenge unless the credentials check.
pub(crate) async fn require(
    State((creds, counters)): State<(Arc<Credentials>, Arc<AltoCounters>)>,
    headers: HeaderMap,
    request: Request,
    next: Next,
) -> Response {
    let ok = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| creds.check(v));
    if ok {
        return next.run(request).await;
    }
    counters.refused(Refusal::Unauthorized);
    (
        StatusCode::UNAUTHORIZED,
        [(WWW_AUTHENTICATE, "Basic realm=\"alto\", charset=\"UTF-8\"")],
        "authentication required\n",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bcrypt_files_check_basic_credentials() {
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let c = Credentials::parse(&format!("# users\n\nalice:{hash}\n")).unwrap();
        let b = |s: &str| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(s)
            )
        };
        assert!(c.check(&b("alice:s3cret")));
        // Remembered, and still right.
        assert!(c.check(&b("alice:s3cret")));
        assert!(!c.check(&b("alice:wrong")));
        assert!(!c.check(&b("bob:s3cret")));
        assert!(!c.check("Bearer x"));
        assert!(!c.check("Basic %%%"));
        assert!(Credentials::parse("alice:{SHA}abc").is_err());
        assert!(Credentials::parse("# nobody\n").is_err());
        assert!(Credentials::parse("alice").is_err());
    }
}
