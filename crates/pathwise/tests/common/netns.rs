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
