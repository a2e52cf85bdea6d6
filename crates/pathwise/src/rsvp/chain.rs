//! The five-node RSVP chain of issue 3 in network namespaces — H1 – R1 – R2 – R3 – H2 with
//! forwarding on and a `pathwise daemon` in each — shared by the real-network tests and
//! `pathwise bench rsvp-chain`. Addresses: link n (1..4) is 10.91.n.0/24, the node west of it
//! is .1 on `e0`, the node east of it .2 on `w0`. R2 → R3 is a 10 Mbit/s link, the others
//! 1 Gbit/s; 80% of each is reservable.

use crate::netns::Lab;
use std::path::Path;

pub use crate::netns::chain::{H1, H2, NODES, R1, R2, R3, socket};
/// H1's address.
pub const SENDER: &str = "10.91.1.1";
/// H2's address.
pub const RECEIVER: &str = "10.91.4.2";

/// Build the chain and start a daemon (the `pathwise` binary at `bin`) on every node with
/// traffic control `tc` ("htb" or "memory") and refresh period `refresh` (e.g. "1s").
pub fn build(bin: &Path, tc: &str, refresh: &str) -> anyhow::Result<Lab> {
    build_with(
        bin,
        &Options {
            tc,
            refresh,
            ..Options::default()
        },
    )
}

/// How to build the chain.
#[derive(Clone, Copy, Debug)]
pub struct Options<'a> {
    /// Traffic control: "htb" or "memory".
    pub tc: &'a str,
    /// Refresh period R, e.g. "30s".
    pub refresh: &'a str,
    /// RFC 2747 integrity `require`d on every interface with this algorithm: one key (id 1) in
    /// a mode-600 key file shared by all nodes.
    pub integrity: Option<pathwise_auth::Algorithm>,
    /// RFC 3209 Hello on every interface with this interval, e.g. "100ms".
    pub hello: Option<&'a str>,
    /// RSVP-TE label ranges of their own: node `i` (0 = H1 … 4 = H2) allocates labels
    /// `block·(i+1) ..= block·(i+1) + block − 1`, so a label names the node that gave it
    /// (default: every node allocates from 16 up).
    pub label_block: Option<u32>,
    /// Refresh reduction (RFC 2961) on every node.
    pub refresh_reduction: bool,
    /// Further configuration for some nodes, `(node, TOML)`: written at the end of the
    /// `[rsvp]` keys, before the interfaces — keys of `[rsvp]` first, then tables such as
    /// `[[rsvp.lsp]]`.
    pub extra: &'a [(usize, &'a str)],
    /// RSVP shards per daemon (`[daemon] threads`; 1: unsharded; 0: not written, the
    /// daemon's default of one per core).
    pub threads: usize,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            tc: "memory",
            refresh: "30s",
            integrity: None,
            hello: None,
            label_block: None,
            refresh_reduction: false,
            extra: &[],
            threads: 0,
        }
    }
}

/// The key every interface of the chain shares when integrity is on (test material only).
const CHAIN_SECRET: &str = "7061746877697365206e65746e7320636861696e206b6579";

/// [`build`] with every option.
pub fn build_with(bin: &Path, o: &Options<'_>) -> anyhow::Result<Lab> {
    let mut lab = crate::netns::chain::topology(false)?;
    let integrity_section = match o.integrity {
        None => String::new(),
        Some(alg) => integrity_section(&lab, alg)?,
    };
    let mut configs: [Option<String>; 5] = Default::default();
    for (i, config) in configs.iter_mut().enumerate() {
        let mut cfg = format!("[daemon]\nsocket = {:?}\n", socket(&lab, i));
        if o.threads > 0 {
            cfg += &format!("threads = {}\n", o.threads);
        }
        cfg += "\n";
        *config = Some(cfg + &rsvp_section(o, i, &integrity_section));
    }
    crate::netns::chain::start_daemons(&mut lab, bin, &configs)?;
    Ok(lab)
}

/// A `[rsvp.interface.integrity]` table requiring RFC 2747 integrity with `alg`: one key (id
/// 1) in a mode-600 key file in `lab`'s directory, the same for every node.
pub fn integrity_section(lab: &Lab, alg: pathwise_auth::Algorithm) -> anyhow::Result<String> {
    use std::os::unix::fs::PermissionsExt;
    let keys = lab.path("chain.keys");
    std::fs::write(&keys, format!("1 {} {CHAIN_SECRET}\n", alg.name()))?;
    std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o600))?;
    Ok(format!(
        "\n[rsvp.interface.integrity]\nmode = \"require\"\nkey_file = {keys:?}\n"
    ))
}

/// Node `i`'s `[rsvp]` section of the chain with options `o` (the interfaces and their
/// bandwidth, and `integrity`, a `[rsvp.interface.integrity]` table to add to each interface
/// or empty): what [`build_with`] writes after `[daemon]`, for labs that add other services.
pub fn rsvp_section(o: &Options<'_>, i: usize, integrity: &str) -> String {
    let ifaces: &[&str] = match i {
        H1 => &["e0"],
        H2 => &["w0"],
        _ => &["w0", "e0"],
    };
    let hello = o
        .hello
        .map(|i| format!("hello = {{ interval = {i:?} }}\n"))
        .unwrap_or_default();
    let mut cfg = format!(
        "[rsvp]\nrefresh = {:?}\ntraffic_control = {:?}\n",
        o.refresh, o.tc
    );
    if o.refresh_reduction {
        cfg += "refresh_reduction = true\n";
    }
    if let Some(block) = o.label_block {
        let first = block * (i as u32 + 1);
        cfg += &format!("labels = [{first}, {}]\n", first + block - 1);
    }
    for (_, text) in o.extra.iter().filter(|(n, _)| *n == i) {
        cfg += text;
        cfg += "\n";
    }
    for ifname in ifaces {
        let bw = if i == R2 && *ifname == "e0" { 10 } else { 1000 };
        cfg += &format!(
            "\n[[rsvp.interface]]\nname = \"{ifname}\"\nbandwidth = \"{bw}Mbit\"\nreservable = \"{}Mbit\"\n",
            bw * 8 / 10
        );
        cfg += &hello;
        cfg += integrity;
    }
    cfg
}
