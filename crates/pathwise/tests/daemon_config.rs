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

/// A node with RSVP on loopback (exists everywhere; the checks below fail before it matters).
fn te_config(rsvp_extra: &str, lsp: &str) -> String {
    format!(
        "[daemon]\nsocket = \"/tmp/pw-never.sock\"\n\n[rsvp]\n{rsvp_extra}\n[[rsvp.interface]]\nname = \"lo\"\nbandwidth = \"10Mbit\"\n{lsp}"
    )
}

const LSP: &str = "\n[[rsvp.lsp]]\nname = \"t1\"\nto = \"10.91.4.2\"\n";

#[test]
fn rsvp_te_keys_are_checked_with_file_line_and_field() {
    // Line numbers: 5 is `rsvp_extra`; an LSP starts at 9 (blank), 10 [[rsvp.lsp]], 11 name,
    // 12 to, 13 the first key added after it.
    let cases: &[(&str, &str, &str)] = &[
        (
            "mpls = \"hardware\"",
            "",
            "node.toml:5: rsvp.mpls: unknown variant `hardware`, expected `memory` or `kernel`",
        ),
        (
            "labels = [10, 100]",
            "",
            "node.toml:5: rsvp.labels: [10, 100]: needs [first, last] with 16 ≤ first ≤ last",
        ),
        (
            "labels = [2000, 1000]",
            "",
            "node.toml:5: rsvp.labels: [2000, 1000]",
        ),
        (
            "labels = [16, 1048576]",
            "",
            "node.toml:5: rsvp.labels: [16, 1048576]",
        ),
        ("labels = [16]", "", "node.toml:5: rsvp.labels: [16]: needs"),
        (
            "explicit_null = \"yes\"",
            "",
            "node.toml:5: rsvp.explicit_null: invalid type",
        ),
        (
            "",
            &format!("{LSP}ero = [\"10.91.1.2\", \"~10.91.4.2/40\"]\n"),
            "node.toml:13: rsvp.lsp[0].ero[1]: bad hop \"~10.91.4.2/40\"",
        ),
        (
            "",
            &format!("{LSP}ero = [\"10.91.1.2\", \"~router3\"]\n"),
            "node.toml:13: rsvp.lsp[0].ero[1]: bad hop \"~router3\": ADDRESS (strict), ~ADDRESS (loose)",
        ),
        (
            "",
            &format!("{LSP}ero = [\"2001:db8::1\"]\n"),
            "node.toml:13: rsvp.lsp[0].ero[0]: \"2001:db8::1\" is not of the address family",
        ),
        (
            "",
            &format!("{LSP}from = \"2001:db8::1\"\n"),
            "node.toml:13: rsvp.lsp[0].from: 2001:db8::1 is not of the address family",
        ),
        (
            "",
            &format!("{LSP}setup_priority = 8\n"),
            "node.toml:13: rsvp.lsp[0].setup_priority: 8: priorities go from 0 (highest) to 7",
        ),
        (
            "",
            &format!("{LSP}setup_priority = 3\nhold_priority = 5\n"),
            "node.toml:14: rsvp.lsp[0].hold_priority: holding priority 5 is lower than setup priority 3",
        ),
        (
            "",
            &format!("{LSP}bandwidth = \"fast\"\n"),
            "node.toml:13: rsvp.lsp[0].bandwidth: \"fast\" does not start with a number",
        ),
        (
            "",
            "\n[[rsvp.lsp]]\nname = \"t1\"\nto = \"10.91.4\"\n",
            "node.toml:12: rsvp.lsp[0].to: invalid IP address syntax",
        ),
        (
            "",
            "\n[[rsvp.lsp]]\nname = \"t1\"\n",
            "node.toml:10: rsvp.lsp[0]: missing field `to`",
        ),
        (
            "",
            &format!("{LSP}colour = \"blue\"\n"),
            "node.toml:13: rsvp.lsp[0].colour: unknown field `colour`",
        ),
        (
            "",
            &format!("{LSP}{LSP}"),
            "node.toml:15: rsvp.lsp[1].name: LSP \"t1\" listed twice",
        ),
        (
            "",
            "\n[[rsvp.lsp]]\nname = \"\"\nto = \"10.91.4.2\"\n",
            "node.toml:11: rsvp.lsp[0].name: an LSP name has 1 to 255 bytes",
        ),
    ];
    for (extra, lsp, want) in cases {
        let (ok, err) = daemon(&te_config(extra, lsp));
        assert!(!ok, "{extra} {lsp}: started");
        assert!(err.contains(want), "{extra} {lsp}:\nwant {want}\ngot {err}");
    }
}

#[test]
fn kernel_mpls_without_kernel_support_refuses_to_start() {
    if std::path::Path::new("/proc/sys/net/mpls").exists() {
        println!("skipping: this kernel forwards MPLS, so the daemon would start");
        return;
    }
    let (ok, err) = daemon(&te_config("mpls = \"kernel\"", ""));
    assert!(!ok);
    assert!(
        err.contains("node.toml:5: rsvp.mpls: MPLS forwarding is not available"),
        "{err}"
    );
}
