//! `pathwise oracle import mrt FILE --router ADDR`: a router's MRT dump (RFC 6396: a
//! TABLE_DUMP_V2 RIB dump, BGP4MP updates, or both) applied to the running server as that exit
//! router's external networks. The command sends the file's path over the management socket;
//! the server reads it (like `reload`), derives the best route per prefix (shortest AS path over
//! the dump's peers, as for BMP) and applies them in one batch: queries keep being answered
//! from the old database meanwhile. `dump` then writes the result as a database file.

use pathwise_oracle::SharedSnapshot;
use pathwise_oracle::bgp::mrt::{MrtReport, import};
use pathwise_oracle::bgp::{BgpRib, ExitNic};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `import` arguments, as the command line sends them.
#[derive(Clone, Debug, PartialEq, clap::Subcommand, Serialize, Deserialize)]
#[serde(tag = "format", rename_all = "kebab-case")]
pub enum Import {
    /// An MRT file (RFC 6396: TABLE_DUMP_V2 RIB dump and/or BGP4MP updates, uncompressed)
    /// holding what the exit router ROUTER learned from its BGP peers: the best route per
    /// prefix (shortest AS path) becomes ROUTER's external network, AS distance = AS_PATH
    /// length. The server reads the file.
    Mrt {
        /// The MRT file.
        file: PathBuf,
        /// The exit router (it must be in the database).
        #[arg(long)]
        router: IpAddr,
    },
}

/// What an import did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImportReport {
    /// What happened.
    pub message: String,
    /// MRT records read.
    pub records: u64,
    /// TABLE_DUMP_V2 RIB entries taken.
    pub rib_entries: u64,
    /// BGP4MP UPDATEs taken.
    pub updates: u64,
    /// Records of other kinds, skipped.
    pub skipped: u64,
    /// Entries without an AS_PATH or a known peer.
    pub unusable: u64,
    /// External networks written (one per prefix).
    pub networks: usize,
    /// Generation of the database afterwards.
    pub generation: u64,
    /// Time to read, derive and apply, ms.
    pub build_ms: f64,
}

impl ImportReport {
    /// As text.
    pub fn render(&self) -> String {
        format!(
            "{}\n  {} records: {} RIB entries, {} updates, {} skipped, {} unusable; generation {}, {:.1} ms\n",
            self.message,
            self.records,
            self.rib_entries,
            self.updates,
            self.skipped,
            self.unusable,
            self.generation,
            self.build_ms
        )
    }
}

/// Run an import on the server side.
pub fn run(shared: &SharedSnapshot, what: &Import) -> Result<ImportReport, String> {
    let Import::Mrt { file, router } = what;
    let t = Instant::now();
    let snap = shared.load_full();
    let exit = snap
        .router(*router)
        .ok_or_else(|| format!("import mrt: no router {router} (`show routers` lists them)"))?;
    let nics: Vec<ExitNic> = exit
        .nics
        .iter()
        .map(|n| ExitNic {
            index: n.index,
            local: n.local,
            peer: n.peer,
        })
        .collect();
    let mut rib = BgpRib::new();
    let report: MrtReport = read(file, &mut rib, *router, &nics)?;
    let updates = rib.take_updates();
    let networks = updates.len();
    shared
        .update(&updates)
        .map_err(|e| format!("import mrt: {e}"))?;
    Ok(ImportReport {
        message: format!(
            "operation successful: {networks} external networks of router {router} from {}",
            file.display()
        ),
        records: report.records,
        rib_entries: report.rib_entries,
        updates: report.updates,
        skipped: report.skipped,
        unusable: report.unusable,
        networks,
        generation: shared.load().generation(),
        build_ms: t.elapsed().as_secs_f64() * 1e3,
    })
}

fn read(
    file: &Path,
    rib: &mut BgpRib,
    router: IpAddr,
    nics: &[ExitNic],
) -> Result<MrtReport, String> {
    let f =
        std::fs::File::open(file).map_err(|e| format!("import mrt: {}: {e}", file.display()))?;
    let mut input = std::io::BufReader::new(f);
    import(rib, router, nics, &mut input)
        .map_err(|e| format!("import mrt: {}: {e}", file.display()))
}
