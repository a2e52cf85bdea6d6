//! The five-node chain of the RSVP tests (H1 – R1 – R2 – R3 – H2, [`crate::rsvp::chain`]) for
//! GIST (issue 6), dual-stack: link n (1..4) is 10.91.n.0/24 and fd00:91:n::/64, the node west
//! of it is .1 / ::1 on `e0`, the node east of it .2 / ::2 on `w0`; the routers forward both
//! families. A `pathwise daemon` with a `[gist]` section runs on every node that
//! [`Options::gist`] selects; a router without one forwards GIST's Queries like any packet.

use crate::netns::Lab;
pub use crate::netns::chain::{H1, H2, NODES, R1, R2, R3, socket};
use std::net::IpAddr;
use std::path::Path;

/// H2's IPv4 address.
pub const H2_V4: &str = "10.91.4.2";
/// H2's IPv6 address.
pub const H2_V6: &str = "fd00:91:4::2";

/// How to build the chain.
#[derive(Clone, Debug)]
pub struct Options<'a> {
    /// Which nodes (by index) run a daemon with GIST.
    pub gist: [bool; 5],
    /// `refresh_period`, e.g. "30s".
    pub refresh: &'a str,
    /// `cookie_mode`: "hash" or "random".
    pub cookie_mode: &'a str,
    /// Lines appended to every node's `[gist]` section; `{node}` is replaced by the node's
    /// name and `{lab}` by the lab's scratch directory (with a trailing `/`).
    pub extra: String,
    /// Lines appended to one node's `[gist]` section (by index), after `extra`.
    pub node_extra: [&'a str; 5],
    /// The daemons' `[daemon] log` level ("debug" unless a benchmark wants the logging's own
    /// cost out of what it measures).
    pub log: &'a str,
    /// The daemons' `[daemon] receive_hold` (`None`: the daemon's default).
    pub receive_hold: Option<pathwise_core::units::TimeSpan>,
    /// Run C-mode over TLS too: certificates from a test CA made with the `openssl` command,
    /// `[gist.tls]` with `verify_peer = true` on every node.
    pub tls: bool,
    /// With `tls`: nodes whose certificate comes from another CA (peers must refuse them).
    pub untrusted: [bool; 5],
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            gist: [true; 5],
            refresh: "30s",
            cookie_mode: "hash",
            extra: String::new(),
            node_extra: [""; 5],
            log: "debug",
            receive_hold: None,
            tls: false,
            untrusted: [false; 5],
        }
    }
}

/// The node that owns `addr` on the chain, if any.
pub fn owner(addr: IpAddr) -> Option<usize> {
    let (link, host) = match addr {
        IpAddr::V4(a) => {
            let o = a.octets();
            if o[..2] != [10, 91] {
                return None;
            }
            (usize::from(o[2]), u16::from(o[3]))
        }
        IpAddr::V6(a) => {
            let s = a.segments();
            if s[..2] != [0xfd00, 0x91] {
                return None;
            }
            (usize::from(s[2]), s[7])
        }
    };
    match (link, host) {
        (1..=4, 1) => Some(link - 1),
        (1..=4, 2) => Some(link),
        _ => None,
    }
}

/// Build the chain and start the daemons (the `pathwise` binary at `bin`).
pub fn build(bin: &Path, o: &Options<'_>) -> anyhow::Result<Lab> {
    let mut lab = crate::netns::chain::topology(true)?;
    let mut configs: [Option<String>; 5] = Default::default();
    for (i, node) in NODES.iter().enumerate() {
        if !o.gist[i] {
            continue;
        }
        let ifaces = match i {
            H1 => r#"["e0"]"#,
            H2 => r#"["w0"]"#,
            _ => r#"["w0", "e0"]"#,
        };
        let mut cfg = format!(
            "[daemon]\nsocket = {:?}\nlog = {:?}\n\n[gist]\ninterfaces = {ifaces}\n\
             refresh_period = {:?}\ncookie_mode = {:?}\n{}",
            socket(&lab, i),
            o.log,
            o.refresh,
            o.cookie_mode,
            o.extra
                .replace("{node}", node)
                .replace("{lab}", &lab.path("").to_string_lossy())
        );
        if let Some(h) = o.receive_hold {
            // Into `[daemon]`, before the `[gist]` section begins.
            cfg = cfg.replacen(
                "\n\n[gist]",
                &format!("\nreceive_hold = \"{h}\"\n\n[gist]"),
                1,
            );
        }
        if !o.node_extra[i].is_empty() {
            cfg += o.node_extra[i];
            cfg.push('\n');
        }
        if o.tls {
            let dir = lab.path("tls");
            if i == 0 || !dir.join("ca.pem").exists() {
                make_certs(&dir, &o.untrusted)?;
            }
            cfg += &format!(
                "transports = [\"udp\", \"tcp\", \"tls\"]\n\n[gist.tls]\ncertificate = {:?}\n\
                 key = {:?}\nca = {:?}\nverify_peer = true\n",
                dir.join(format!("{node}.pem")),
                dir.join(format!("{node}.key")),
                dir.join("ca.pem"),
            );
        }
        configs[i] = Some(cfg);
    }
    crate::netns::chain::start_daemons(&mut lab, bin, &configs)?;
    Ok(lab)
}

/// Make a test CA in `dir` and a certificate and key per chain node (`<node>.pem`,
/// `<node>.key`), signed by it, or by a second CA nobody trusts for the nodes `untrusted`
/// marks. EC P-256, valid for 30 days, usable for TLS server and client authentication.
pub fn make_certs(dir: &Path, untrusted: &[bool; 5]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let run = |args: &[&str]| -> anyhow::Result<()> {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .map_err(|e| {
                anyhow::anyhow!("running openssl (needed for TLS test certificates): {e}")
            })?;
        anyhow::ensure!(
            out.status.success(),
            "openssl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    for ca in ["ca", "rogue-ca"] {
        let subj = format!("/CN=pathwise test {ca}");
        let (key, pem) = (format!("{ca}.key"), format!("{ca}.pem"));
        let mut a = vec!["req", "-x509"];
        a.extend(ec);
        a.extend(["-keyout", &key, "-out", &pem, "-days", "30", "-subj", &subj]);
        run(&a)?;
    }
    std::fs::write(
        dir.join("node.ext"),
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n\
         extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:gist-node\n",
    )?;
    for (i, node) in NODES.iter().enumerate() {
        let ca = if untrusted[i] { "rogue-ca" } else { "ca" };
        let (key, csr, pem) = (
            format!("{node}.key"),
            format!("{node}.csr"),
            format!("{node}.pem"),
        );
        let subj = format!("/CN={node}");
        let mut a = vec!["req"];
        a.extend(ec);
        a.extend(["-keyout", &key, "-out", &csr, "-subj", &subj]);
        run(&a)?;
        let (ca_pem, ca_key) = (format!("{ca}.pem"), format!("{ca}.key"));
        run(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_pem,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-out",
            &pem,
            "-days",
            "30",
            "-extfile",
            "node.ext",
        ])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_name_their_nodes() {
        for (a, n) in [
            ("10.91.1.1", Some(H1)),
            ("10.91.1.2", Some(R1)),
            ("10.91.2.1", Some(R1)),
            ("10.91.4.2", Some(H2)),
            ("fd00:91:3::2", Some(R3)),
            ("fd00:91:3::1", Some(R2)),
            ("10.91.5.1", None),
            ("10.92.1.1", None),
            ("fd00:92:1::1", None),
        ] {
            assert_eq!(owner(a.parse().unwrap()), n, "{a}");
        }
    }
}
