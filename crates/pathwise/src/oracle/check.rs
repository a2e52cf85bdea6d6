//! `pathwise oracle serve --check FILE`: load and compile the database as `serve` would,
//! without binding a socket, and report what is wrong with file, line and field.
//!
//! A TOML database reports all its syntax errors, else its first value or key error (one
//! deserialization); the ranking is compiled on its own, then the database (routers, links,
//! networks), which stops at its first inconsistency. A seed-format file (Fig. 10) reports its
//! first malformed line; the database errors found after it name the router or network but
//! no line (0).

use crate::config::ConfigError;
use crate::config::check::{CheckReport, Document, toml_error};
use pathwise_oracle::{BuildError, OracleConfig, Ranking, TopologySnapshot};
use std::net::IpAddr;
use std::path::Path;

/// What `--check` reports, for `--help`.
pub const CHECK_HELP: &str = "\
--check reports the errors of a database, one per line as FILE:LINE: FIELD: MESSAGE (line 0: \
not located), and exits 1 if there is any:
  - a TOML database: every syntax error; else the first value of the wrong type or unknown \
key (parsing stops there);
  - a seed-format file: its first malformed line;
  - then the ranking, compiled on its own, and the database (routers, links, networks), \
which stops at its first inconsistency, located in a TOML file by the router or network it \
names.
The UDP port and the console socket are not checked (they need the running server).";

/// Check the database at `path`.
pub fn check(path: &Path) -> CheckReport {
    let file = path.display().to_string();
    let mut report = CheckReport {
        file: file.clone(),
        ..CheckReport::default()
    };
    let error = |line: usize, field: &str, message: String| ConfigError {
        file: file.clone(),
        line,
        field: field.into(),
        message,
    };
    let (cfg, text) = if path.extension().is_some_and(|e| e == "toml") {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                report.errors.push(error(0, "-", e.to_string()));
                return report;
            }
        };
        let (_, syntax) = toml::de::DeTable::parse_recoverable(&text);
        if !syntax.is_empty() {
            report.errors = syntax.iter().map(|e| toml_error(&file, &text, e)).collect();
            return report;
        }
        match toml::from_str::<OracleConfig>(&text) {
            Ok(cfg) => (cfg, Some(text)),
            Err(e) => {
                report.errors.push(toml_error(&file, &text, &e));
                return report;
            }
        }
    } else {
        match pathwise_oracle::config::seed::import_file(path) {
            Ok(cfg) => (cfg, None),
            Err(e) => {
                report.errors.push(ConfigError {
                    file: e.file,
                    line: e.line,
                    field: "-".into(),
                    message: format!("column {}: {}", e.column, e.message),
                });
                return report;
            }
        }
    };
    let doc = text.as_deref().map(Document::parse);
    let line = |field: &str| doc.as_ref().map_or(0, |d| d.line_of_field(field));
    let mut build = cfg.clone();
    if let Err(e) = Ranking::parse(&cfg.oracle.ranking) {
        report.errors.push(error(
            line("oracle.ranking"),
            "oracle.ranking",
            e.to_string(),
        ));
        // Compile the rest with a ranking that works, to find what else is wrong.
        build.oracle.ranking = "seed".into();
    }
    match TopologySnapshot::build(&build) {
        Ok(snap) => {
            report.summary = format!(
                "{} routers, {} prefixes, ranking {:?}",
                snap.router_count(),
                snap.prefix_count(),
                cfg.oracle.ranking
            );
        }
        Err(e) => {
            let field = build_error_field(&cfg, &e);
            report
                .errors
                .push(error(line(&field), &field, e.to_string()));
        }
    }
    report
        .skipped
        .push("the UDP port and the console socket: they need the running server".into());
    report
}

/// The field a database inconsistency is about, as a dotted path into the TOML file.
fn build_error_field(cfg: &OracleConfig, e: &BuildError) -> String {
    let router = |addr: &IpAddr, last: bool| {
        let mut found = cfg
            .routers
            .iter()
            .enumerate()
            .filter(|(_, r)| r.address == *addr);
        let i = if last {
            found.next_back()
        } else {
            found.next()
        };
        i.map_or_else(|| "router".into(), |(i, _)| format!("router[{i}]"))
    };
    // The last network of `kind` at router `at` (with `prefix`, if given).
    let network = |kind: &str, at: &IpAddr, prefix: Option<&ipnet::IpNet>| {
        let hit = |r: &IpAddr, p: &ipnet::IpNet| r == at && prefix.is_none_or(|q| q == p);
        match kind {
            "source" => cfg
                .source_networks
                .iter()
                .rposition(|n| hit(&n.router, &n.prefix))
                .map(|i| format!("source_networks[{i}]")),
            _ => cfg
                .external_networks
                .iter()
                .rposition(|n| hit(&n.router, &n.prefix))
                .map(|i| format!("external_networks[{i}]")),
        }
    };
    match e {
        BuildError::DuplicateRouter(a) => router(a, true),
        BuildError::TooManyRouters(_) => "oracle.max_routers".into(),
        BuildError::Router { router: a, .. } | BuildError::NoSuchNic { router: a, .. } => {
            router(a, false)
        }
        BuildError::DuplicateNicAddress { routers, .. } => router(&routers.1, false),
        BuildError::UnknownRouter { router: a, .. } => network("source", a, None)
            .or_else(|| network("external", a, None))
            .unwrap_or_else(|| "-".into()),
        BuildError::DuplicateNetwork {
            kind,
            prefix,
            router: a,
        } => network(kind, a, Some(prefix)).unwrap_or_else(|| "-".into()),
        BuildError::Ranking(_) => "oracle.ranking".into(),
        BuildError::TooManyExits(_) => "external_networks".into(),
        _ => "-".into(),
    }
}
