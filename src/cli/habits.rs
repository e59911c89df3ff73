//! Habits from other load tools: a flag that means something else here (oha's `-q`, wrk's and
//! curl's `-d`) or nothing (oha's `-z`, wrk2's `-R`) gets one line that says what to write
//! instead, as a usage error (exit 2). Each suggestion is made only where the command line
//! cannot mean anything else: an unknown flag, a "URL" that is a bare number, a `-d` FILE that
//! does not exist. (A URL without its scheme, ghz's `host:port`, is answered where URLs are
//! read, `plan::build` and `plan::target`, which show it without its credentials.)

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::cli::LoadArgs;
use crate::error::{quoted, QUOTE_LIMIT};
use crate::units::parse_positive_duration;
use crate::units::parse_si_number;
use crate::usage_bail;

/// Unknown short flags other tools use, what they mean there and the flag that means it here.
const FOREIGN_FLAGS: [(&str, &str, &str); 2] = [
    ("-z", "oha's and hey's -z (run this long)", "-D"),
    ("-R", "wrk2's -R (requests per second)", "--rate"),
];

/// The suggestion for clap's "unexpected argument `flag`", read in the command line `args`:
/// `-z 5s` is `-D 5s`, `-R 2000` is `--rate 2000`.
pub(crate) fn for_unknown_flag(flag: &str, args: &[OsString]) -> Option<String> {
    let &(_, theirs, ours) = FOREIGN_FLAGS
        .iter()
        .find(|(foreign, _, _)| flag == *foreign)?;
    // The value follows the flag (`-z 5s`), or is stuck to it (`-z5s`, `-z=5s`).
    let value = args.iter().enumerate().find_map(|(at, arg)| {
        let arg = arg.to_str()?;
        let rest = arg.strip_prefix(flag)?;
        match rest.trim_start_matches('=') {
            "" => args.get(at + 1)?.to_str().map(str::to_owned),
            stuck => Some(stuck.to_owned()),
        }
    });
    let value = value.map_or("…".to_owned(), |value| as_typed(&value));
    Some(format!("{theirs} is {ours} here: write {ours} {value}"))
}

/// The load test's arguments read the way another tool would have meant them: an error that
/// says what to write, or nothing to say.
pub(crate) fn check(args: &LoadArgs) -> Result<()> {
    if args.quiet {
        if let Some(rate) = args
            .urls
            .iter()
            .find(|url| parse_si_number(url).is_ok_and(f64::is_finite))
        {
            let rate = as_typed(rate);
            usage_bail!("-q is --quiet here and '{rate}' is not a URL: for oha's -q {rate} (requests per second) write --rate {rate}");
        }
    }
    if let Some(path) = &args.data {
        check_data(path, args.grpc.grpc_method.is_some())?;
    }
    Ok(())
}

/// `text` as the user typed it, to be typed again in the suggestion; quoted (escaped, cut)
/// when it is long or holds control characters.
fn as_typed(text: &str) -> String {
    match text.len() <= QUOTE_LIMIT && !text.contains(char::is_control) {
        true => text.to_owned(),
        false => quoted(text).to_string(),
    }
}

/// `-d TEXT` where h2load's `-d FILE` finds no file: wrk's `-d 10s` (a duration) or curl's and
/// oha's `-d '{…}'` (the body itself).
fn check_data(path: &Path, grpc: bool) -> Result<()> {
    let Some(text) = path.to_str() else {
        return Ok(());
    };
    if text.starts_with('@') || path.exists() {
        return Ok(());
    }
    let shown = as_typed(text);
    if parse_positive_duration(text).is_ok() {
        usage_bail!("-d is the request body FILE here (h2load's -d) and there is no file '{shown}': for a run of {shown} (wrk's -d) write -D {shown}");
    }
    if text.starts_with(['{', '[']) || text.contains('=') {
        match grpc {
            true => usage_bail!("-d is the request body FILE here (h2load's -d) and there is no file '{shown}': for the message itself (ghz's -d) write --grpc-data '{shown}'"),
            false => usage_bail!("-d is the request body FILE here (h2load's -d) and there is no file '{shown}': for the body itself (curl's -d) write --body '{shown}'"),
        }
    }
    Ok(())
}

/// The file `-d` names: h2load's `-d FILE`, or curl's `-d @FILE` (a file whose name starts
/// with `@` is read as it is named).
pub(crate) fn data_file(path: &Path) -> PathBuf {
    match path.to_str().and_then(|text| text.strip_prefix('@')) {
        Some(file) if !path.exists() => PathBuf::from(file),
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn foreign_flags_name_the_flag_meant_with_the_value_given() {
        let said = |flag: &str, words: &[&str]| for_unknown_flag(flag, &args(words));
        assert_eq!(
            said("-z", &["h2load-rs", "-c", "2", "-z", "5s", "http://x/"]).as_deref(),
            Some("oha's and hey's -z (run this long) is -D here: write -D 5s")
        );
        assert_eq!(
            said("-R", &["h2load-rs", "-R2000"]).as_deref(),
            Some("wrk2's -R (requests per second) is --rate here: write --rate 2000")
        );
        assert_eq!(
            said("-z", &["h2load-rs", "-z"]).as_deref(),
            Some("oha's and hey's -z (run this long) is -D here: write -D …")
        );
        assert_eq!(said("-Q", &["h2load-rs", "-Q", "1"]), None);
    }

    fn checked(words: &[&str]) -> Option<String> {
        let cli = crate::cli::Cli::try_parse_from(["h2load-rs"].iter().chain(words)).unwrap();
        check(&cli.load).err().map(|error| error.to_string())
    }

    #[test]
    fn arguments_another_tool_would_mean_get_a_suggestion() {
        let dir = tempfile::tempdir().unwrap();
        let body = dir.path().join("10s");
        std::fs::write(&body, "x").unwrap();
        let url = "http://127.0.0.1:1/";
        for (words, says) in [
            (
                &["-q", "1000", url][..],
                "for oha's -q 1000 (requests per second) write --rate 1000",
            ),
            (&["-q", "1.5k", url], "write --rate 1.5k"),
            (
                &["-d", "10s", url],
                "for a run of 10s (wrk's -d) write -D 10s",
            ),
            (&["-d", "{\"a\":1}", url], "write --body '{\"a\":1}'"),
            (&["-d", "a=1&b=2", url], "write --body 'a=1&b=2'"),
            (
                &["-d", "[1]", "--grpc", "/a.B/C", url],
                "(ghz's -d) write --grpc-data '[1]'",
            ),
        ] {
            let said = checked(words).unwrap_or_default();
            assert!(said.contains(says), "{words:?}: {said}");
        }
        let existing = body.to_str().unwrap();
        for fine in [
            &["-q", url][..],
            &["-d", existing, url],
            &["-d", "/nonexistent/body", url],
            &["-d", "@/nonexistent/body", url],
            &["127.0.0.1:8080/ping"],
        ] {
            assert_eq!(checked(fine), None, "{fine:?}");
        }
        assert_eq!(data_file(Path::new("@body.json")), Path::new("body.json"));
        assert_eq!(data_file(&body), body);
    }
}
