//! RSVP-TE (RFC 3209) settings of `[rsvp]`: where label bindings go, the label range, the
//! egress label, and LSPs this node heads from the start.
//!
//! ```toml
//! [rsvp]
//! mpls = "memory"              # "memory": the in-memory LFIB only (default);
//!                              # "kernel": Linux MPLS forwarding (needs CONFIG_MPLS_ROUTING)
//! labels = [1000, 1999]        # labels this node allocates (default 16 ..= 1048575)
//! explicit_null = false        # as an egress, advertise explicit null instead of implicit null
//!
//! [[rsvp.lsp]]                 # an LSP opened at start (head end)
//! name = "to-h2"
//! to = "10.91.4.2"             # tunnel end point
//! from = "10.91.1.1"           # optional: default, the address of the interface towards `to`
//! ero = ["10.91.1.2", "~10.91.4.2"]   # optional explicit route: ADDR strict, ~ADDR loose, /LEN
//! bandwidth = "10Mbit"         # default 0
//! setup_priority = 7           # 0 (highest) ..= 7, default 7
//! hold_priority = 0            # 0 ..= 7, not numerically above setup_priority, default 0
//! record_route = true          # RECORD_ROUTE with label recording, default on
//! gmpls = { switching = 1 }    # optional: GMPLS (RFC 3473) with encoding/switching/gpid;
//!                              # `gmpls = {}` for a packet LSP on PSC-1 links
//! ```
//!
//! With `mpls = "kernel"` the daemon refuses to start when the kernel has no MPLS routing, turns
//! on MPLS input on every RSVP interface, and hands every label binding to the kernel; a change
//! the kernel refuses is logged and counted (`dataplane_errors`), never fatal.

use crate::config::{ConfigError, Source};
use crate::rsvp::te::{DEFAULT_HOLD_PRIORITY, DEFAULT_SETUP_PRIORITY, LspReq, parse_hop};
use pathwise_core::units::Bandwidth;
use serde::Deserialize;
use std::net::IpAddr;
use toml::Spanned;

/// Where label bindings go.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum MplsKind {
    /// The engine's in-memory LFIB only (what `show labels` lists).
    #[default]
    Memory,
    /// The Linux kernel's MPLS forwarding too (`pathwise_net::LinuxMpls`).
    Kernel,
}

/// `[[rsvp.lsp]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LspSection {
    /// Its name.
    pub name: Spanned<String>,
    /// The tunnel end point.
    pub to: Spanned<IpAddr>,
    /// The head end's address.
    pub from: Option<Spanned<IpAddr>>,
    /// Explicit route hops (`ADDR`, `~ADDR`, optional `/LEN`).
    #[serde(default)]
    pub ero: Vec<Spanned<String>>,
    /// Bandwidth to reserve.
    #[serde(default)]
    pub bandwidth: Option<Bandwidth>,
    /// Setup priority.
    pub setup_priority: Option<Spanned<u8>>,
    /// Holding priority.
    pub hold_priority: Option<Spanned<u8>>,
    /// Record the route (and labels).
    #[serde(default = "yes")]
    pub record_route: bool,
    /// The GMPLS flavour (RFC 3473): `gmpls = {}` for a packet LSP on PSC links, or with
    /// `encoding`, `switching`, `gpid`.
    pub gmpls: Option<crate::rsvp::te::GmplsReq>,
}

fn yes() -> bool {
    true
}

impl LspSection {
    /// The LSP as a management request.
    pub fn request(&self) -> LspReq {
        LspReq {
            name: self.name.get_ref().clone(),
            to: *self.to.get_ref(),
            from: self.from.as_ref().map(|f| *f.get_ref()),
            ero: self.ero.iter().map(|h| h.get_ref().clone()).collect(),
            bandwidth_bps: self.bandwidth.map_or(0, |b| b.0),
            setup_priority: self
                .setup_priority
                .as_ref()
                .map_or(DEFAULT_SETUP_PRIORITY, |p| *p.get_ref()),
            hold_priority: self
                .hold_priority
                .as_ref()
                .map_or(DEFAULT_HOLD_PRIORITY, |p| *p.get_ref()),
            record_route: self.record_route,
            gmpls: self.gmpls,
        }
    }

    /// Static checks (`field` is its dotted path).
    fn check(&self, cx: &Source<'_>, field: &str) -> Result<(), ConfigError> {
        let name = self.name.get_ref();
        if name.is_empty() || name.len() > 255 {
            return Err(cx.at(
                self.name.span(),
                &format!("{field}.name"),
                "an LSP name has 1 to 255 bytes".into(),
            ));
        }
        let to = *self.to.get_ref();
        if let Some(from) = &self.from
            && from.get_ref().is_ipv4() != to.is_ipv4()
        {
            return Err(cx.at(
                from.span(),
                &format!("{field}.from"),
                format!(
                    "{} is not of the address family of to = {to}",
                    from.get_ref()
                ),
            ));
        }
        for (n, h) in self.ero.iter().enumerate() {
            let f = format!("{field}.ero[{n}]");
            let hop = parse_hop(h.get_ref()).map_err(|e| cx.at(h.span(), &f, e))?;
            let v4 = matches!(
                hop.node,
                pathwise_rsvp::wire::te::AbstractNode::Ipv4Prefix { .. }
            );
            if v4 != to.is_ipv4() {
                return Err(cx.at(
                    h.span(),
                    &f,
                    format!(
                        "{:?} is not of the address family of to = {to}",
                        h.get_ref()
                    ),
                ));
            }
        }
        for (p, f) in [
            (&self.setup_priority, "setup_priority"),
            (&self.hold_priority, "hold_priority"),
        ] {
            if let Some(p) = p
                && *p.get_ref() > 7
            {
                return Err(cx.at(
                    p.span(),
                    &format!("{field}.{f}"),
                    format!("{}: priorities go from 0 (highest) to 7", p.get_ref()),
                ));
            }
        }
        let req = self.request();
        if req.hold_priority > req.setup_priority {
            let span = self
                .hold_priority
                .as_ref()
                .map_or_else(|| self.name.span(), Spanned::span);
            return Err(cx.at(
                span,
                &format!("{field}.hold_priority"),
                format!(
                    "holding priority {} is lower than setup priority {} (RFC 3209 §4.7.1: it \
                     must not be numerically greater)",
                    req.hold_priority, req.setup_priority
                ),
            ));
        }
        Ok(())
    }
}

/// Static checks of the TE keys of `[rsvp]`: the label range and the LSPs.
pub(crate) fn check(
    cx: &Source<'_>,
    labels: Option<&Spanned<Vec<u32>>>,
    lsps: &[LspSection],
    errs: &mut Vec<ConfigError>,
) {
    if let Some(l) = labels {
        use pathwise_core::mpls::{FIRST_UNRESERVED, MAX_LABEL};
        let ok = matches!(l.get_ref().as_slice(), &[first, last]
            if (FIRST_UNRESERVED..=MAX_LABEL).contains(&first)
                && (first..=MAX_LABEL).contains(&last));
        if !ok {
            errs.push(cx.at(
                l.span(),
                "rsvp.labels",
                format!(
                    "{:?}: needs [first, last] with {FIRST_UNRESERVED} ≤ first ≤ last ≤ {MAX_LABEL} \
                     (RFC 3032 reserves labels 0 to 15)",
                    l.get_ref()
                ),
            ));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for (n, lsp) in lsps.iter().enumerate() {
        let field = format!("rsvp.lsp[{n}]");
        if !seen.insert(lsp.name.get_ref().as_str()) {
            errs.push(cx.at(
                lsp.name.span(),
                &format!("{field}.name"),
                format!("LSP {:?} listed twice", lsp.name.get_ref()),
            ));
        }
        errs.extend(lsp.check(cx, &field).err());
    }
}
