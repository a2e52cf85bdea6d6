//! `pathwise daemon` refuses a bad configuration before starting anything, naming the file, the
//! line and the field (no root needed: the check runs before any socket is opened).

use std::process::Command;

static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn daemon(config: &str) -> (bool, String) {
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("pw-daemon-config-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("node.toml");
    std::fs::write(&path, config).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pathwise"))
        .args(["daemon", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_missing_interface_is_named_with_file_line_and_field() {
    let (ok, err) = daemon(
        "[daemon]\nsocket = \"/tmp/pw-never.sock\"\n\n[rsvp]\n[[rsvp.interface]]\nname = \"pw-no-such-if0\"\nbandwidth = \"10Mbit\"\n",
    );
    assert!(!ok);
    assert!(
        err.contains("node.toml:6: rsvp.interface[0].name: no interface \"pw-no-such-if0\""),
        "{err}"
    );
}

#[test]
fn syntax_and_type_errors_are_located() {
    let (ok, err) = daemon("[rsvp]\nrefresh = 30\n");
    assert!(!ok);
    assert!(err.contains("node.toml:2:"), "{err}");
    let (ok, err) = daemon("[daemon]\nlog = \"chatty\"\n\n[rsvp]\n");
    assert!(!ok);
    assert!(err.contains("daemon.log"), "{err}");
    let (ok, err) = daemon("[daemon]\n");
    assert!(!ok);
    assert!(err.contains("no service enabled"), "{err}");
}
