//! SIGHUP for `pathwise daemon`: read `node.toml` again and apply what can change while the
//! daemon runs; name everything else that changed as needing a restart.
//!
//! | changes live | how |
//! |---|---|
//! | `daemon.log` | the log level, from the next line logged |
//! | `daemon.receive_hold` | the loop's hold-off ([`crate::daemon::hold`]), from its next wake-up |
//! | `rsvp.interface[N].integrity` | mode and key chain, key files read again (RFC 2747 §5.1: keys switched without loss of RSVP state); sequence numbers and replay windows are kept. Re-read on every SIGHUP, so a changed key file is picked up even when `node.toml` did not change |
//! | `[[rsvp.lsp]]` | an LSP added is opened, one removed is torn down (PathTear), one changed is torn down and opened again |
//!
//! Everything else is bound at start — sockets and the management socket (`daemon.socket`,
//! `daemon.socket_group`, `daemon.metrics`), the interfaces and their bandwidths (traffic
//! control is set up from them), timers and refresh settings (in every state block), the
//! label range and MPLS data plane, the whole `[gist]` section (its engine, sockets and
//! interception are built from it) — and a change to it is logged as a warning naming each
//! field, applied at the next restart. A file that does not load (any error `--check` would
//! report in the file, an unknown socket group, an unreadable key file, an LSP the engine
//! cannot take) changes nothing: its errors are logged with file, line and field and the
//! running configuration stays.

use crate::config::{ConfigError, NodeConfig};
use crate::rsvp::te::LspReq;
use std::path::Path;

/// What a re-read configuration changes.
#[derive(Debug)]
pub struct Reload {
    /// The configuration read.
    pub config: NodeConfig,
    /// A new log level.
    pub log: Option<tracing::Level>,
    /// A new receive hold-off.
    pub receive_hold: Option<std::time::Duration>,
    /// The integrity policy of each RSVP interface (by name), as read now.
    pub integrity: Vec<(String, pathwise_auth::Policy)>,
    /// LSPs to tear down: removed from the file, or changed.
    pub lsps_closed: Vec<String>,
    /// LSPs to open: added to the file, or changed.
    pub lsps_opened: Vec<LspReq>,
    /// Fields that changed but are bound at start, as dotted paths.
    pub needs_restart: Vec<String>,
}

impl Reload {
    /// Whether anything is applied live.
    pub fn applies_something(&self) -> bool {
        self.log.is_some()
            || self.receive_hold.is_some()
            || !self.integrity.is_empty()
            || !self.lsps_closed.is_empty()
            || !self.lsps_opened.is_empty()
    }
}

/// Read `path` again and work out what changes. `applied` is the configuration in force for
/// what changes live (the last one applied); `started` the one the daemon started with, for
/// what does not. Every error found when the file cannot be applied.
pub fn prepare(
    path: &Path,
    applied: &NodeConfig,
    started: &NodeConfig,
) -> Result<Reload, Vec<ConfigError>> {
    let config = NodeConfig::load_all(path)?;
    let mut errors = Vec::new();
    if let Err(e) = config.socket_group() {
        errors.push(e);
    }
    let mut integrity = Vec::new();
    if let Some(r) = &config.rsvp {
        for (n, i) in r.interfaces.iter().enumerate() {
            match config.integrity_policy(n, i) {
                Ok(p) => integrity.push((i.name.get_ref().clone(), p)),
                Err(e) => errors.push(e),
            }
        }
    }
    let old_lsps = lsps(applied);
    let mut lsps_opened = Vec::new();
    let mut lsps_closed: Vec<String> = old_lsps
        .iter()
        .filter(|o| !lsps(&config).iter().any(|n| n.name == o.name))
        .map(|o| o.name.clone())
        .collect();
    if let Some(r) = &config.rsvp {
        for (n, lsp) in r.lsps.iter().enumerate() {
            let req = lsp.request();
            if let Err(e) = req.spec() {
                errors.push(config.error_at(lsp.name.span(), &format!("rsvp.lsp[{n}]"), e));
                continue;
            }
            match old_lsps.iter().find(|o| o.name == req.name) {
                Some(old) if *old == req => {}
                Some(_) => {
                    lsps_closed.push(req.name.clone());
                    lsps_opened.push(req);
                }
                None => lsps_opened.push(req),
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let log = (config.daemon.log != applied.daemon.log)
        .then(|| config.daemon.log.parse().ok())
        .flatten();
    let hold = |c: &NodeConfig| c.daemon.receive_hold.get_ref().0;
    let receive_hold = (hold(&config) != hold(applied)).then(|| hold(&config));
    let needs_restart = changed_fields(started.text(), config.text())
        .into_iter()
        .filter(|f| !is_live(f))
        .collect();
    Ok(Reload {
        config,
        log,
        receive_hold,
        integrity,
        lsps_closed,
        lsps_opened,
        needs_restart,
    })
}

fn lsps(cfg: &NodeConfig) -> Vec<LspReq> {
    cfg.rsvp
        .iter()
        .flat_map(|r| &r.lsps)
        .map(|l| l.request())
        .collect()
}

/// Whether a changed field is applied live (see the module documentation).
fn is_live(field: &str) -> bool {
    field == "daemon.log"
        || field == "daemon.receive_hold"
        || field == "rsvp.lsp"
        || field.starts_with("rsvp.lsp[")
        || (field.starts_with("rsvp.interface[") && field.contains("].integrity"))
}

/// The dotted paths of the fields that differ between two TOML texts: the narrowest that
/// differs — a table or array entry present on one side only is named as a whole, an array of
/// tables whose length changed too.
pub fn changed_fields(old: &str, new: &str) -> Vec<String> {
    let parse = |t: &str| t.parse::<toml::Table>().unwrap_or_default();
    let mut out = Vec::new();
    diff_tables(&parse(old), &parse(new), "", &mut out);
    out
}

fn diff_tables(a: &toml::Table, b: &toml::Table, prefix: &str, out: &mut Vec<String>) {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match (a.get(k), b.get(k)) {
            (Some(x), Some(y)) => diff_values(x, y, &path, out),
            _ => out.push(path),
        }
    }
}

fn diff_values(a: &toml::Value, b: &toml::Value, path: &str, out: &mut Vec<String>) {
    use toml::Value::{Array, Table};
    match (a, b) {
        (Table(x), Table(y)) => diff_tables(x, y, path, out),
        (Array(x), Array(y))
            if x.len() == y.len() && x.iter().chain(y).all(toml::Value::is_table) =>
        {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff_values(p, q, &format!("{path}[{i}]"), out);
            }
        }
        _ if a != b => out.push(path.to_string()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    const BASE: &str = r#"[daemon]
socket = "/tmp/pw-reload.sock"
log = "info"

[rsvp]
refresh = "30s"
traffic_control = "memory"

[[rsvp.interface]]
name = "lo"
bandwidth = "10Mbit"
integrity = { mode = "require", key_file = "KEYS" }

[[rsvp.lsp]]
name = "a"
to = "10.9.0.1"
bandwidth = "1Mbit"

[[rsvp.lsp]]
name = "b"
to = "10.9.0.2"
"#;

    struct Files(std::path::PathBuf);

    impl Files {
        fn new(name: &str) -> Files {
            let dir =
                std::env::temp_dir().join(format!("pathwise-reload-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            Files(dir)
        }

        /// Write the key file and node.toml (with `text`); node.toml's path.
        fn write(&self, text: &str, key: &str) -> std::path::PathBuf {
            let keys = self.0.join("lo.keys");
            std::fs::write(&keys, format!("{key}\n")).unwrap();
            std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o600)).unwrap();
            let node = self.0.join("node.toml");
            std::fs::write(&node, text.replace("KEYS", keys.to_str().unwrap())).unwrap();
            node
        }
    }

    impl Drop for Files {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const KEY1: &str = "1 hmac-sha256 00112233445566778899aabbccddeeff";
    const KEY2: &str = "2 hmac-sha256 ffeeddccbbaa99887766554433221100";

    #[test]
    fn live_changes_are_applied_and_the_rest_named_for_a_restart() {
        let f = Files::new("live");
        let node = f.write(BASE, KEY1);
        let started = NodeConfig::load(&node).unwrap();
        // Unchanged: nothing but the integrity policies, read again.
        let r = prepare(&node, &started, &started).unwrap();
        assert!(r.log.is_none() && r.lsps_closed.is_empty() && r.lsps_opened.is_empty());
        assert!(r.needs_restart.is_empty(), "{:?}", r.needs_restart);
        assert_eq!(r.integrity.len(), 1);
        assert_eq!(r.integrity[0].0, "lo");
        assert!(format!("{:?}", r.integrity[0].1).contains("id: 1,"));
        // The log level, an LSP changed, one removed, one added, a new key; the refresh
        // period, the socket and a [gist] section need a restart.
        let text = BASE
            .replace(
                "log = \"info\"",
                "log = \"debug\"\nreceive_hold = \"250us\"",
            )
            .replace("bandwidth = \"1Mbit\"", "bandwidth = \"2Mbit\"")
            .replace(
                "name = \"b\"\nto = \"10.9.0.2\"",
                "name = \"c\"\nto = \"10.9.0.3\"",
            )
            .replace("refresh = \"30s\"", "refresh = \"10s\"")
            .replace("/tmp/pw-reload.sock", "/tmp/pw-other.sock")
            + "\n[gist]\ninterfaces = [\"lo\"]\n";
        let node = f.write(&text, KEY2);
        let r = prepare(&node, &started, &started).unwrap();
        assert_eq!(r.log, Some(tracing::Level::DEBUG));
        assert_eq!(r.receive_hold, Some(std::time::Duration::from_micros(250)));
        assert_eq!(r.lsps_closed, ["b", "a"]);
        let opened: Vec<&str> = r.lsps_opened.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(opened, ["a", "c"]);
        assert_eq!(
            r.needs_restart,
            ["daemon.socket", "gist", "rsvp.refresh"],
            "each field that is bound at start, and only those"
        );
        assert!(r.applies_something());
        // The new key (id 2) is what the policy holds now.
        assert!(format!("{:?}", r.integrity[0].1).contains("id: 2,"));
        // Against the configuration applied since, only the restart fields are left; they are
        // still named (not applied until a restart).
        let applied = r.config;
        let r = prepare(&node, &applied, &started).unwrap();
        assert!(r.receive_hold.is_none());
        assert!(r.log.is_none() && r.lsps_closed.is_empty() && r.lsps_opened.is_empty());
        assert_eq!(r.needs_restart.len(), 3);
    }

    #[test]
    fn an_invalid_file_is_refused_with_located_errors() {
        let f = Files::new("invalid");
        let node = f.write(BASE, KEY1);
        let started = NodeConfig::load(&node).unwrap();
        let bad = BASE
            .replace("refresh = \"30s\"", "refresh = \"soon\"")
            .replace(
                "log = \"info\"",
                "log = \"info\"\nsocket_group = \"pathwise-no-such-group\"",
            );
        let node = f.write(&bad, KEY1);
        let errs = prepare(&node, &started, &started).unwrap_err();
        assert_eq!(errs[0].field, "rsvp.refresh", "{errs:?}");
        assert_eq!(errs[0].line, 7);
        // Parsing passes, but the group does not exist and the key file is gone.
        let node = f.write(
            &BASE.replace(
                "log = \"info\"",
                "log = \"info\"\nsocket_group = \"pathwise-no-such-group\"",
            ),
            KEY1,
        );
        std::fs::remove_file(f.0.join("lo.keys")).unwrap();
        let errs = prepare(&node, &started, &started).unwrap_err();
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "daemon.socket_group",
                "rsvp.interface[0].integrity.key_file"
            ]
        );
        assert_eq!(errs[0].line, 4);
    }

    #[test]
    fn changed_fields_names_the_narrowest_difference() {
        let a = "x = 1\n[t]\ny = [1, 2]\n[[l]]\nn = 1\n[[l]]\nn = 2\n";
        assert!(changed_fields(a, a).is_empty());
        assert_eq!(
            changed_fields(a, &a.replace("y = [1, 2]", "y = [1]")),
            ["t.y"]
        );
        assert_eq!(changed_fields(a, &a.replace("n = 2", "n = 3")), ["l[1].n"]);
        assert_eq!(changed_fields(a, &a.replace("[[l]]\nn = 2\n", "")), ["l"]);
        assert_eq!(changed_fields(a, &format!("{a}[u]\nz = 1\n")), ["u"]);
        assert_eq!(
            changed_fields(a, &a.replace("x = 1", "x = 1\nw = 2")),
            ["w"]
        );
    }
}
