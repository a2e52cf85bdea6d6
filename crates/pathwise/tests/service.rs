//! Running pathwise as a service (contrib/systemd, README "Running pathwise as a service"):
//! management sockets that refuse other users, SIGHUP reloads, the services under an
//! unprivileged uid with only their capabilities, and the systemd units.
//!
//! The tests that switch users need root and `setpriv` (util-linux); they skip with a message
//! otherwise.

use pathwise::mgmt;
use pathwise::oracle::server::UdpOptions;
use pathwise::oracle::{OracleServer, ServeOptions};
use pathwise_oracle::config;
use pathwise_oracle::generate::{SyntheticSpec, synthetic};
use serde_json::json;
use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The unprivileged user the tests switch to (`nobody` on Debian).
const NOBODY: &str = "65534";

static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A fresh directory for one test, removed at the end; traversable by every user (the
/// sockets in it are what is being tested).
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("pw-service-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        Scratch(dir)
    }

    fn path(&self, f: &str) -> PathBuf {
        self.0.join(f)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_pathwise")
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Why a test that switches users cannot run here, if it cannot.
fn cannot_switch_users() -> Option<String> {
    if !is_root() {
        return Some("not root (switching to another uid needs it)".into());
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        return Some("setpriv (util-linux) is not installed".into());
    }
    // The binary must be reachable by the other user.
    let reachable = Command::new("setpriv")
        .args([
            "--reuid",
            NOBODY,
            "--regid",
            NOBODY,
            "--clear-groups",
            bin(),
            "--version",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !reachable {
        return Some(format!("uid {NOBODY} cannot run {}", bin()));
    }
    None
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `pathwise oracle show --socket SOCKET` as uid 65534 with `setpriv_groups` (setpriv's group
/// arguments).
fn oracle_show_as_nobody(socket: &Path, setpriv_groups: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid", NOBODY, "--regid", NOBODY])
        .args(setpriv_groups)
        .arg(bin())
        .args(["oracle", "show", "--socket"])
        .arg(socket)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap()
}

fn oracle(dir: &Scratch, group: Option<mgmt::SocketGroup>) -> OracleServer {
    let path = dir.path("oracle.toml");
    let cfg = synthetic(&SyntheticSpec::new(6, 50, 2));
    std::fs::write(&path, config::to_toml_string(&cfg).unwrap()).unwrap();
    OracleServer::start(&ServeOptions {
        config: path,
        udp: UdpOptions {
            address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            workers: 1,
            batch: 8,
            ..UdpOptions::default()
        },
        socket: dir.path("oracle.sock"),
        socket_group: group,
    })
    .expect("oracle starts")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn management_socket_is_private_and_refuses_other_users() {
    let dir = Scratch::new();
    let server = oracle(&dir, None);
    let socket = dir.path("oracle.sock");
    // Created 0600 (no other user can connect), and no private directory is left behind.
    assert_eq!(mode(&socket), 0o600);
    let left: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "only the database and the socket: {left:?}");
    // The owner gets answers.
    let v = mgmt::request(&socket, "oracle server", "show", json!({"what": "summary"})).unwrap();
    assert!(v.get("routers").is_some(), "{v}");
    if let Some(why) = cannot_switch_users() {
        println!(
            "skipping the other-user half of management_socket_is_private_and_refuses_other_users: {why}"
        );
        return;
    }
    // Another user: the kernel refuses at connect (mode 0600); the client says why.
    let o = oracle_show_as_nobody(&socket, &["--clear-groups"]);
    assert!(!o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Permission denied") && err.contains("admits only its user"),
        "{}",
        text(&o)
    );
    // A mode widened by hand does not let them in: the peer's credentials are checked.
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = oracle_show_as_nobody(&socket, &["--clear-groups"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("permission denied: uid 65534 may not use this management socket"),
        "{}",
        text(&o)
    );
    assert_eq!(server.mgmt_refused(), 1);
    // The owner still gets answers.
    assert!(mgmt::request(&socket, "oracle server", "show", json!({"what": "summary"})).is_ok());
}

#[test]
fn management_socket_admits_its_group() {
    let dir = Scratch::new();
    // "users" (gid 100) exists on Debian; any group will do, as long as nobody is not in it.
    let Ok(group) = mgmt::SocketGroup::lookup("users") else {
        println!("skipping management_socket_admits_its_group: no group \"users\"");
        return;
    };
    let server = oracle(&dir, Some(group.clone()));
    let socket = dir.path("oracle.sock");
    assert_eq!(mode(&socket), 0o660);
    use std::os::unix::fs::MetadataExt as _;
    assert_eq!(std::fs::metadata(&socket).unwrap().gid(), group.gid);
    if let Some(why) = cannot_switch_users() {
        println!("skipping management_socket_admits_its_group: {why}");
        return;
    }
    // A member (a supplementary group) is admitted...
    let gid = group.gid.to_string();
    let o = oracle_show_as_nobody(&socket, &["--groups", &gid]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("routers"),
        "{}",
        text(&o)
    );
    // ... someone else is not, even with the mode widened.
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = oracle_show_as_nobody(&socket, &["--clear-groups"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("members of group users"),
        "{}",
        text(&o)
    );
    assert_eq!(server.mgmt_refused(), 1);
}

/// `pathwise <command…> --check FILE` with `text` as FILE: (exit code, stdout, stderr).
fn check(command: &[&str], file: &Path, text: &str) -> (i32, String, String) {
    std::fs::write(file, text).unwrap();
    let o = Command::new(bin())
        .args(command)
        .arg("--check")
        .arg(file)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn check_reports_an_unknown_socket_group_at_its_line() {
    let dir = Scratch::new();
    let node = dir.path("node.toml");
    let text = "[daemon]\nsocket = \"/run/pathwise/pathwise.sock\"\nsocket_group = \"GROUP\"\n\n\
                [rsvp]\ntraffic_control = \"memory\"\n\n[[rsvp.interface]]\nname = \"lo\"\n\
                bandwidth = \"10Mbit\"\n";
    let (code, _, stderr) = check(
        &["daemon"],
        &node,
        &text.replace("GROUP", "pathwise-no-such-group"),
    );
    assert_eq!(code, 1, "{stderr}");
    let want = format!(
        "{}:3: daemon.socket_group: no group \"pathwise-no-such-group\"",
        node.display()
    );
    assert!(stderr.contains(&want), "{stderr}");
    let (code, stdout, stderr) = check(&["daemon"], &node, &text.replace("GROUP", "root"));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("socket group root"), "{stdout}");

    let gw = dir.path("gw.toml");
    let text = "tun = \"pwb0\"\nlisten = \"192.168.77.1:7000\"\npeer = \"192.168.77.2:7000\"\n\
                socket_group = \"GROUP\"\n";
    let (code, _, stderr) = check(
        &["booster", "gateway"],
        &gw,
        &text.replace("GROUP", "pathwise-no-such-group"),
    );
    assert_eq!(code, 1, "{stderr}");
    let want = format!(
        "{}:4: socket_group: no group \"pathwise-no-such-group\"",
        gw.display()
    );
    assert!(stderr.contains(&want), "{stderr}");
    let (code, _, stderr) = check(&["booster", "gateway"], &gw, &text.replace("GROUP", "root"));
    assert_eq!(code, 0, "{stderr}");
}

/// A child process killed when dropped.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Send `child` a signal (`HUP`, `TERM`) with kill(1).
fn signal(child: &Child, sig: &str) {
    let status = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(child.0.id().to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill -{sig} {}", child.0.id());
}

/// Ask `socket` for `verb` until it answers with something `ok` accepts (10 s at most).
fn wait_for(
    socket: &Path,
    daemon: &str,
    verb: &str,
    args: serde_json::Value,
    ok: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let answer = mgmt::request(socket, daemon, verb, args.clone());
        match answer {
            Ok(v) if ok(&v) => return v,
            _ if std::time::Instant::now() > deadline => {
                panic!("{verb} on {}: {answer:?}", socket.display())
            }
            _ => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
}

/// Wait until `file` contains `what` (10 s at most); its text.
fn wait_in_file(file: &Path, what: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if text.contains(what) {
            return text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {what:?} in\n{text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn oracle_serve_reloads_on_sighup_and_keeps_serving_after_a_bad_file() {
    let dir = Scratch::new();
    let db = dir.path("oracle.toml");
    let socket = dir.path("oracle.sock");
    let log = dir.path("oracle.log");
    let write = |routers: usize| {
        let cfg = synthetic(&SyntheticSpec::new(routers, 50, 2));
        std::fs::write(&db, config::to_toml_string(&cfg).unwrap()).unwrap();
    };
    write(6);
    let child = Child(
        Command::new(bin())
            .args([
                "oracle",
                "serve",
                "--port",
                "0",
                "--address",
                "127.0.0.1",
                "--config",
            ])
            .arg(&db)
            .arg("--socket")
            .arg(&socket)
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let summary = json!({"what": "summary"});
    wait_for(&socket, "oracle server", "show", summary.clone(), |v| {
        v["routers"] == 6
    });
    write(9);
    signal(&child, "HUP");
    let v = wait_for(&socket, "oracle server", "show", summary.clone(), |v| {
        v["routers"] == 9
    });
    assert_eq!(v["swaps"], 1, "{v}");
    wait_in_file(&log, "SIGHUP: operation successful: reloaded");
    // A file that does not load: the running database stays, and the log says why.
    std::fs::write(&db, "[oracle]\nthreads = \"many\"\n").unwrap();
    signal(&child, "HUP");
    let text = wait_in_file(&log, "still serving the previous database");
    assert!(text.contains("reload: "), "{text}");
    let v = wait_for(&socket, "oracle server", "show", summary, |_| true);
    assert_eq!(
        (v["routers"].as_u64(), v["swaps"].as_u64()),
        (Some(9), Some(1)),
        "{v}"
    );
}

fn argv(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// What `setpriv` needs to run a command as uid 65534 with only `caps` (`+net_raw,…`).
fn as_nobody_with(caps: &str) -> Vec<String> {
    let mut v: Vec<String> = [
        "setpriv",
        "--reuid",
        NOBODY,
        "--regid",
        NOBODY,
        "--clear-groups",
    ]
    .map(String::from)
    .to_vec();
    if !caps.is_empty() {
        v.extend([
            "--inh-caps".into(),
            caps.into(),
            "--ambient-caps".into(),
            caps.into(),
        ]);
    }
    v
}

const NODE: &str = r#"[daemon]
socket = "RUN/pathwise.sock"
log = "info"

[rsvp]
refresh = "30s"
traffic_control = "htb"

[[rsvp.interface]]
name = "lo"
bandwidth = "10Mbit"
integrity = { mode = "accept", key_file = "RUN/lo.keys" }
"#;

#[test]
fn daemon_runs_unprivileged_with_its_capabilities_and_reloads_on_sighup() {
    const TEST: &str = "daemon_runs_unprivileged_with_its_capabilities_and_reloads_on_sighup";
    if let Some(why) = pathwise::netns::unavailable(&["tc", "setpriv"]) {
        println!("skipping {TEST}: {why}");
        return;
    }
    if let Some(why) = cannot_switch_users() {
        println!("skipping {TEST}: {why}");
        return;
    }
    let mut lab = pathwise::netns::Lab::new(&["node"]).unwrap();
    // What the service's user owns: its runtime directory (the socket) and its key file.
    let run = lab.dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::set_permissions(&lab.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::chown(&run, Some(65534), Some(65534)).unwrap();
    let keys = run.join("lo.keys");
    let write_keys = |line: &str| {
        std::fs::write(&keys, format!("{line}\n")).unwrap();
        std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::chown(&keys, Some(65534), Some(65534)).unwrap();
    };
    write_keys("1 hmac-sha256 00112233445566778899aabbccddeeff");
    let node = lab.dir.join("node.toml");
    let node_text = NODE.replace("RUN", run.to_str().unwrap());
    std::fs::write(&node, &node_text).unwrap();
    let node_arg = node.to_str().unwrap().to_string();
    let daemon = |caps: &str| -> Vec<String> {
        let mut v = as_nobody_with(caps);
        v.extend([
            bin().into(),
            "daemon".into(),
            "--config".into(),
            node_arg.clone(),
        ]);
        v
    };

    // Without capabilities: refused before anything is set up, naming each one and why.
    let o = lab.exec(0, &argv(&daemon(""))).unwrap();
    assert!(!o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("CAP_NET_RAW for the raw RSVP sockets")
            && err.contains("CAP_NET_ADMIN for rsvp.traffic_control = \"htb\""),
        "{}",
        text(&o)
    );
    let qdiscs = lab
        .exec_ok(0, &["tc", "qdisc", "show", "dev", "lo"])
        .unwrap();
    assert!(!qdiscs.contains("5057:"), "nothing set up: {qdiscs}");

    // With exactly CAP_NET_RAW and CAP_NET_ADMIN (ambient, so tc gets them too): it runs.
    lab.spawn("daemon", 0, &argv(&daemon("+net_raw,+net_admin")))
        .unwrap();
    let socket = run.join("pathwise.sock");
    let v = wait_for(
        &socket,
        "daemon",
        "rsvp.show.interfaces",
        serde_json::Value::Null,
        |v| v.as_array().is_some_and(|a| !a.is_empty()),
    );
    assert_eq!(v[0]["name"], "lo", "{v}");
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(&socket).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (65534, 0o600));
    let qdiscs = lab
        .exec_ok(0, &["tc", "qdisc", "show", "dev", "lo"])
        .unwrap();
    assert!(
        qdiscs.contains("htb 5057:"),
        "HTB set up through tc: {qdiscs}"
    );

    // SIGHUP: the log level and a new key apply live; the refresh period needs a restart.
    let pid = lab.pid("daemon").unwrap().to_string();
    let log = lab.log_path("daemon");
    write_keys("2 hmac-sha256 ffeeddccbbaa99887766554433221100");
    std::fs::write(
        &node,
        node_text
            .replace("log = \"info\"", "log = \"debug\"")
            .replace("refresh = \"30s\"", "refresh = \"10s\""),
    )
    .unwrap();
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
    let text = wait_in_file(&log, "SIGHUP: configuration reloaded");
    assert!(text.contains("SIGHUP: log level changed"), "{text}");
    assert!(
        text.contains("integrity policy and keys read again"),
        "{text}"
    );
    let restart = text
        .lines()
        .find(|l| l.contains("needs a restart"))
        .unwrap_or_else(|| panic!("no restart warning in\n{text}"));
    assert!(restart.contains("rsvp.refresh"), "{restart}");
    // An invalid file: refused with its located error, the running configuration stays.
    std::fs::write(
        &node,
        node_text.replace("refresh = \"30s\"", "refresh = \"soon\""),
    )
    .unwrap();
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
    let text = wait_in_file(&log, "configuration not reloaded");
    assert!(
        text.contains(&format!("{}:6: rsvp.refresh", node.display())),
        "{text}"
    );
    wait_for(
        &socket,
        "daemon",
        "rsvp.show.interfaces",
        serde_json::Value::Null,
        |v| v.as_array().is_some_and(|a| !a.is_empty()),
    );

    // SIGTERM: a clean stop removes the HTB qdisc (tc, with the ambient capability) and the
    // socket.
    lab.terminate("daemon", std::time::Duration::from_secs(10))
        .unwrap();
    let qdiscs = lab
        .exec_ok(0, &["tc", "qdisc", "show", "dev", "lo"])
        .unwrap();
    assert!(!qdiscs.contains("5057:"), "{qdiscs}");
    assert!(!socket.exists());
}
