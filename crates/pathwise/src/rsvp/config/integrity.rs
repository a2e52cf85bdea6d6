//! `[rsvp.interface.integrity]`: RFC 2747 message integrity on one interface.
//!
//! ```toml
//! [[rsvp.interface]]
//! name = "veth1"
//! bandwidth = "10Mbit"
//!
//! [rsvp.interface.integrity]
//! mode = "require"                # off | accept | require
//! challenge = true                # handshake flag and challenge/response (RFC 2747 §4.3)
//! window = 256                    # reordering tolerated: numbers accepted below the largest
//!                                 # received from a sender, once each (§4.2; 1 to 1024)
//! key_file = "/etc/pathwise/veth1.keys"   # hex key file, mode 600 (format below)
//! # or the same lines inline (then the configuration file itself must be mode 600):
//! # keys = """
//! # 1  hmac-sha256  00112233445566778899aabbccddeeff  1700000000 inf 1699990000 inf
//! # """
//!
//! [[rsvp.interface.integrity.neighbor]]   # a chain of its own for one neighbour
//! address = "10.0.1.2"
//! key_file = "/etc/pathwise/r2.keys"
//! ```
//!
//! The key-file format is `pathwise_auth::parse_key_file`'s: `id algorithm hex-secret
//! [send-start send-end accept-start accept-end]`, one key per line, times in Unix seconds
//! (`inf` for no end). Secrets are never logged or shown; errors name lines and fields only.

use crate::config::{ConfigError, Source, line_of};
use pathwise_auth::{KeyChain, KeyFileError, Mode, Policy, load_key_file, parse_key_file};
use serde::Deserialize;
use std::net::IpAddr;
use std::path::PathBuf;
use toml::Spanned;

/// `[rsvp.interface.integrity]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntegritySection {
    /// `off`, `accept` or `require`.
    pub mode: Spanned<String>,
    /// Use the handshake (default on).
    #[serde(default = "yes")]
    pub challenge: bool,
    /// Reordering tolerance (RFC 2747 §4.2), default [`pathwise_auth::REPLAY_WINDOW`].
    pub window: Option<Spanned<u64>>,
    /// The interface's keys, inline.
    pub keys: Option<Spanned<String>>,
    /// The interface's keys, in a key file.
    pub key_file: Option<Spanned<PathBuf>>,
    /// Neighbours with chains of their own.
    #[serde(default, rename = "neighbor")]
    pub neighbors: Vec<NeighborSection>,
}

fn yes() -> bool {
    true
}

/// `[[rsvp.interface.integrity.neighbor]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeighborSection {
    /// The neighbour's address on this interface.
    pub address: Spanned<String>,
    /// Its keys, inline.
    pub keys: Option<Spanned<String>>,
    /// Its keys, in a key file.
    pub key_file: Option<Spanned<PathBuf>>,
}

/// Where one chain's keys come from: `keys = """…"""` or `key_file = "…"`.
struct KeySource<'a> {
    keys: Option<&'a Spanned<String>>,
    key_file: Option<&'a Spanned<PathBuf>>,
}

impl KeySource<'_> {
    /// Static checks: exactly one source; inline keys parse (errors point at the line inside
    /// the configuration file).
    fn check(&self, cx: &Source<'_>, field: &str) -> Result<(), ConfigError> {
        match (self.keys, self.key_file) {
            (Some(k), Some(_)) => {
                Err(cx.at(k.span(), field, "give keys or key_file, not both".into()))
            }
            (None, None) => Err(cx.line(
                0,
                field,
                "needs keys = \"\"\"…\"\"\" or key_file = \"…\"".into(),
            )),
            (Some(k), None) => parse_key_file(k.get_ref())
                .map(drop)
                .map_err(|e| inline_error(cx, k, field, e)),
            (None, Some(_)) => Ok(()),
        }
    }

    /// The key chain (reads the key file, checking its permissions).
    fn chain(&self, cx: &Source<'_>, field: &str) -> Result<KeyChain, ConfigError> {
        match (self.keys, self.key_file) {
            (Some(k), _) => parse_key_file(k.get_ref()).map_err(|e| inline_error(cx, k, field, e)),
            (None, Some(f)) => load_key_file(f.get_ref())
                .map_err(|e| cx.at(f.span(), &format!("{field}.key_file"), e.to_string())),
            (None, None) => Ok(KeyChain::new()),
        }
    }
}

/// A key-file error inside an inline `keys` string, moved to the configuration file's line.
fn inline_error(cx: &Source<'_>, k: &Spanned<String>, field: &str, e: KeyFileError) -> ConfigError {
    // The value starts on the line of its opening quotes; a line break right after `"""` is
    // not part of the value.
    let start = k.span().start;
    let opening = line_of(cx.text, start);
    let skip = usize::from(cx.text[start..].starts_with("\"\"\"\n"));
    let field = format!("{field}.keys");
    match e {
        KeyFileError::Parse {
            line,
            field: f,
            reason,
        } => cx.line(opening + skip + line - 1, &field, format!("{f}: {reason}")),
        KeyFileError::DuplicateId { line, id } => cx.line(
            opening + skip + line - 1,
            &field,
            format!("duplicate key id {id}"),
        ),
        other => cx.line(opening, &field, other.to_string()),
    }
}

impl NeighborSection {
    fn source(&self) -> KeySource<'_> {
        KeySource {
            keys: self.keys.as_ref(),
            key_file: self.key_file.as_ref(),
        }
    }

    fn addr(&self, cx: &Source<'_>, field: &str) -> Result<IpAddr, ConfigError> {
        self.address.get_ref().parse::<IpAddr>().map_err(|_| {
            cx.at(
                self.address.span(),
                &format!("{field}.address"),
                format!("{:?} is not an IP address", self.address.get_ref()),
            )
        })
    }
}

impl IntegritySection {
    fn source(&self) -> KeySource<'_> {
        KeySource {
            keys: self.keys.as_ref(),
            key_file: self.key_file.as_ref(),
        }
    }

    fn mode(&self, cx: &Source<'_>, field: &str) -> Result<Mode, ConfigError> {
        self.mode
            .get_ref()
            .parse::<Mode>()
            .map_err(|e| cx.at(self.mode.span(), &format!("{field}.mode"), e.to_string()))
    }

    /// The reordering tolerance, checked against its range.
    fn window(&self, cx: &Source<'_>, field: &str) -> Result<u64, ConfigError> {
        let Some(w) = &self.window else {
            return Ok(pathwise_auth::REPLAY_WINDOW);
        };
        let max = pathwise_auth::MAX_REPLAY_WINDOW;
        if (1..=max).contains(w.get_ref()) {
            Ok(*w.get_ref())
        } else {
            Err(cx.at(
                w.span(),
                &format!("{field}.window"),
                format!("{}: 1 to {max} sequence numbers", w.get_ref()),
            ))
        }
    }

    /// Static checks of the section (`field` is its dotted path).
    pub(crate) fn check(&self, cx: &Source<'_>, field: &str) -> Result<(), ConfigError> {
        self.window(cx, field)?;
        if self.mode(cx, field)? != Mode::Off {
            self.source().check(cx, field)?;
        }
        for (n, nb) in self.neighbors.iter().enumerate() {
            let f = format!("{field}.neighbor[{n}]");
            nb.addr(cx, &f)?;
            nb.source().check(cx, &f)?;
        }
        Ok(())
    }

    /// Whether any keys are written in the configuration file itself.
    pub fn has_inline_keys(&self) -> bool {
        self.keys.is_some() || self.neighbors.iter().any(|n| n.keys.is_some())
    }

    /// The engine's policy for the interface; reads key files.
    pub(crate) fn policy(&self, cx: &Source<'_>, field: &str) -> Result<Policy, ConfigError> {
        let mut neighbors = Vec::with_capacity(self.neighbors.len());
        for (n, nb) in self.neighbors.iter().enumerate() {
            let f = format!("{field}.neighbor[{n}]");
            neighbors.push((nb.addr(cx, &f)?, nb.source().chain(cx, &f)?));
        }
        Ok(Policy {
            mode: self.mode(cx, field)?,
            keys: self.source().chain(cx, field)?,
            neighbors,
            challenge: self.challenge,
            window: self.window(cx, field)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::NodeConfig;
    use pathwise_auth::Mode;
    use std::os::unix::fs::PermissionsExt;

    const BASE: &str = r#"[rsvp]
traffic_control = "memory"

[[rsvp.interface]]
name = "veth1"
bandwidth = "10Mbit"

[rsvp.interface.integrity]
mode = "require"
keys = """
1  hmac-md5     00112233445566778899aabbccddeeff
2  hmac-sha256  0011223344556677  1700000000 1800000000 1699990000 inf
"""

[[rsvp.interface.integrity.neighbor]]
address = "10.0.1.2"
keys = "7 hmac-sha1 0a0b0c0d"
"#;

    #[test]
    fn builds_the_policy() {
        let c = NodeConfig::parse("node.toml", BASE).unwrap();
        let iface = &c.rsvp.as_ref().unwrap().interfaces[0];
        let p = c.integrity_policy(0, iface).unwrap();
        assert_eq!(p.mode, Mode::Require);
        assert!(p.challenge);
        assert_eq!(p.window, pathwise_auth::REPLAY_WINDOW);
        assert_eq!(p.keys.len(), 2);
        assert_eq!(p.keys.get(2).unwrap().send.end, 1_800_000_000);
        let nb = "10.0.1.2".parse().unwrap();
        assert_eq!(p.chain_for(Some(nb)).get(7).map(|k| k.id()), Some(7));
        // Secrets never appear in what the configuration prints.
        let shown = format!("{p:?}");
        assert!(
            !shown.contains("00112233") && !shown.contains("0a0b0c0d"),
            "{shown}"
        );
    }

    #[test]
    fn errors_point_into_the_file() {
        let bad_mode = BASE.replace("mode = \"require\"", "mode = \"strict\"");
        let e = NodeConfig::parse("n.toml", &bad_mode).unwrap_err();
        assert_eq!(
            (e.line, e.field.as_str()),
            (9, "rsvp.interface[0].integrity.mode")
        );
        // A bad key line is reported at its own line in the file, without the secret.
        let bad_key = BASE.replace(
            "hmac-sha256  0011223344556677",
            "hmac-sha256  00112233445566z7",
        );
        let e = NodeConfig::parse("n.toml", &bad_key).unwrap_err();
        assert_eq!(
            (e.line, e.field.as_str()),
            (12, "rsvp.interface[0].integrity.keys")
        );
        assert!(!e.to_string().contains("00112233445566z7"), "{e}");
        let both = BASE.replace(
            "mode = \"require\"",
            "mode = \"require\"\nkey_file = \"/k\"",
        );
        let e = NodeConfig::parse("n.toml", &both).unwrap_err();
        assert!(e.message.contains("not both"), "{e}");
        let none = "[rsvp]\n[[rsvp.interface]]\nname = \"a\"\nbandwidth = \"1Mbit\"\nintegrity = { mode = \"accept\" }\n";
        let e = NodeConfig::parse("n.toml", none).unwrap_err();
        assert!(e.message.contains("key_file"), "{e}");
        let off = none.replace("accept", "off");
        assert!(NodeConfig::parse("n.toml", &off).is_ok());
        let bad_nb = BASE.replace("10.0.1.2", "ten");
        let e = NodeConfig::parse("n.toml", &bad_nb).unwrap_err();
        assert_eq!(e.field, "rsvp.interface[0].integrity.neighbor[0].address");
        // The reordering window (RFC 2747 §4.2): 1 to 1024.
        for (w, ok) in [(0, false), (1, true), (1024, true), (1025, false)] {
            let text = BASE.replace(
                "mode = \"require\"",
                &format!("mode = \"require\"\nwindow = {w}"),
            );
            match NodeConfig::parse("n.toml", &text) {
                Ok(c) => {
                    assert!(ok, "window {w} accepted");
                    let iface = &c.rsvp.as_ref().unwrap().interfaces[0];
                    assert_eq!(c.integrity_policy(0, iface).unwrap().window, w);
                }
                Err(e) => {
                    assert!(!ok, "window {w}: {e}");
                    assert_eq!(
                        (e.line, e.field.as_str()),
                        (10, "rsvp.interface[0].integrity.window")
                    );
                    assert!(e.message.contains("1 to 1024"), "{e}");
                }
            }
        }
    }

    #[test]
    fn inline_keys_need_a_private_file_and_key_files_are_checked() {
        let dir = std::env::temp_dir().join(format!("pw-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("node.toml");
        std::fs::write(&path, BASE).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = NodeConfig::load(&path).unwrap_err();
        assert!(e.message.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(NodeConfig::load(&path).is_ok());
        // A key file readable by others is refused when the policy is built.
        let keys = dir.join("k.keys");
        std::fs::write(&keys, "3 hmac-sha512 00ff\n").unwrap();
        std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o640)).unwrap();
        let text = format!(
            "[rsvp]\n[[rsvp.interface]]\nname = \"a\"\nbandwidth = \"1Mbit\"\nintegrity = {{ mode = \"require\", key_file = {keys:?} }}\n"
        );
        let c = NodeConfig::parse("n.toml", &text).unwrap();
        let iface = &c.rsvp.as_ref().unwrap().interfaces[0];
        let e = c.integrity_policy(0, iface).unwrap_err();
        assert_eq!(e.field, "rsvp.interface[0].integrity.key_file");
        assert!(e.message.contains("0640"), "{e}");
        std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o600)).unwrap();
        let p = c.integrity_policy(0, iface).unwrap();
        assert_eq!(
            p.keys.get(3).unwrap().algorithm(),
            pathwise_auth::Algorithm::HmacSha512
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
