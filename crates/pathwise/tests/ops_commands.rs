//! What operators run around the services: `--check` of the daemon's, the oracle's and the
//! gateway's configuration (every error with file, line and field, exit codes; no root, no
//! sockets), shell completions, manual pages kept in step with the commands, `--version`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A fresh directory for one test.
fn scratch() -> PathBuf {
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("pw-ops-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn pathwise<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_pathwise"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap()
}

/// Write `text` as `dir/name` and run `pathwise <command…> --check dir/name`; (exit code,
/// stdout, stderr).
fn check(command: &[&str], dir: &Path, name: &str, text: &str) -> (i32, String, String) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let mut args: Vec<std::ffi::OsString> = command.iter().map(Into::into).collect();
    args.push("--check".into());
    args.push(path.into());
    let out = pathwise(args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_reports(stderr: &str, dir: &Path, want: &[&str]) {
    let file = dir.display().to_string();
    for w in want {
        let line = format!("{file}/{w}");
        assert!(stderr.contains(&line), "missing {line:?} in\n{stderr}");
    }
}

/// One file with independent errors in `[daemon]`, an `[[rsvp.interface]]`, an `[[rsvp.lsp]]`
/// and `[gist]`: all are reported, each with its line and field.
const MANY_ERRORS: &str = r#"[daemon]
log = "chatty"

[rsvp]
traffic_control = "memory"

[[rsvp.interface]]
name = "lo"
bandwidth = "10Mbit"
reservable = "20Mbit"

[[rsvp.lsp]]
name = "t1"
to = "10.91.4.2"
setup_priority = 9

[gist]
interfaces = ["lo", "lo"]
refresh_period = "1ms"
"#;

#[test]
fn daemon_check_reports_every_independent_error_with_file_line_and_field() {
    let dir = scratch();
    let (code, stdout, stderr) = check(&["daemon"], &dir, "node.toml", MANY_ERRORS);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert_reports(
        &stderr,
        &dir,
        &[
            "node.toml:2: daemon.log: \"chatty\"",
            "node.toml:10: rsvp.interface[0].reservable: 20Mbit is more than",
            "node.toml:15: rsvp.lsp[0].setup_priority: 9: priorities go from 0",
            "node.toml:18: gist.interfaces: interface \"lo\" listed twice",
            "node.toml:19: gist.refresh_period: ",
        ],
    );
    assert!(stderr.contains("node.toml: 5 errors"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn daemon_check_locates_syntax_unknown_field_and_bad_value_errors() {
    let dir = scratch();
    // TOML syntax: every error the parser finds.
    let (code, _, stderr) = check(
        &["daemon"],
        &dir,
        "node.toml",
        "[rsvp]\nrefresh = \"5s\n[gist]\ninterfaces = [\"lo\"]\nrefresh_period = 3s\n",
    );
    assert_eq!(code, 1, "{stderr}");
    assert_reports(
        &stderr,
        &dir,
        &[
            "node.toml:2: ",
            "node.toml:5: gist.refresh_period: string values must be quoted",
        ],
    );
    // An unknown field in [rsvp] and a bad value in [gist]: one section does not hide the
    // other's error.
    let (code, _, stderr) = check(
        &["daemon"],
        &dir,
        "node.toml",
        "[rsvp]\nrefrsh = \"5s\"\n\n[gist]\ninterfaces = [\"lo\"]\ncookie_mode = \"strong\"\n",
    );
    assert_eq!(code, 1, "{stderr}");
    assert_reports(
        &stderr,
        &dir,
        &[
            "node.toml:2: rsvp.refrsh: unknown field `refrsh`",
            "node.toml:6: gist.cookie_mode: unknown variant `strong`",
        ],
    );
    // A bad value in an [[rsvp.lsp]] and an unknown section.
    let (code, _, stderr) = check(
        &["daemon"],
        &dir,
        "node.toml",
        "[rsvp]\n[[rsvp.lsp]]\nname = \"t1\"\nto = \"10.91.4\"\n\n[bgp]\nasn = 1\n",
    );
    assert_eq!(code, 1, "{stderr}");
    assert_reports(
        &stderr,
        &dir,
        &[
            "node.toml:4: rsvp.lsp[0].to: invalid IP address syntax",
            "node.toml:6: bgp: unknown section `bgp`",
        ],
    );
    // A file that cannot be read.
    let out = pathwise(["daemon", "--check", "/nonexistent/pw-node.toml"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("/nonexistent/pw-node.toml:0: -: No such file"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn daemon_check_looks_at_the_system_without_privileges() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch();
    let keys = dir.join("lo.keys");
    std::fs::write(&keys, "3 hmac-sha256 00112233445566778899aabbccddeeff\n").unwrap();
    std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o644)).unwrap();
    let text = format!(
        "[daemon]\nsocket = \"/nonexistent/pw.sock\"\n\n[rsvp]\ntraffic_control = \"memory\"\n\n\
         [[rsvp.interface]]\nname = \"lo\"\nbandwidth = \"10Mbit\"\n\
         integrity = {{ mode = \"require\", key_file = {keys:?} }}\n\n\
         [[rsvp.interface]]\nname = \"pw-no-such-if0\"\nbandwidth = \"10Mbit\"\n"
    );
    let (code, _, stderr) = check(&["daemon"], &dir, "node.toml", &text);
    assert_eq!(code, 1, "{stderr}");
    assert_reports(
        &stderr,
        &dir,
        &[
            "node.toml:10: rsvp.interface[0].integrity.key_file: ",
            "node.toml:13: rsvp.interface[1].name: no interface \"pw-no-such-if0\" on this system",
        ],
    );
    assert!(stderr.contains("0644"), "{stderr}");
    // Fixed: OK on one line of standard output; what was not checked on standard error; the
    // management socket's directory does not exist and nothing was bound.
    std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o600)).unwrap();
    let end = text
        .find("\n\n[[rsvp.interface]]\nname = \"pw-no-such-if0\"")
        .unwrap();
    let text = &text[..end + 1];
    let (code, stdout, stderr) = check(&["daemon"], &dir, "node.toml", text);
    assert_eq!(code, 0, "{text}\n{stderr}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.contains("node.toml: OK: RSVP on 1 interface(s), 0 LSP(s)"),
        "{stdout}"
    );
    assert!(stderr.contains("not checked: sockets"), "{stderr}");
    assert!(!Path::new("/nonexistent/pw.sock").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn check_and_config_are_exclusive_and_one_is_needed() {
    let out = pathwise(["daemon", "--config", "a.toml", "--check", "b.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let out = pathwise(["daemon"]);
    assert_eq!(out.status.code(), Some(2));
    let help = String::from_utf8(pathwise(["daemon", "--help"]).stdout).unwrap();
    assert!(help.contains("--check <FILE>"), "{help}");
    assert!(help.contains("TOML syntax errors: all of them"), "{help}");
}

const ORACLE: &str = r#"[oracle]
ranking = "fastest"

[[router]]
address = "10.0.0.1"
nic_count = 2

[[router]]
address = "10.0.0.2"
nic_count = 2
"#;

#[test]
fn oracle_check_locates_database_errors() {
    let dir = scratch();
    let seed = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../oracle/examples/seed-config.toml"
    );
    let out = pathwise(["oracle", "serve", "--check", seed]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("OK: 6 routers, 6 prefixes, ranking \"seed\""),
        "{stdout}"
    );
    // A bad ranking and an unknown router are both reported.
    let text = format!("source_networks = [\n  [\"10.1.0.0/16\", \"10.0.0.9\", 1],\n]\n\n{ORACLE}");
    let (code, _, stderr) = check(&["oracle", "serve"], &dir, "db.toml", &text);
    assert_eq!(code, 1, "{stderr}");
    assert_reports(
        &stderr,
        &dir,
        &[
            "db.toml:6: oracle.ranking: ",
            "db.toml:2: source_networks[0]: no router 10.0.0.9",
        ],
    );
    // A router defined twice; a value of the wrong type.
    let text = ORACLE
        .replace("\"fastest\"", "\"seed\"")
        .replace("10.0.0.2", "10.0.0.1");
    let (code, _, stderr) = check(&["oracle", "serve"], &dir, "db.toml", &text);
    assert_eq!(code, 1, "{stderr}");
    assert_reports(
        &stderr,
        &dir,
        &["db.toml:8: router[1]: router 10.0.0.1 is defined twice"],
    );
    let (code, _, stderr) = check(
        &["oracle", "serve"],
        &dir,
        "db.toml",
        &ORACLE.replace("nic_count = 2", "nic_count = \"two\""),
    );
    assert_eq!(code, 1, "{stderr}");
    assert_reports(
        &stderr,
        &dir,
        &["db.toml:6: router[0].nic_count: invalid type"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const GATEWAY: &str = r#"tun = "pwb0"
listen = "192.168.77.1:7000"
peer = "192.168.77.2:7000"
psk = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

[[policy]]
name = "default"
dst = "10.77.2.0/24"
chain = ["lz4", "encrypt"]

[[policy]]
name = "bulk"
dst = "10.77.3.0/24"
chain = ["lz4"]
"#;

#[test]
fn gateway_check_reports_every_setting_and_policy_error() {
    let dir = scratch();
    let (code, stdout, stderr) = check(&["booster", "gateway"], &dir, "gw.toml", GATEWAY);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout
            .contains("gw.toml: OK: tun pwb0, 192.168.77.1:7000 <-> 192.168.77.2:7000, 2 policies"),
        "{stdout}"
    );
    let bad = GATEWAY
        .replace("tun = \"pwb0\"", "tun = \"pwb0-much-too-long\"\nmtu = 100")
        .replace("[\"lz4\", \"encrypt\"]", "[\"encrypt\", \"lz4\"]")
        .replace("[\"lz4\"]", "[\"lz4\", \"zstd\"]");
    let (code, _, stderr) = check(&["booster", "gateway"], &dir, "gw.toml", &bad);
    assert_eq!(code, 1, "{stderr}");
    assert_reports(
        &stderr,
        &dir,
        &[
            "gw.toml:1: tun: interface names are 1 to 15 characters",
            "gw.toml:2: mtu: must be 576..=9000, got 100",
            "gw.toml:10: policy[0].chain: ",
            "gw.toml:15: policy[1].chain: ",
        ],
    );
    let (code, _, stderr) = check(
        &["booster", "gateway"],
        &dir,
        "gw.toml",
        &GATEWAY.replace("name = \"bulk\"", "name = \"bulk\"\ncolour = \"red\""),
    );
    assert_eq!(code, 1, "{stderr}");
    assert_reports(
        &stderr,
        &dir,
        &["gw.toml:13: policy[1].colour: unknown field"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn completions_generate_for_bash_zsh_and_fish() {
    for shell in ["bash", "zsh", "fish"] {
        let out = pathwise(["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        for word in ["daemon", "oracle", "booster", "completions", "--check"] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
    }
    assert_eq!(pathwise(["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn committed_man_pages_are_what_the_command_writes() {
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/man");
    let dir = scratch();
    let out = pathwise([
        std::ffi::OsStr::new("man"),
        "--out".as_ref(),
        dir.as_os_str(),
    ]);
    assert!(out.status.success());
    let pages = |d: &Path| {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read(&p).unwrap())
            })
            .collect();
        v.sort();
        v
    };
    let (want, have) = (pages(&dir), pages(&committed));
    let names = |v: &[(String, Vec<u8>)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&have),
        names(&want),
        "contrib/man is out of date: cargo run -p pathwise -- man --out contrib/man"
    );
    for ((name, a), (_, b)) in have.iter().zip(&want) {
        assert!(
            a == b,
            "contrib/man/{name} is out of date: cargo run -p pathwise -- man --out contrib/man"
        );
    }
    assert!(names(&have).contains(&"pathwise.1".to_string()));
    assert!(names(&have).contains(&"pathwise-daemon.1".to_string()));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn version_names_the_commit() {
    let out = pathwise(["--version"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let info = pathwise::build_info();
    assert_eq!(
        text.trim(),
        format!("pathwise {} (commit {})", info.version, info.commit)
    );
    assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
    let commit_like = info.commit.len() >= 7 && info.commit.bytes().all(|b| b.is_ascii_hexdigit());
    assert!(commit_like || info.commit == "unknown", "{text}");
}

/// `pathwise completions bash | head -c 100`: the reader goes away while pathwise still has
/// output (more than a pipe's 64 KiB buffer); pathwise ends as a Unix filter does, killed by
/// SIGPIPE, and prints no panic.
#[test]
fn a_closed_pipe_ends_a_command_quietly() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_pathwise"))
        .args(["completions", "bash"])
        .env("RUST_BACKTRACE", "0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut head = [0u8; 100];
    out.read_exact(&mut head).unwrap();
    drop(out);
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}: {stderr}");
}
