//! What the benchmarks share: the counting allocator (`main.rs` installs it, so every
//! benchmark can report bytes of state) and printing a report as a table or JSON. Each
//! service's benchmarks live in its own folder (`rsvp::bench`, `gist::bench`,
//! `oracle::bench`, `booster::bench`).

pub mod alloc;
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
