//! The `pathwise` command.

use clap::Parser;

#[global_allocator]
static ALLOC: pathwise::bench::alloc::Counting = pathwise::bench::alloc::Counting;

fn main() -> anyhow::Result<()> {
    pathwise::cli::Cli::parse().run()
}
