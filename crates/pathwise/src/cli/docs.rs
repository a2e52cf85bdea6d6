//! `pathwise completions SHELL` and `pathwise man --out DIR`: shell completions and manual
//! pages generated from the command definitions (clap_complete, clap_mangen), so they never
//! drift from the commands. The pages in `contrib/man/` are this command's output; a test
//! fails when they are out of date (`cargo run -p pathwise -- man --out contrib/man`).

use clap::CommandFactory as _;
use std::path::{Path, PathBuf};

/// Arguments of `pathwise completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell.
    shell: clap_complete::Shell,
}

/// Arguments of `pathwise man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Directory to write the pages into (created if missing; earlier `pathwise*.1` pages in
    /// it are replaced).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// Print the completion script for `a.shell` on standard output.
pub fn completions(a: CompletionsArgs) -> anyhow::Result<()> {
    let mut cmd = super::Cli::command();
    clap_complete::generate(a.shell, &mut cmd, "pathwise", &mut std::io::stdout());
    Ok(())
}

/// Write the manual pages into `a.out`.
pub fn man(a: ManArgs) -> anyhow::Result<()> {
    let n = write_man_pages(&a.out)?;
    println!("{}: {n} manual pages", a.out.display());
    Ok(())
}

/// Write pathwise.1 and a page per subcommand (pathwise-oracle-serve.1, …) into `dir`,
/// removing pages of commands that no longer exist; how many were written.
pub fn write_man_pages(dir: &Path) -> anyhow::Result<usize> {
    use anyhow::Context as _;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("pathwise") && name.ends_with(".1") {
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
    }
    // The pages carry the package version only, not the commit: they change with the
    // commands, not with every commit.
    let cmd = super::Cli::command().version(env!("CARGO_PKG_VERSION"));
    clap_mangen::generate_to(cmd, dir).with_context(|| format!("writing {}", dir.display()))?;
    Ok(std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".1")))
        .count())
}
