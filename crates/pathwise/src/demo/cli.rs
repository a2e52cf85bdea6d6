//! `pathwise demo`.

/// Arguments of `pathwise demo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Simulation seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Run the demo and print its report.
pub fn run(a: Args) -> anyhow::Result<()> {
    let report = crate::demo::run(a.seed)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", crate::demo::render(&report));
    }
    Ok(())
}
