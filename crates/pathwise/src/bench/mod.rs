//! What the benchmarks share: the counting allocator (`main.rs` installs it, so every
//! benchmark can report bytes of state) and printing a report as a table or JSON. Each
//! service's benchmarks live in its own folder (`rsvp::bench`, `gist::bench`,
//! `oracle::bench`, `booster::bench`); each draws its figures with [`plot`] (`--plot FILE.svg`).

pub mod alloc;
pub mod plot;
pub mod soak;

/// Print a report as JSON or as its table.
pub fn print_report<T: serde::Serialize>(
    json: bool,
    report: &T,
    render: impl Fn(&T) -> String,
) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        print!("{}", render(report));
    }
    Ok(())
}

/// Before a long measurement: make sure the `--plot` file can be written, so a bad path fails
/// at once rather than after the run. A file that was not there is not left behind.
pub fn plot_target(path: Option<&std::path::Path>) -> anyhow::Result<()> {
    if let Some(path) = path {
        let existed = path.exists();
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| anyhow::anyhow!("--plot {}: {e}", path.display()))?;
        if !existed {
            std::fs::remove_file(path)?;
        }
    }
    Ok(())
}

/// Write the figures to `path` when `--plot` asked for it, and say so on standard error.
pub fn plot_to(path: Option<&std::path::Path>, figures: &[plot::Figure]) -> anyhow::Result<()> {
    if let Some(path) = path {
        plot::write_svg(path, figures)?;
        eprintln!("plot written to {}", path.display());
    }
    Ok(())
}
