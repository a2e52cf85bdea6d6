//! What the network-namespace tests share: the binary under test, one five-namespace network at
//! a time, and skipping with a message when root or a tool is missing.

use pathwise::netns::{Lab, unavailable};
use serde_json::Value;
use std::path::Path;

/// The `pathwise` binary cargo built for these tests.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_pathwise")
}

/// One five-namespace network at a time: they measure timing and throughput, and would compete
/// for the CPU.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Hold while a test's network exists.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether `test` must be skipped (not root, no namespaces, or one of `tools` missing); says why.
pub fn skip(test: &str, tools: &[&str]) -> bool {
    match unavailable(tools) {
        Some(why) => {
            println!("skipping {test}: {why}");
            true
        }
        None => false,
    }
}

/// `pathwise SERVICE --json --socket SOCKET ARGS…` run in node `i` of `lab` (a daemon's
/// management socket), its JSON output.
pub fn json_cli(
    lab: &Lab,
    i: usize,
    service: &str,
    socket: &Path,
    args: &[&str],
) -> anyhow::Result<Value> {
    let mut argv = vec![
        bin(),
        service,
        "--json",
        "--socket",
        socket.to_str().unwrap_or_default(),
    ];
    argv.extend_from_slice(args);
    let out = lab.exec_ok(i, &argv)?;
    Ok(serde_json::from_str(&out)?)
}

/// Start tshark (as process `tag` of `lab`) capturing what matches the capture filter `filter`
/// on `interfaces` of node `i` into `file` in the lab directory, and wait until it captures (a
/// loaded machine takes seconds to start it; a fixed sleep lost whole captures); the path of
/// the capture. The capture filter applies to the interface named before it, so it is repeated
/// for each.
pub fn capture(
    lab: &mut Lab,
    tag: &str,
    i: usize,
    interfaces: &[&str],
    filter: &str,
    file: &str,
) -> anyhow::Result<std::path::PathBuf> {
    let pcap = lab.path(file);
    let pcap_s = pcap.to_str().unwrap_or_default().to_string();
    let mut argv = vec!["tshark", "-n", "-q"];
    for dev in interfaces {
        argv.extend_from_slice(&["-i", dev, "-f", filter]);
    }
    argv.extend_from_slice(&["-w", &pcap_s]);
    lab.spawn(tag, i, &argv)?;
    pathwise::netns::wait_for(
        std::time::Duration::from_secs(30),
        "tshark to capture",
        || lab.log(tag).contains("Capturing on").then_some(()),
    )?;
    std::thread::sleep(std::time::Duration::from_millis(300));
    Ok(pcap)
}

/// [`capture`] of RSVP (IP protocol 46).
pub fn capture_rsvp(
    lab: &mut Lab,
    tag: &str,
    i: usize,
    interfaces: &[&str],
    file: &str,
) -> anyhow::Result<std::path::PathBuf> {
    capture(lab, tag, i, interfaces, "ip proto 46", file)
}

/// tshark (run in node `i`) finds no malformed packet and raises no expert error in `pcap`.
pub fn assert_tshark_finds_nothing_malformed(
    lab: &Lab,
    i: usize,
    pcap: &str,
) -> anyhow::Result<()> {
    let filter = "_ws.malformed || _ws.expert.severity >= error";
    let malformed = lab.exec_ok(i, &["tshark", "-r", pcap, "-Y", filter])?;
    assert!(malformed.trim().is_empty(), "tshark complains: {malformed}");
    Ok(())
}

/// The RSVP message types (`rsvp.msg`) tshark decodes in `pcap` (run in node `i`) from packets
/// matching the display filter `filter`.
pub fn rsvp_types(
    lab: &Lab,
    i: usize,
    pcap: &str,
    filter: &str,
) -> anyhow::Result<std::collections::BTreeSet<String>> {
    let decoded = lab.exec_ok(
        i,
        &[
            "tshark", "-r", pcap, "-Y", filter, "-T", "fields", "-e", "rsvp.msg",
        ],
    )?;
    Ok(decoded
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}
