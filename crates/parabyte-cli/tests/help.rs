//! Each subcommand's `--help` lists the options it takes and no other, with words that
//! fit it: `rm` and `cat` no download settings, `completions` no `-v`, `mv` no manifest or
//! standard output, which it refuses (issue 44, item 4). The table below is what each
//! command takes; a new option or command that is not in it fails here until it is.

mod common;

use std::collections::BTreeSet;

use common::{bare_parabyte, run, stderr, Bed};
use parabyte_testkit::ServerKind;

const STORE: &[&str] = &[
    "--endpoint-url",
    "--region",
    "--profile",
    "--path-style",
    "--no-sign-request",
    "--ca-bundle",
    "--timeout",
    "--bind",
    "--request-payer",
];
const SELECTION: &[&str] = &["--exclude", "--include", "--raw", "--dryrun", "--dry-run"];
const UPLOAD: &[&str] = &[
    "--follow-symlinks",
    "--no-follow-symlinks",
    "--no-clobber",
    "--ignore-existing",
    "--content-type",
    "--no-guess-mime-type",
    "--cache-control",
    "--content-encoding",
    "--storage-class",
    "--sse",
    "--sse-kms-key-id",
    "--metadata",
];
const TRANSFER: &[&str] = &[
    "--workers",
    "--ranges-per-object",
    "--threads",
    "--part-size",
    "--max-requests",
    "--copy-cutoff",
    "--retries",
    "--no-verify",
    "--force",
    "--ignore-glacier-warnings",
];
const LISTING: &[&str] = &["--list-parallelism", "--list-page-size"];
const OUTPUT: &[&str] = &[
    "--json",
    "--json-lines",
    "--quiet",
    "--only-show-errors",
    "--no-progress",
    "--object-lines",
];

/// What each subcommand takes, besides --help.
fn takes(command: &str) -> BTreeSet<&'static str> {
    let groups: Vec<&[&str]> = match command {
        "cp" => vec![
            &["--verbose", "--manifest", "--recursive", "--discard"],
            SELECTION,
            UPLOAD,
            TRANSFER,
            LISTING,
            OUTPUT,
            STORE,
            &[
                "--source-endpoint-url",
                "--source-region",
                "--source-profile",
                "--source-no-sign-request",
                "--dask-scheduler",
                "--dask-split-bytes",
            ],
        ],
        "mv" => vec![
            &["--verbose", "--recursive", "--dask-scheduler"],
            SELECTION,
            UPLOAD,
            TRANSFER,
            LISTING,
            OUTPUT,
            STORE,
        ],
        "sync" => vec![
            &[
                "--verbose",
                "--delete",
                "--max-delete",
                "--delete-if-source-empty",
                "--size-only",
                "--exact-timestamps",
                "--checksum",
                "--dask-scheduler",
            ],
            SELECTION,
            UPLOAD,
            TRANSFER,
            LISTING,
            OUTPUT,
            STORE,
        ],
        "ls" => vec![
            &[
                "--verbose",
                "--recursive",
                "--json",
                "--summarize",
                "--human-readable",
            ],
            LISTING,
            STORE,
        ],
        "du" => vec![
            &["--verbose", "--group", "--human-readable", "--json"],
            LISTING,
            STORE,
        ],
        "stat" => vec![&["--verbose", "--json"], STORE],
        // No bar is drawn for deletes: --no-progress is accepted but not listed.
        "rm" => vec![
            &[
                "--verbose",
                "--recursive",
                "--workers",
                "--retries",
                "--json",
                "--json-lines",
                "--quiet",
                "--only-show-errors",
                "--object-lines",
                "--dask-scheduler",
            ],
            SELECTION,
            LISTING,
            STORE,
        ],
        "mb" => vec![&["--verbose"], STORE],
        "rb" => vec![&["--verbose", "--force", "--quiet"], STORE],
        "cat" => vec![
            &[
                "--verbose",
                "--ranges-per-object",
                "--threads",
                "--part-size",
                "--max-requests",
                "--retries",
                "--no-verify",
            ],
            STORE,
        ],
        "completions" => vec![],
        "uploads ls" => vec![&["--verbose", "--json"], STORE],
        "uploads abort" => vec![&["--verbose", "--upload-id", "--dryrun", "--quiet"], STORE],
        other => panic!("`{other}` is not in the table of what each subcommand takes"),
    };
    groups.into_iter().flatten().copied().collect()
}

fn help(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let output = bare_parabyte(dir.path())
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{args:?}: {}",
        stderr(&output)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The subcommands a `--help` lists under "Commands:" (not `help`).
fn commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| !line.is_empty())
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The long options a `--help` lists (and their visible aliases), not --help itself.
fn options(help: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in help.lines() {
        // Options are indented 2 (with a short flag) or 6; their descriptions, 10.
        let indent = line.len() - line.trim_start().len();
        if !matches!(indent, 2 | 6) {
            continue;
        }
        let trimmed = line.trim_start();
        let trimmed = match trimmed.as_bytes() {
            [b'-', short, b',', b' ', ..] if short.is_ascii_alphanumeric() => &trimmed[4..],
            _ => trimmed,
        };
        if let Some(rest) = trimmed.strip_prefix("--") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            found.insert(format!("--{name}"));
        }
    }
    // Visible aliases, where a description ends (`[alias: --threads]`), wrapped or not.
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for marker in ["[alias: ", "[aliases: "] {
        for (at, _) in flat.match_indices(marker) {
            let aliases = flat[at + marker.len()..]
                .split(']')
                .next()
                .unwrap_or_default();
            found.extend(aliases.split(", ").map(str::to_owned));
        }
    }
    found.remove("--help");
    found
}

#[test]
fn every_subcommand_lists_only_the_options_it_takes() {
    let mut walked = Vec::new();
    for command in commands(&help(&[])) {
        let help = help(&[&command]);
        let leaves = commands(&help);
        let paths: Vec<String> = match leaves.is_empty() {
            true => vec![command.clone()],
            false => leaves
                .iter()
                .map(|leaf| format!("{command} {leaf}"))
                .collect(),
        };
        for path in paths {
            let args: Vec<&str> = path.split(' ').collect();
            let help = help_of(&args);
            let listed = options(&help);
            let expected: BTreeSet<String> = takes(&path).into_iter().map(str::to_owned).collect();
            let extra: Vec<_> = listed.difference(&expected).collect();
            let missing: Vec<_> = expected.difference(&listed).collect();
            assert!(
                extra.is_empty() && missing.is_empty(),
                "`parabyte {path} --help` lists {extra:?} it does not take and lacks \
                 {missing:?}:\n{help}"
            );
            walked.push(path);
        }
    }
    for command in ["cp", "mv", "sync", "rm", "cat", "mb", "rb", "completions"] {
        assert!(walked.iter().any(|path| path == command), "{walked:?}");
    }
}

fn help_of(args: &[&str]) -> String {
    help(args)
}

#[test]
fn options_are_worded_for_the_command_they_are_in() {
    for command in ["rm", "cat"] {
        let help = help(&[command]);
        for download_words in ["downloaded", "Download every", "copy inside the store"] {
            assert!(
                !help.contains(download_words),
                "{command}: {download_words}\n{help}"
            );
        }
    }
    let rm = help(&["rm"]);
    assert!(rm.contains("DeleteObjects requests"), "{rm}");
    assert!(
        rm.contains("What to delete:") && !rm.contains("What to copy:"),
        "{rm}"
    );
    let mv = help(&["mv"]);
    for refused in ["--manifest", "standard output", "'-'", "--discard"] {
        assert!(!mv.contains(refused), "{refused}\n{mv}");
    }
    assert!(!help(&["completions"]).contains("-v"));
}

#[test]
fn mv_refuses_standard_output_and_keeps_the_source() {
    let bed = Bed::new(ServerKind::Versitygw, "mv-stdout");
    bed.admin.put_object(&bed.bucket, "k", "kept").unwrap();
    let output = run(bed.parabyte().args(["mv", &bed.url("k"), "-"]));
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(output.stdout.is_empty(), "{said}");
    assert!(said.contains("cat"), "{said}");
    assert_eq!(bed.admin.get_object(&bed.bucket, "k").unwrap(), "kept");
    // `-v` still works where the command sends requests, before or after its name.
    for args in [["-v", "stat"], ["stat", "-v"]] {
        let output = run(bed.parabyte().args(args).arg(bed.url("k")));
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert!(stderr(&output).contains("HEAD"), "{}", stderr(&output));
    }
}
