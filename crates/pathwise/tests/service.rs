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

fn described(o: &Output) -> String {
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
        alto: None,
        metrics: None,
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
    assert!(!o.status.success(), "{}", described(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Permission denied") && err.contains("admits only its user"),
        "{}",
        described(&o)
    );
    // A mode widened by hand does not let them in: the peer's credentials are checked.
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = oracle_show_as_nobody(&socket, &["--clear-groups"]);
    assert!(!o.status.success(), "{}", described(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("permission denied: uid 65534 may not use this management socket"),
        "{}",
        described(&o)
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
    assert!(o.status.success(), "{}", described(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("routers"),
        "{}",
        described(&o)
    );
    // ... someone else is not, even with the mode widened.
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = oracle_show_as_nobody(&socket, &["--clear-groups"]);
    assert!(!o.status.success(), "{}", described(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("members of group users"),
        "{}",
        described(&o)
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
    assert!(!o.status.success(), "{}", described(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("CAP_NET_RAW for the raw RSVP sockets")
            && err.contains("CAP_NET_ADMIN for rsvp.traffic_control = \"htb\""),
        "{}",
        described(&o)
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

#[test]
fn gateway_runs_with_cap_net_admin_and_reloads_policies_on_sighup() {
    const TEST: &str = "gateway_runs_with_cap_net_admin_and_reloads_policies_on_sighup";
    if let Some(why) = pathwise::netns::unavailable(&["setpriv"]) {
        println!("skipping {TEST}: {why}");
        return;
    }
    if let Some(why) = cannot_switch_users() {
        println!("skipping {TEST}: {why}");
        return;
    }
    let mut lab = pathwise::netns::Lab::new(&["gw"]).unwrap();
    let run = lab.dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::set_permissions(&lab.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::chown(&run, Some(65534), Some(65534)).unwrap();
    let socket = run.join("booster.sock");
    let text = format!(
        "tun = \"pwsvc0\"\nlisten = \"127.0.0.1:7000\"\npeer = \"127.0.0.1:7001\"\n\
         socket = {socket:?}\n\
         psk = \"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\"\n\n\
         [[policy]]\nname = \"default\"\ndst = \"10.77.2.0/24\"\nchain = [\"lz4\", \"encrypt\"]\n"
    );
    let file = lab.dir.join("gw.toml");
    std::fs::write(&file, &text).unwrap();
    let gateway = |caps: &str| -> Vec<String> {
        let mut v = as_nobody_with(caps);
        v.extend([
            bin().into(),
            "booster".into(),
            "gateway".into(),
            "--config".into(),
        ]);
        v.push(file.to_str().unwrap().into());
        v
    };
    // Another user can open /dev/net/tun only where it has the udev default mode 0666.
    if mode(Path::new("/dev/net/tun")) & 0o006 == 0o006 {
        // Without CAP_NET_ADMIN the TUN device cannot be created, and the error says so.
        let o = lab.exec(0, &argv(&gateway(""))).unwrap();
        assert!(!o.status.success(), "{}", described(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr)
                .contains("creating a TUN device needs CAP_NET_ADMIN"),
            "{}",
            described(&o)
        );
        // With it (and nothing else), it runs.
        lab.spawn("gw", 0, &argv(&gateway("+net_admin"))).unwrap();
    } else {
        println!(
            "{TEST}: /dev/net/tun has mode {:04o} here, not 0666: the gateway runs as root, not \
             as uid {NOBODY} with CAP_NET_ADMIN",
            mode(Path::new("/dev/net/tun"))
        );
        let o = lab.exec(0, &argv(&gateway(""))).unwrap();
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("opening /dev/net/tun: "),
            "{}",
            described(&o)
        );
        let file = file.to_str().unwrap();
        lab.spawn("gw", 0, &[bin(), "booster", "gateway", "--config", file])
            .unwrap();
    }
    let show = wait_for(
        &socket,
        "booster gateway",
        "show",
        serde_json::Value::Null,
        |_| true,
    );
    let generation = show["generation"].as_u64().unwrap();
    assert_eq!(show["policies"].as_array().map(Vec::len), Some(1), "{show}");

    // SIGHUP: a policy added and a chain changed apply; the MTU needs a restart.
    let pid = lab.pid("gw").unwrap().to_string();
    let log = lab.log_path("gw");
    std::fs::write(
        &file,
        text.replace("[\"lz4\", \"encrypt\"]", "[\"encrypt\"]")
            .replace("peer = ", "mtu = 1300\npeer = ")
            + "\n[[policy]]\nname = \"bulk\"\ndst = \"10.77.3.0/24\"\nchain = [\"zstd\"]\n",
    )
    .unwrap();
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
    let show = wait_for(
        &socket,
        "booster gateway",
        "show",
        serde_json::Value::Null,
        |v| v["policies"].as_array().is_some_and(|p| p.len() == 2),
    );
    assert_eq!(show["generation"].as_u64(), Some(generation + 1), "{show}");
    assert_eq!(show["mtu"], 1400, "bound at start: {show}");
    let logged = wait_in_file(&log, "mtu changed, but needs a restart");
    assert!(logged.contains("policies reloaded: 2 policies"), "{logged}");
    // A file with errors: refused at its line, nothing changes.
    std::fs::write(
        &file,
        text.replace("[\"lz4\", \"encrypt\"]", "[\"encrypt\", \"lz4\"]"),
    )
    .unwrap();
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
    let logged = wait_in_file(&log, "configuration not reloaded");
    assert!(
        logged.contains(&format!("{}:10: policy[0].chain", file.display())),
        "{logged}"
    );
    let show = wait_for(
        &socket,
        "booster gateway",
        "show",
        serde_json::Value::Null,
        |_| true,
    );
    assert_eq!(show["policies"].as_array().map(Vec::len), Some(2), "{show}");
    // SIGTERM (systemctl stop): a clean exit that removes the management socket.
    lab.terminate("gw", std::time::Duration::from_secs(10))
        .unwrap();
    assert!(!socket.exists());
}

/// The units in contrib/systemd, by file name.
fn units() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/systemd");
    let mut v: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "service"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    v.sort();
    v
}

/// The value of `key=` in a unit (the last one, as systemd takes it).
fn unit_value<'a>(unit: &'a str, key: &str) -> Option<&'a str> {
    unit.lines()
        .rev()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
}

#[test]
fn systemd_units_match_the_binary_defaults_and_needs() {
    let units = units();
    let names: Vec<&str> = units.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "pathwise-booster-gateway.service",
            "pathwise-daemon.service",
            "pathwise-oracle.service"
        ]
    );
    let unit = |n: &str| &units.iter().find(|(name, _)| name == n).unwrap().1;
    for (name, u) in &units {
        assert_eq!(unit_value(u, "User"), Some("pathwise"), "{name}");
        assert_eq!(
            unit_value(u, "ConfigurationDirectory"),
            Some("pathwise"),
            "{name}"
        );
        assert_eq!(
            unit_value(u, "RuntimeDirectory"),
            Some("pathwise"),
            "{name}"
        );
        // Shared by the three units: stopping one must not remove the others' sockets.
        assert_eq!(
            unit_value(u, "RuntimeDirectoryPreserve"),
            Some("yes"),
            "{name}"
        );
        assert_eq!(unit_value(u, "NoNewPrivileges"), Some("yes"), "{name}");
        assert_eq!(
            unit_value(u, "ExecReload"),
            Some("/bin/kill -HUP $MAINPID"),
            "{name}"
        );
        // What it may keep is what it gets.
        assert_eq!(
            unit_value(u, "AmbientCapabilities"),
            unit_value(u, "CapabilityBoundingSet"),
            "{name}"
        );
    }
    // The default sockets are under /run/pathwise, the RuntimeDirectory.
    assert_eq!(
        pathwise::config::default_socket(),
        Path::new("/run/pathwise/pathwise.sock")
    );
    assert_eq!(
        pathwise::oracle::console::DEFAULT_SOCKET,
        "/run/pathwise/oracle.sock"
    );
    assert_eq!(
        pathwise::booster::config::DEFAULT_SOCKET,
        "/run/pathwise/booster.sock"
    );
    let daemon = unit("pathwise-daemon.service");
    assert_eq!(
        unit_value(daemon, "ExecStart"),
        Some("/usr/local/bin/pathwise daemon --config /etc/pathwise/node.toml")
    );
    let oracle = unit("pathwise-oracle.service");
    assert!(unit_value(oracle, "ExecStart").is_some_and(|s| s.contains(
        "oracle serve --config /etc/pathwise/oracle.toml --socket /run/pathwise/oracle.sock"
    )));
    assert_eq!(unit_value(oracle, "AmbientCapabilities"), Some(""));
    let gateway = unit("pathwise-booster-gateway.service");
    assert_eq!(
        unit_value(gateway, "ExecStart"),
        Some("/usr/local/bin/pathwise booster gateway --config /etc/pathwise/booster.toml")
    );
    assert_eq!(
        unit_value(gateway, "AmbientCapabilities"),
        Some("CAP_NET_ADMIN")
    );
    assert_eq!(unit_value(gateway, "DeviceAllow"), Some("/dev/net/tun rw"));
    // The daemon unit grants everything a node.toml using every feature needs, and no more.
    let everything = "[rsvp]\ntraffic_control = \"htb\"\nmpls = \"kernel\"\n\n\
                      [[rsvp.interface]]\nname = \"lo\"\nbandwidth = \"10Mbit\"\n\n\
                      [gist]\ninterfaces = [\"lo\"]\ninterception = \"netfilter\"\n";
    let cfg = pathwise::config::NodeConfig::parse("node.toml", everything).unwrap();
    let mut needed: Vec<&str> = pathwise::daemon::capability_needs(&cfg)
        .iter()
        .map(|n| n.cap.name())
        .collect();
    needed.sort_unstable();
    needed.dedup();
    let mut granted: Vec<&str> = unit_value(daemon, "AmbientCapabilities")
        .unwrap()
        .split_whitespace()
        .collect();
    granted.sort_unstable();
    assert_eq!(granted, needed);
    // tc, MPLS routes and the netfilter queue are netlink.
    assert!(
        unit_value(daemon, "RestrictAddressFamilies").is_some_and(|f| f.contains("AF_NETLINK"))
    );
    // /proc/sys/net/mpls is written with mpls = "kernel".
    assert_eq!(unit_value(daemon, "ProtectKernelTunables"), None);
}

#[test]
fn systemd_units_pass_systemd_analyze_verify() {
    const TEST: &str = "systemd_units_pass_systemd_analyze_verify";
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("skipping {TEST}: systemd-analyze is not installed");
        return;
    }
    // verify checks that ExecStart's binary exists: point the units at the one built here.
    let dir = Scratch::new();
    let mut files = Vec::new();
    for (name, text) in units() {
        assert!(text.contains("/usr/local/bin/pathwise "), "{name}");
        let path = dir.path(&name);
        std::fs::write(&path, text.replace("/usr/local/bin/pathwise", bin())).unwrap();
        files.push(path);
    }
    let o = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .args(&files)
        .output()
        .unwrap();
    // Unknown keys and unparsable values are only warnings: any line about our units fails.
    let complaints: Vec<String> = String::from_utf8_lossy(&o.stderr)
        .lines()
        .chain(String::from_utf8_lossy(&o.stdout).lines())
        .filter(|l| l.contains("pathwise"))
        .map(str::to_string)
        .collect();
    assert!(
        o.status.success() && complaints.is_empty(),
        "{}\n{complaints:#?}",
        described(&o)
    );
}

/// `pathwise gist listen` on `socket` as uid 65534 with `setpriv_groups`, while `ipc` is served
/// (polled on an engine of its own) until the command ends.
fn gist_listen_as_nobody(
    ipc: &mut pathwise_gist::ipc::IpcServer,
    socket: &Path,
    setpriv_groups: &[&str],
) -> Output {
    let mut engine = pathwise_gist::GistEngine::on_one_link(
        pathwise_gist::Config::default(),
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
    );
    let child = Command::new("setpriv")
        .args(["--reuid", NOBODY, "--regid", NOBODY])
        .args(setpriv_groups)
        .arg(bin())
        .args(["gist", "listen", "--nslpid", "4242", "--duration", "300ms"])
        .arg("--ipc-socket")
        .arg(socket)
        .env("RUST_BACKTRACE", "0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waiter = std::thread::spawn(move || child.wait_with_output().unwrap());
    let t0 = std::time::Instant::now();
    while !waiter.is_finished() {
        ipc.poll(&mut engine, pathwise_core::time::Instant::ZERO);
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(20),
            "gist listen hangs"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    ipc.poll(&mut engine, pathwise_core::time::Instant::ZERO);
    waiter.join().unwrap()
}

#[test]
fn gist_ipc_socket_is_private_and_refuses_other_users() {
    let dir = Scratch::new();
    let socket = dir.path("gist.sock");
    let mut ipc = pathwise::gist::service::ipc_server(&socket, None).expect("IPC socket");
    // Created 0600, whatever the umask; no private directory left behind.
    assert_eq!(mode(&socket), 0o600);
    assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 1);
    // The owner registers.
    let mut engine = pathwise_gist::GistEngine::on_one_link(
        pathwise_gist::Config::default(),
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
    );
    let s = socket.clone();
    let owner =
        std::thread::spawn(move || pathwise_gist::ipc::IpcGist::connect(&s, 4242).map(drop));
    while !owner.is_finished() {
        ipc.poll(&mut engine, pathwise_core::time::Instant::ZERO);
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    owner.join().unwrap().expect("the owner registers");
    assert_eq!((ipc.stats().registrations, ipc.stats().denied), (1, 0));
    if let Some(why) = cannot_switch_users() {
        println!(
            "skipping the other-user half of gist_ipc_socket_is_private_and_refuses_other_users: {why}"
        );
        return;
    }
    // Another user: the kernel refuses at connect (mode 0600).
    let o = gist_listen_as_nobody(&mut ipc, &socket, &["--clear-groups"]);
    assert!(!o.status.success(), "{}", described(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("Permission denied"),
        "{}",
        described(&o)
    );
    assert_eq!(ipc.stats().denied, 0, "the kernel refused, not us");
    // A mode widened by hand does not let them in: the IPC protocol's own refusal.
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = gist_listen_as_nobody(&mut ipc, &socket, &["--clear-groups"]);
    assert!(!o.status.success(), "{}", described(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(
            "refused by GIST: permission denied: this user may not use GIST's IPC socket"
        ),
        "{}",
        described(&o)
    );
    let st = ipc.stats();
    assert_eq!(
        (st.denied, st.registrations, st.accepted),
        (1, 1, 1),
        "{st:?}"
    );
}

#[test]
fn gist_ipc_socket_admits_its_group() {
    let dir = Scratch::new();
    let Ok(group) = mgmt::SocketGroup::lookup("users") else {
        println!("skipping gist_ipc_socket_admits_its_group: no group \"users\"");
        return;
    };
    let socket = dir.path("gist.sock");
    let mut ipc =
        pathwise::gist::service::ipc_server(&socket, Some(group.clone())).expect("IPC socket");
    assert_eq!(mode(&socket), 0o660);
    use std::os::unix::fs::MetadataExt as _;
    assert_eq!(std::fs::metadata(&socket).unwrap().gid(), group.gid);
    if let Some(why) = cannot_switch_users() {
        println!("skipping gist_ipc_socket_admits_its_group: {why}");
        return;
    }
    // A member (a supplementary group) registers and listens until its time is up...
    let gid = group.gid.to_string();
    let o = gist_listen_as_nobody(&mut ipc, &socket, &["--groups", &gid]);
    assert!(o.status.success(), "{}", described(&o));
    assert_eq!(ipc.stats().registrations, 1, "{:?}", ipc.stats());
    // ... someone else is refused, even with the mode widened.
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = gist_listen_as_nobody(&mut ipc, &socket, &["--clear-groups"]);
    assert!(!o.status.success(), "{}", described(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("permission denied"),
        "{}",
        described(&o)
    );
    assert_eq!(ipc.stats().denied, 1);
}
