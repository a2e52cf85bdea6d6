//! Records the git commit the binary is built from (`pathwise --version`,
//! `pathwise::build_info()`): `git rev-parse --short HEAD`, or "unknown" outside a git checkout
//! or without git. Never fails the build.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PATHWISE_GIT_COMMIT");
    let commit = std::env::var("PATHWISE_GIT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=PATHWISE_GIT_COMMIT={commit}");
    // Rebuild when HEAD moves: .git/HEAD (a worktree has its own), the branch it points to, and
    // packed-refs where the branch may live. Only paths that exist: a missing one would rerun
    // this script on every build.
    let Some(dirs) = git(&["rev-parse", "--git-dir", "--git-common-dir"]) else {
        return;
    };
    let mut dirs = dirs.lines().map(PathBuf::from);
    let (Some(git_dir), Some(common)) = (dirs.next(), dirs.next()) else {
        return;
    };
    let head = git_dir.join("HEAD");
    let mut watch = vec![head.clone(), common.join("packed-refs")];
    if let Ok(text) = std::fs::read_to_string(&head)
        && let Some(reference) = text.trim().strip_prefix("ref: ")
    {
        watch.push(git_dir.join(reference));
        watch.push(common.join(reference));
    }
    for path in watch.iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}
