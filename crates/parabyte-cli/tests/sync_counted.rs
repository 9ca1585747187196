//! `sync` and `rm -r` against the test kit's listing server, whose twin buckets differ in a
//! chosen share of the keys and which counts every write it is sent: the real binary, over
//! the wire, sends exactly the changed share and nothing where nothing changed (the shape
//! of bench/sync_scale.py, at a size a test can afford).

mod common;

use std::path::Path;

use common::{bare_parabyte, run, stderr, summary};
use parabyte_testkit::{Change, KeySpace, ListingServer, Tally};

const KEYS: u64 = 5_000;
/// 1%: 50 of the 5,000 keys.
const CHANGED_PER_MILLION: u64 = 10_000;
const CHANGED: u64 = 50;

fn server(change: Change) -> ListingServer {
    ListingServer::start(
        KeySpace::generated("b", "p/", KEYS, 10, 0)
            .with_twin("same", 0)
            .with_twin("changed", CHANGED_PER_MILLION)
            .change_by(change),
    )
}

/// Runs `parabyte COMMAND --json ... ARGS` against `server`; the `--json` summary.
fn parabyte(server: &ListingServer, home: &Path, args: &[&str]) -> serde_json::Value {
    let mut command = bare_parabyte(home);
    command
        .env("AWS_ACCESS_KEY_ID", "id")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .arg(args[0])
        .args(["--json", "--endpoint-url", &server.endpoint()])
        .args(&args[1..]);
    let output =
        run(assert_cmd::Command::from_std(command).timeout(std::time::Duration::from_secs(120)));
    assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    summary(&output)
}

/// What the server counted since `before`.
fn since(server: &ListingServer, before: Tally) -> Tally {
    let now = server.tally();
    Tally {
        listed: now.listed - before.listed,
        fetched: now.fetched - before.fetched,
        put: now.put - before.put,
        copied: now.copied - before.copied,
        deleted: now.deleted - before.deleted,
    }
}

#[test]
fn s3_to_s3_copies_exactly_the_changed_share_and_nothing_when_the_same() {
    for change in [Change::Size, Change::Content] {
        let server = server(change);
        let home = tempfile::tempdir().unwrap();
        let before = server.tally();
        let done = parabyte(&server, home.path(), &["sync", "s3://same/p/", "s3://b/p/"]);
        let sent = since(&server, before);
        assert_eq!((sent.copied, sent.put), (0, 0), "{change:?}");
        assert_eq!(done["skipped"], KEYS);

        let before = server.tally();
        let done = parabyte(
            &server,
            home.path(),
            &["sync", "s3://changed/p/", "s3://b/p/"],
        );
        let sent = since(&server, before);
        assert_eq!((sent.copied, sent.put), (CHANGED, 0), "{change:?}");
        assert_eq!(done["objects"], CHANGED);
        assert_eq!(done["skipped"], KEYS - CHANGED);
    }
}

#[test]
fn s3_to_local_and_back_send_exactly_the_changed_share() {
    let server = server(Change::Size);
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let local = format!("{}/", dir.path().display());
    parabyte(&server, home.path(), &["sync", "s3://b/p/", &local]);
    let files = walkdir(dir.path());
    assert_eq!(files.len() as u64, KEYS);
    assert!(files.iter().all(|(_, size)| *size == 0));

    // Nothing to do both ways: no read, no write.
    let before = server.tally();
    parabyte(&server, home.path(), &["sync", "s3://b/p/", &local]);
    parabyte(&server, home.path(), &["sync", &local, "s3://b/p/"]);
    let sent = since(&server, before);
    assert_eq!((sent.fetched, sent.put, sent.copied), (0, 0, 0));

    // The directory against the changed twin: its 1% differs in size, so goes up.
    let before = server.tally();
    parabyte(&server, home.path(), &["sync", &local, "s3://changed/p/"]);
    assert_eq!(since(&server, before).put, CHANGED);

    // And comes down from it: exactly those files grow by the byte (the uploads forgotten,
    // so that the twin reads as it lists).
    server.forget_writes();
    let before = server.tally();
    parabyte(&server, home.path(), &["sync", "s3://changed/p/", &local]);
    assert_eq!(since(&server, before).fetched, CHANGED);
    let grown = walkdir(dir.path())
        .into_iter()
        .filter(|(_, size)| *size == 1)
        .count();
    assert_eq!(grown as u64, CHANGED);
}

#[test]
fn rm_r_deletes_every_key_once() {
    let server = server(Change::Size);
    let home = tempfile::tempdir().unwrap();
    let done = parabyte(&server, home.path(), &["rm", "-r", "s3://b/p/"]);
    assert_eq!(done["deleted"], KEYS);
    assert_eq!(server.tally().deleted, KEYS);
}

/// Every file below `root` and its size.
fn walkdir(root: &Path) -> Vec<(std::path::PathBuf, u64)> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                dirs.push(entry.path());
            } else {
                found.push((entry.path(), entry.metadata().unwrap().len()));
            }
        }
    }
    found
}
