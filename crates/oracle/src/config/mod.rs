//! Loading and dumping the database: the TOML format (this crate's own, see
//! `examples/seed-network.toml` for a small one) and the seed's text files ([`seed`]).

pub mod seed;

use crate::TopologySnapshot;
use crate::model::OracleConfig;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why a configuration could not be loaded or written.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// A file could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
    /// The TOML does not describe a database.
    #[error("{path}: {message}")]
    Toml {
        /// The file (empty for a string).
        path: PathBuf,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A seed-format file is malformed.
    #[error(transparent)]
    Seed(#[from] seed::SeedError),
    /// The database could not be written as TOML.
    #[error("writing TOML: {0}")]
    Write(String),
}

/// Parse a TOML configuration.
pub fn from_toml_str(text: &str) -> Result<OracleConfig, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError::Toml {
        path: PathBuf::new(),
        message: e.to_string(),
    })
}

/// Write a configuration as TOML; [`from_toml_str`] reads back an equal one. Networks come
/// first, one per line, so that a million-route table stays a readable file.
pub fn to_toml_string(config: &OracleConfig) -> Result<String, ConfigError> {
    use std::fmt::Write as _;
    let rest = OracleConfig {
        oracle: config.oracle.clone(),
        routers: config.routers.clone(),
        source_networks: Vec::new(),
        external_networks: Vec::new(),
    };
    let body = toml::to_string(&rest).map_err(|e| ConfigError::Write(e.to_string()))?;
    let mut out = String::with_capacity(
        body.len() + 48 * (config.source_networks.len() + config.external_networks.len()) + 200,
    );
    out.push_str(
        "# pathwise oracle database\n\
         # source_networks: [prefix, router, nic]\n\
         # external_networks: [prefix, exit router, nic, AS number, AS distance]\n\n",
    );
    // Prefixes and addresses print without characters TOML would need to escape.
    if !config.source_networks.is_empty() {
        out.push_str("source_networks = [\n");
        for n in &config.source_networks {
            let _ = writeln!(out, "  [\"{}\", \"{}\", {}],", n.prefix, n.router, n.nic);
        }
        out.push_str("]\n");
    }
    if !config.external_networks.is_empty() {
        out.push_str("external_networks = [\n");
        for n in &config.external_networks {
            let _ = writeln!(
                out,
                "  [\"{}\", \"{}\", {}, {}, {}],",
                n.prefix, n.router, n.nic, n.as_number, n.as_distance
            );
        }
        out.push_str("]\n");
    }
    out.push('\n');
    out.push_str(&body);
    Ok(out)
}

/// The running database as TOML (the console's `dump`).
pub fn dump(snapshot: &TopologySnapshot) -> Result<String, ConfigError> {
    to_toml_string(&snapshot.to_config())
}

/// Load a configuration file: TOML when the name ends in `.toml`, otherwise the seed's main
/// configuration file (Fig. 10) with its router files.
pub fn load_file(path: &Path) -> Result<OracleConfig, ConfigError> {
    if path.extension().is_some_and(|e| e == "toml") {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Io {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        toml::from_str(&text).map_err(|e| ConfigError::Toml {
            path: path.to_owned(),
            message: e.to_string(),
        })
    } else {
        Ok(seed::import_file(path)?)
    }
}
