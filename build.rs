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
    // Rebuild the stamp when the checked-out commit or the working tree's index changes. Git says
    // where those files are: in a linked worktree `.git` is a file, not a directory, and a watched
    // path that does not exist makes cargo rebuild the crate on every build.
    let mut watched = vec![
        "HEAD".to_owned(),
        "index".to_owned(),
        "packed-refs".to_owned(),
    ];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    // An edit to the sources that is not staged yet changes no git file, but makes the tree
    // "-modified".
    println!("cargo:rerun-if-changed=src");
    for file in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &file]) {
            if std::path::Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
}
