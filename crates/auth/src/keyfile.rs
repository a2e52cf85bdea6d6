//! Loading a [`KeyChain`] from a hex key file.
//!
//! One key per line, whitespace-separated:
//!
//! ```text
//! # id  algorithm      hex-secret                        [send-start send-end accept-start accept-end]
//! 1     hmac-md5       00112233445566778899aabbccddeeff
//! 0x2a  hmac-sha256    6b6579...                         1700000000 1800000000 1699990000 inf
//! ```
//!
//! * `id`: decimal or `0x` hexadecimal, at most 48 bits (RFC 2747 §2);
//! * `algorithm`: a name [`Algorithm`](crate::Algorithm) parses (`hmac-md5`, `hmac-sha1`, …);
//! * `hex-secret`: an even number of hex digits, at least one byte;
//! * the four lifetimes are optional (all or none): wall-clock seconds since the Unix epoch,
//!   half-open `[start, end)` as [`Lifetime`] documents; an end may be `inf` for "never".
//!
//! `#` starts a comment that runs to the end of the line; blank lines are ignored. Errors name
//! the line and field and never include the secret.

use crate::algorithm::Algorithm;
use crate::key::{InvalidKey, Key, KeyChain, Lifetime, MAX_KEY_ID};
use std::io::Read;
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// Why a key file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// The file could not be opened or read.
    #[error("key file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file grants permissions to group or others.
    #[error(
        "key file {path} has mode {mode:04o}: it must not be accessible by group or others (chmod 600)"
    )]
    Permissions {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A line is malformed.
    #[error("key file line {line}, field {field}: {reason}")]
    Parse {
        /// 1-based line number.
        line: usize,
        /// The field at fault (`id`, `algorithm`, `secret`, `send-start`, …, or `line` for the
        /// field count).
        field: &'static str,
        /// What is wrong (never contains the secret).
        reason: String,
    },
    /// Two lines use the same key id.
    #[error("key file line {line}, field id: duplicate key id {id}")]
    DuplicateId {
        /// 1-based line number of the second occurrence.
        line: usize,
        /// The repeated id.
        id: u64,
    },
}

const LIFETIME_FIELDS: [&str; 4] = ["send-start", "send-end", "accept-start", "accept-end"];

fn parse_err(line: usize, field: &'static str, reason: impl Into<String>) -> KeyFileError {
    KeyFileError::Parse {
        line,
        field,
        reason: reason.into(),
    }
}

fn parse_id(s: &str, line: usize) -> Result<u64, KeyFileError> {
    let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse::<u64>(),
    };
    let id = parsed.map_err(|e| parse_err(line, "id", format!("{s:?} is not a number: {e}")))?;
    if id > MAX_KEY_ID {
        return Err(parse_err(
            line,
            "id",
            format!("{id} does not fit in 48 bits"),
        ));
    }
    Ok(id)
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn parse_secret(s: &str, line: usize) -> Result<Zeroizing<Vec<u8>>, KeyFileError> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return Err(parse_err(
            line,
            "secret",
            format!("odd number of hex digits ({})", b.len()),
        ));
    }
    let mut out = Zeroizing::new(Vec::with_capacity(b.len() / 2));
    for (i, pair) in b.chunks_exact(2).enumerate() {
        match (hex_val(pair[0]), hex_val(pair[1])) {
            (Some(h), Some(l)) => out.push(h << 4 | l),
            _ => {
                return Err(parse_err(
                    line,
                    "secret",
                    format!("invalid hex digit near position {}", i * 2 + 1),
                ));
            }
        }
    }
    Ok(out)
}

fn parse_time(s: &str, line: usize, field: &'static str) -> Result<u64, KeyFileError> {
    if field.ends_with("-end") && matches!(s, "inf" | "never" | "infinite") {
        return Ok(u64::MAX);
    }
    s.parse::<u64>()
        .map_err(|e| parse_err(line, field, format!("{s:?} is not a time in seconds: {e}")))
}

/// Parses key-file text (see the module documentation for the format).
pub fn parse_key_file(text: &str) -> Result<KeyChain, KeyFileError> {
    let mut chain = KeyChain::new();
    for (idx, raw) in text.lines().enumerate() {
        let line = idx + 1;
        let content = raw.split('#').next().unwrap_or("");
        let fields: Vec<&str> = content.split_whitespace().collect();
        if fields.is_empty() {
            continue;
        }
        if fields.len() != 3 && fields.len() != 7 {
            return Err(parse_err(
                line,
                "line",
                format!(
                    "expected 3 fields (id algorithm hex-secret) or 7 (with send-start send-end \
                     accept-start accept-end), found {}",
                    fields.len()
                ),
            ));
        }
        let id = parse_id(fields[0], line)?;
        let algorithm: Algorithm = fields[1]
            .parse()
            .map_err(|e: crate::UnknownAlgorithm| parse_err(line, "algorithm", e.to_string()))?;
        let secret = parse_secret(fields[2], line)?;
        let mut key = Key::new(id, algorithm, &secret).map_err(|e| match e {
            InvalidKey::IdTooLarge(_) => parse_err(line, "id", e.to_string()),
            InvalidKey::EmptySecret => parse_err(line, "secret", e.to_string()),
        })?;
        if fields.len() == 7 {
            let mut t = [0u64; 4];
            for (i, name) in LIFETIME_FIELDS.iter().enumerate() {
                t[i] = parse_time(fields[3 + i], line, name)?;
            }
            if t[0] >= t[1] {
                return Err(parse_err(
                    line,
                    "send-end",
                    "send-end must be after send-start",
                ));
            }
            if t[2] >= t[3] {
                return Err(parse_err(
                    line,
                    "accept-end",
                    "accept-end must be after accept-start",
                ));
            }
            key = key
                .with_send(Lifetime::new(t[0], t[1]))
                .with_accept(Lifetime::new(t[2], t[3]));
        }
        chain
            .insert(key)
            .map_err(|d| KeyFileError::DuplicateId { line, id: d.0 })?;
    }
    Ok(chain)
}

/// Reads and parses a key file, refusing it if its mode grants any permission to group or
/// others (`mode & 0o077 != 0`), so a secret readable by other users is never used.
///
/// The mode is checked on the opened file, not on the path, so the file checked is the file read.
pub fn load_key_file(path: impl AsRef<Path>) -> Result<KeyChain, KeyFileError> {
    use std::os::unix::fs::PermissionsExt;
    let path = path.as_ref();
    let io = |source| KeyFileError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mode = file.metadata().map_err(io)?.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(KeyFileError::Permissions {
            path: path.to_owned(),
            mode,
        });
    }
    let mut bytes = Zeroizing::new(Vec::new());
    file.read_to_end(&mut bytes).map_err(io)?;
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8: {e}"),
        ))
    })?;
    parse_key_file(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    fn err(text: &str) -> (usize, &'static str, String) {
        match parse_key_file(text).unwrap_err() {
            KeyFileError::Parse {
                line,
                field,
                reason,
            } => (line, field, reason),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn parses_keys_comments_and_lifetimes() {
        let text = "# a comment\n\n1 hmac-md5 00112233445566778899aabbccddeeff\n\
                    0x2a HMAC-SHA256 DEADbeef 100 200 90 inf # trailing comment\n";
        let chain = parse_key_file(text).unwrap();
        assert_eq!(chain.len(), 2);
        let k1 = chain.get(1).unwrap();
        assert_eq!(k1.algorithm(), Algorithm::HmacMd5);
        assert_eq!(k1.secret().len(), 16);
        assert_eq!(k1.send, Lifetime::ALWAYS);
        let k2 = chain.get(42).unwrap();
        assert_eq!(k2.algorithm(), Algorithm::HmacSha256);
        assert_eq!(k2.secret(), &[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(k2.send, Lifetime::new(100, 200));
        assert_eq!(k2.accept, Lifetime::new(90, u64::MAX));
    }

    #[test]
    fn errors_name_line_and_field() {
        assert_eq!(err("\n\nx hmac-md5 00").0, 3);
        assert_eq!(err("x hmac-md5 00").1, "id");
        assert_eq!(err("281474976710656 hmac-md5 00").1, "id"); // 2^48
        assert_eq!(err("1 hmac-foo 00").1, "algorithm");
        assert_eq!(err("1 hmac-md5 abc").1, "secret");
        assert_eq!(err("1 hmac-md5 zz").1, "secret");
        assert_eq!(err("1 hmac-md5 00 1 2").1, "line");
        assert_eq!(err("1 hmac-md5").1, "line");
        assert_eq!(err("1 hmac-md5 00 a 2 3 4").1, "send-start");
        assert_eq!(err("1 hmac-md5 00 1 inf 3 x").1, "accept-end");
        assert_eq!(err("1 hmac-md5 00 inf 5 3 4").1, "send-start");
        assert_eq!(err("1 hmac-md5 00 5 5 3 4").1, "send-end");
        assert_eq!(err("1 hmac-md5 00 1 5 4 3").1, "accept-end");
        match parse_key_file("1 hmac-md5 00\n1 hmac-sha1 01").unwrap_err() {
            KeyFileError::DuplicateId { line, id } => assert_eq!((line, id), (2, 1)),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn errors_never_contain_the_secret() {
        let (_, _, reason) = err("1 hmac-md5 cafebabecafebabeZZ");
        assert!(!reason.contains("cafebabe"), "{reason}");
        let msg = parse_key_file("1 hmac-md5 cafebabe1")
            .unwrap_err()
            .to_string();
        assert!(!msg.contains("cafebabe"), "{msg}");
    }

    fn temp_key_file(mode: u32) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        writeln!(f, "7 hmac-sha1 0102030405").unwrap();
        f.flush().unwrap();
        std::fs::set_permissions(f.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        f
    }

    #[test]
    fn refuses_file_readable_by_others() {
        for mode in [0o644, 0o640, 0o604, 0o660, 0o602] {
            let f = temp_key_file(mode);
            match load_key_file(f.path()).unwrap_err() {
                KeyFileError::Permissions { mode: m, .. } => assert_eq!(m, mode),
                other => panic!("mode {mode:o}: unexpected {other:?}"),
            }
        }
        let f = temp_key_file(0o644);
        let msg = load_key_file(f.path()).unwrap_err().to_string();
        assert!(msg.contains("0644") && msg.contains("chmod 600"), "{msg}");
    }

    #[test]
    fn accepts_owner_only_file() {
        for mode in [0o600, 0o400] {
            let f = temp_key_file(mode);
            let chain = load_key_file(f.path()).unwrap();
            assert_eq!(chain.get(7).unwrap().secret(), &[1, 2, 3, 4, 5]);
        }
    }

    #[test]
    fn missing_file_is_io_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            load_key_file(dir.path().join("absent")).unwrap_err(),
            KeyFileError::Io { .. }
        ));
    }

    proptest::proptest! {
        /// Any text: a chain or a located error, never a panic.
        #[test]
        fn parsing_never_panics(text in "(?s).{0,300}") {
            let _ = parse_key_file(&text);
        }

        /// Keys written in the format come back as written.
        #[test]
        fn written_keys_parse_back(
            keys in proptest::collection::vec(
                (
                    0u64..=MAX_KEY_ID,
                    proptest::sample::select(Algorithm::ALL.to_vec()),
                    proptest::collection::vec(proptest::prelude::any::<u8>(), 1..40),
                    proptest::option::of((0u64..1 << 40, 1u64..1 << 20, 0u64..1 << 40, 1u64..1 << 20)),
                ),
                1..6,
            ),
        ) {
            let mut ids = std::collections::HashSet::new();
            let keys: Vec<_> = keys.into_iter().filter(|k| ids.insert(k.0)).collect();
            let mut text = String::from("# generated\n");
            for (id, alg, secret, life) in &keys {
                let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
                text += &format!("{id:#x} {} {hex}", alg.name());
                if let Some((ss, sl, as_, al)) = life {
                    text += &format!(" {ss} {} {as_} {}", ss + sl, as_ + al);
                }
                text += "\n";
            }
            let chain = parse_key_file(&text).unwrap();
            proptest::prop_assert_eq!(chain.len(), keys.len());
            for (id, alg, secret, life) in &keys {
                let k = chain.get(*id).unwrap();
                proptest::prop_assert_eq!(k.algorithm(), *alg);
                proptest::prop_assert_eq!(k.secret(), &secret[..]);
                if let Some((ss, sl, as_, al)) = life {
                    proptest::prop_assert_eq!(k.send, Lifetime::new(*ss, ss + sl));
                    proptest::prop_assert_eq!(k.accept, Lifetime::new(*as_, as_ + al));
                }
            }
        }
    }
}
