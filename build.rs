//! Stamps the binary with the commit it was built from, for `--version`.

use std::process::Command;

fn main() {
    // `--no-optional-locks`: a plain `git status` refreshes the index and rewrites .git/index,
    // which is watched below, so a fresh clone would build twice.
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("--no-optional-locks")
            .args(args)
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    let commit = match git(&["rev-parse", "--short=10", "HEAD"]) {
        Some(hash)
            if git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty()) =>
        {
            format!("{hash}-modified")
        }
        Some(hash) => hash,
        None => "unknown commit".to_owned(),
    };
    println!("cargo:rustc-env=H2LOAD_RS_COMMIT={commit}");
    // Rebuild the stamp when the checked-out commit or the working tree's index changes.
    for path in [".git/HEAD", ".git/index"] {
        println!("cargo:rerun-if-changed={path}");
    }
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
        println!("cargo:rerun-if-changed=.git/{reference}");
    }
}
