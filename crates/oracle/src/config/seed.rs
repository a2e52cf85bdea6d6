//! Importer for the seed's own configuration files (§4.6, Fig. 10 and Fig. 11).
//!
//! The main file has one directive per line:
//!
//! ```text
//! configdir DIR                          directory of the router files
//! routers N                              most routers (max_routers)
//! threads N                              worker threads
//! router ADDRESS NICS                    a router and its number of NICs
//! snetwork PREFIX ROUTER NIC             a source network attached to ROUTER
//! enetwork PREFIX ROUTER NIC ASN ASDIST  an external network reached through exit ROUTER
//! iroutes impl|expl                      computed or explicit routes (the CLI's -iroutes)
//! ```
//!
//! A router's file is `DIR/ADDRESS` (or `DIR/ADDRESS.conf`):
//!
//! ```text
//! nic INDEX LOCAL PEER UP|DOWN                       a point-to-point interface
//! link NIC LATENCY BANDWIDTH CONGESTION WEIGHT       the link leaving through NIC
//! route NIC ROUTER                                   explicit route to ROUTER through NIC
//! state UP|DOWN                                      the router's state (default UP)
//! ```
//!
//! Field meanings the seed's text leaves open are read this way (docs/proxidor.md,
//! "Configuration"): `router 10.0.0.1 15` gives 15 NICs (the networks of Fig. 10 hang off NIC
//! 14, the last one); in `enetwork … 14 2778 6` the AS number comes before the AS distance (2778
//! is an AS number, not a path length); in `link 0 35 100 0 1` the fields are latency (ms),
//! bandwidth (Mbit/s), congestion and weight (the §5.2 weights are 1 and 2; the seed keeps
//! congestion 0). A router without a file stays unconnected and down (§4.6). A relative
//! `configdir` is taken from the main file's directory. `#` starts a comment.

use crate::model::{
    ExternalNetwork, LinkConfig, NicConfig, OracleConfig, RouteConfig, RouteMode, RouterConfig,
    SourceNetwork, State,
};
use ipnet::IpNet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use thiserror::Error;

/// A malformed seed-format file, with the position of the offending token.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct SeedError {
    /// The file (or `<main>` / the router address for in-memory input).
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column of the token.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

/// Import the main file at `path` and the router files its `configdir` names.
pub fn import_file(path: &Path) -> Result<OracleConfig, SeedError> {
    let text = std::fs::read_to_string(path).map_err(|e| SeedError {
        file: path.display().to_string(),
        line: 0,
        column: 0,
        message: e.to_string(),
    })?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut dir: Option<PathBuf> = None;
    import_with(&text, &path.display().to_string(), |configdir, router| {
        let d = dir.get_or_insert_with(|| base.join(configdir));
        let candidates = [d.join(router.to_string()), d.join(format!("{router}.conf"))];
        candidates.iter().find_map(|p| {
            std::fs::read_to_string(p)
                .ok()
                .map(|t| (p.display().to_string(), t))
        })
    })
}

/// Import from text: `main` is the main file; `router_file(configdir, address)` returns a
/// router's file name and contents, or `None` when it has none.
pub fn import_with(
    main: &str,
    main_name: &str,
    mut router_file: impl FnMut(&str, IpAddr) -> Option<(String, String)>,
) -> Result<OracleConfig, SeedError> {
    let mut cfg = OracleConfig::default();
    cfg.oracle.routing = RouteMode::Explicit;
    let mut configdir = String::from(".");
    for (line_no, line) in main.lines().enumerate() {
        let mut l = Line::new(main_name, line_no + 1, line);
        let Some(word) = l.word() else { continue };
        match word {
            "configdir" => configdir = l.rest("a directory")?.to_owned(),
            "routers" => cfg.oracle.max_routers = l.parse("a router count")?,
            "threads" => cfg.oracle.threads = l.parse("a thread count")?,
            "iroutes" => {
                cfg.oracle.routing = match l.next("impl or expl")? {
                    (_, "impl") => RouteMode::Computed,
                    (_, "expl") => RouteMode::Explicit,
                    (col, other) => {
                        return Err(l.err(col, format!("`{other}` is not impl or expl")));
                    }
                }
            }
            "router" => cfg.routers.push(RouterConfig {
                address: l.parse("a router address")?,
                nic_count: l.parse("a NIC count")?,
                state: State::Down,
                nics: Vec::new(),
                routes: Vec::new(),
            }),
            "snetwork" => cfg.source_networks.push(SourceNetwork {
                prefix: l.parse::<IpNet>("a prefix")?,
                router: l.parse("a router address")?,
                nic: l.parse("a NIC index")?,
            }),
            "enetwork" => cfg.external_networks.push(ExternalNetwork {
                prefix: l.parse::<IpNet>("a prefix")?,
                router: l.parse("a router address")?,
                nic: l.parse("a NIC index")?,
                as_number: l.parse("an AS number")?,
                as_distance: l.parse("an AS distance")?,
            }),
            other => return Err(l.err(1, format!("unknown directive `{other}`"))),
        }
        l.end()?;
    }
    for r in &mut cfg.routers {
        if let Some((name, text)) = router_file(&configdir, r.address) {
            parse_router_file(r, &name, &text)?;
        }
    }
    Ok(cfg)
}

fn parse_router_file(r: &mut RouterConfig, name: &str, text: &str) -> Result<(), SeedError> {
    r.state = State::Up;
    for (line_no, line) in text.lines().enumerate() {
        let mut l = Line::new(name, line_no + 1, line);
        let Some(word) = l.word() else { continue };
        match word {
            "nic" => {
                let index = l.parse("a NIC index")?;
                let local = l.parse("a local address")?;
                let peer = l.parse("a peer address")?;
                let state = l.state()?;
                r.nics.push(NicConfig {
                    index,
                    local,
                    peer,
                    state,
                    link: None,
                });
            }
            "link" => {
                let (col, index) = l.parse_at::<u8>("a NIC index")?;
                let link = LinkConfig {
                    latency: l.parse("a latency")?,
                    bandwidth: l.parse("a bandwidth")?,
                    congestion: l.parse("a congestion")?,
                    weight: l.parse("a weight")?,
                };
                let Some(nic) = r.nics.iter_mut().find(|n| n.index == index) else {
                    return Err(l.err(col, format!("link on NIC {index}, which has no `nic` line")));
                };
                nic.link = Some(link);
            }
            "route" => r.routes.push(RouteConfig {
                nic: l.parse("a NIC index")?,
                destination: l.parse("a router address")?,
            }),
            "state" => r.state = l.state()?,
            other => return Err(l.err(1, format!("unknown directive `{other}`"))),
        }
        l.end()?;
    }
    Ok(())
}

/// One line split into whitespace-separated tokens with their columns.
struct Line<'a> {
    file: &'a str,
    line: usize,
    text: &'a str,
    tokens: Vec<(usize, &'a str)>,
    pos: usize,
}

impl<'a> Line<'a> {
    fn new(file: &'a str, line: usize, text: &'a str) -> Self {
        let body = text.split('#').next().unwrap_or("");
        let mut tokens = Vec::new();
        let mut start = None;
        for (i, c) in body
            .char_indices()
            .chain(std::iter::once((body.len(), ' ')))
        {
            match (c.is_whitespace(), start) {
                (false, None) => start = Some(i),
                (true, Some(s)) => {
                    tokens.push((body[..s].chars().count() + 1, &body[s..i]));
                    start = None;
                }
                _ => {}
            }
        }
        Line {
            file,
            line,
            text: body,
            tokens,
            pos: 0,
        }
    }

    fn err(&self, column: usize, message: String) -> SeedError {
        SeedError {
            file: self.file.to_owned(),
            line: self.line,
            column,
            message,
        }
    }

    fn word(&mut self) -> Option<&'a str> {
        let t = self.tokens.get(self.pos)?;
        self.pos += 1;
        Some(t.1)
    }

    fn next(&mut self, what: &str) -> Result<(usize, &'a str), SeedError> {
        match self.tokens.get(self.pos) {
            Some(&t) => {
                self.pos += 1;
                Ok(t)
            }
            None => Err(self.err(self.text.chars().count() + 1, format!("missing {what}"))),
        }
    }

    fn parse_at<T: FromStr>(&mut self, what: &str) -> Result<(usize, T), SeedError> {
        let (col, tok) = self.next(what)?;
        tok.parse()
            .map(|v| (col, v))
            .map_err(|_| self.err(col, format!("`{tok}` is not {what}")))
    }

    fn parse<T: FromStr>(&mut self, what: &str) -> Result<T, SeedError> {
        self.parse_at(what).map(|(_, v)| v)
    }

    fn state(&mut self) -> Result<State, SeedError> {
        match self.next("UP or DOWN")? {
            (_, s) if s.eq_ignore_ascii_case("up") => Ok(State::Up),
            (_, s) if s.eq_ignore_ascii_case("down") => Ok(State::Down),
            (col, s) => Err(self.err(col, format!("`{s}` is not UP or DOWN"))),
        }
    }

    /// The rest of the line as one value (a directory may contain spaces).
    fn rest(&mut self, what: &str) -> Result<&'a str, SeedError> {
        let (col, _) = self.next(what)?;
        self.pos = self.tokens.len();
        let start = self
            .text
            .char_indices()
            .nth(col - 1)
            .map_or(self.text.len(), |(i, _)| i);
        Ok(self.text[start..].trim())
    }

    fn end(&self) -> Result<(), SeedError> {
        match self.tokens.get(self.pos) {
            None => Ok(()),
            Some(&(col, tok)) => Err(self.err(col, format!("unexpected `{tok}`"))),
        }
    }
}
