//! `parabyte sync` against real servers: up, down and inside the store it sends only what
//! is missing or changed (counted at the proxy), `--delete` removes exactly what the source
//! lacks and nothing beside the prefix or through a link, `--checksum` reads an unchanged
//! file once, and `--max-delete` and `--dryrun` delete nothing.

mod common;

use std::path::Path;

use common::{files_under, run, stderr, summary, Bed};
use parabyte_testkit::ServerKind;

fn keys(bed: &Bed, prefix: &str) -> Vec<String> {
    let output = run(bed
        .parabyte()
        .args(["ls", "-r", "--json", &bed.url(prefix)]));
    let mut keys: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|entry| entry["key"].as_str().map(str::to_owned))
        .collect();
    keys.sort();
    keys
}

/// `parabyte sync ARGS --json`, which must exit 0; its summary.
fn sync(bed: &Bed, args: &[&str]) -> serde_json::Value {
    let output = run(bed.parabyte().arg("sync").arg("--json").args(args));
    assert!(output.status.success(), "{}", stderr(&output));
    summary(&output)
}

fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A tree whose key order is not its walk order: `a-b` sorts before `a/b`.
const TREE: [&str; 5] = ["a-b", "a/b", "a/c/d", "a0", "z"];

/// SeaweedFS lists directory by directory (`a/b` before `a-b`), so the merge meets `a-b`
/// out of order and sends it again each time: a cost, never a loss or a wrong delete.
fn sent_again_for_order(kind: ServerKind) -> u64 {
    u64::from(kind == ServerKind::SeaweedFs)
}

fn sync_sends_only_what_changed(kind: ServerKind) {
    let bed = Bed::new(kind, "sync");
    let again_sent = sent_again_for_order(kind);
    let up = bed.path("up");
    for name in TREE {
        write(&up, name, name);
    }
    bed.admin
        .fill(
            &bed.bucket,
            [("tree-x/a-b", "neighbour"), ("treeb", "neighbour")],
        )
        .unwrap();
    let (up_text, tree) = (up.to_str().unwrap(), bed.url("tree/"));
    let first = sync(&bed, &[up_text, &tree]);
    assert_eq!(first["requests"]["put"], TREE.len());
    let again = sync(&bed, &[up_text, &tree]);
    assert_eq!(
        (again["objects"].as_u64(), again["skipped"].as_u64()),
        (Some(again_sent), Some(5 - again_sent))
    );
    assert_eq!(again["requests"]["put"], again_sent);

    // One file grows, one goes: one PUT, one key in one DeleteObjects.
    write(&up, "a/b", "a/b grown");
    std::fs::remove_file(up.join("z")).unwrap();
    let changed = sync(&bed, &["--delete", up_text, &tree]);
    assert_eq!(changed["requests"]["put"], 1 + again_sent);
    assert_eq!(
        (
            changed["deleted"].as_u64(),
            changed["requests"]["delete"].as_u64()
        ),
        (Some(1), Some(1))
    );
    let expected: Vec<String> = ["a-b", "a/b", "a/c/d", "a0"]
        .map(|k| format!("tree/{k}"))
        .into();
    assert_eq!(keys(&bed, "tree/"), expected);
    assert_eq!(
        keys(&bed, "tree-x/"),
        ["tree-x/a-b"],
        "a neighbour prefix stays"
    );
    assert_eq!(keys(&bed, "treeb"), ["treeb"]);

    // Down: every object once, then nothing; a local file the store lacks goes with --delete.
    let down = bed.path("down");
    write(&down, "a/extra", "x");
    let fetched = sync(&bed, &[&tree, down.to_str().unwrap()]);
    assert_eq!(fetched["requests"]["get"], 4);
    let quiet = sync(&bed, &["--delete", &tree, down.to_str().unwrap()]);
    assert_eq!(
        (quiet["requests"]["get"].as_u64(), quiet["deleted"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(files_under(&down), ["a-b", "a/b", "a/c/d", "a0"]);
    assert_eq!(
        std::fs::read_to_string(down.join("a/b")).unwrap(),
        "a/b grown"
    );

    // Inside the store: CopyObject only, then nothing.
    let copied = sync(&bed, &["--delete", &tree, &bed.url("copy/")]);
    assert_eq!(
        (
            copied["requests"]["copy"].as_u64(),
            copied["requests"]["get"].as_u64()
        ),
        (Some(4), Some(0))
    );
    let same = sync(&bed, &["--delete", &tree, &bed.url("copy/")]);
    assert_eq!(
        (same["requests"]["copy"].as_u64(), same["deleted"].as_u64()),
        (Some(again_sent), Some(0))
    );
    assert_eq!(keys(&bed, "copy/").len(), 4);
}

#[test]
fn sync_sends_only_what_changed_versitygw() {
    sync_sends_only_what_changed(ServerKind::Versitygw);
}

#[test]
fn sync_sends_only_what_changed_minio() {
    sync_sends_only_what_changed(ServerKind::Minio);
}

#[test]
fn sync_sends_only_what_changed_seaweedfs() {
    sync_sends_only_what_changed(ServerKind::SeaweedFs);
}

#[test]
fn sync_sends_only_what_changed_moto() {
    sync_sends_only_what_changed(ServerKind::Moto);
}

#[test]
fn checksum_compares_contents_and_reads_an_unchanged_file_once() {
    let bed = Bed::new(ServerKind::Minio, "sync-crc");
    let up = bed.path("up");
    write(&up, "same", "0123456789");
    write(&up, "edited", "abcdefghij");
    let (up_text, to) = (up.to_str().unwrap(), bed.url("c/"));
    sync(&bed, &[up_text, &to]);
    // Newer, same bytes: by time it would go again; by content it stays.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(120);
    for name in ["same", "edited"] {
        std::fs::File::options()
            .write(true)
            .open(up.join(name))
            .unwrap()
            .set_modified(later)
            .unwrap();
    }
    // Same size, other bytes: only the content tells.
    std::fs::write(up.join("edited"), "ABCDEFGHIJ").unwrap();
    let checked = sync(&bed, &["--checksum", up_text, &to]);
    assert_eq!(
        (
            checked["requests"]["put"].as_u64(),
            checked["skipped"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert_eq!(
        checked["requests"]["head"], 2,
        "one HEAD a key of equal size"
    );
    let unchanged = sync(&bed, &["--checksum", up_text, &to]);
    assert_eq!(
        (
            unchanged["requests"]["put"].as_u64(),
            unchanged["skipped"].as_u64()
        ),
        (Some(0), Some(2))
    );
    let down = bed.path("down");
    sync(&bed, &[&to, down.to_str().unwrap()]);
    let again = sync(&bed, &["--checksum", &to, down.to_str().unwrap()]);
    assert_eq!(
        (
            again["requests"]["get"].as_u64(),
            again["requests"]["head"].as_u64()
        ),
        (Some(0), Some(0)),
        "downloaded files are judged by their marks"
    );
}

#[test]
fn delete_never_goes_through_a_link_and_leaves_what_is_not_a_file() {
    let bed = Bed::new(ServerKind::Versitygw, "sync-links");
    bed.admin.fill(&bed.bucket, [("t/keep", "k")]).unwrap();
    let down = bed.path("down");
    let outside = bed.path("outside");
    write(&outside, "victim", "must stay");
    write(&down, "extra", "goes");
    std::os::unix::fs::symlink(&outside, down.join("linked")).unwrap();
    std::os::unix::fs::symlink(outside.join("victim"), down.join("file-link")).unwrap();
    let fifo =
        std::ffi::CString::new(down.join("fifo").into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path that lives across the call.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let summary = sync(&bed, &["--delete", &bed.url("t/"), down.to_str().unwrap()]);
    assert_eq!(summary["deleted"], 1, "only the regular file");
    assert!(!down.join("extra").exists());
    assert_eq!(
        std::fs::read_to_string(outside.join("victim")).unwrap(),
        "must stay"
    );
    assert!(down.join("linked").symlink_metadata().is_ok());
    assert!(down.join("file-link").symlink_metadata().is_ok());
    assert!(down.join("fifo").symlink_metadata().is_ok());
}

#[test]
fn dryrun_and_max_delete_delete_nothing() {
    let bed = Bed::new(ServerKind::Minio, "sync-guard");
    bed.admin
        .fill(
            &bed.bucket,
            [("s/a", "a"), ("d/a", "a"), ("d/b", "b"), ("d/c", "c")],
        )
        .unwrap();
    let dry = run(bed.parabyte().args([
        "sync",
        "--delete",
        "--dryrun",
        &bed.url("s/"),
        &bed.url("d/"),
    ]));
    assert!(dry.status.success(), "{}", stderr(&dry));
    let said = String::from_utf8_lossy(&dry.stdout);
    assert!(
        said.contains(&format!("(dryrun) delete: {}", bed.url("d/b"))),
        "{said}"
    );
    assert_eq!(keys(&bed, "d/").len(), 3);
    let capped = run(bed.parabyte().args([
        "sync",
        "--delete",
        "--max-delete",
        "1",
        &bed.url("s/"),
        &bed.url("d/"),
    ]));
    assert_eq!(capped.status.code(), Some(1), "{}", stderr(&capped));
    assert!(
        stderr(&capped).contains("--max-delete 1"),
        "{}",
        stderr(&capped)
    );
    assert_eq!(keys(&bed, "d/").len(), 3, "nothing deleted");
    // A source that lists nothing (a typo) never empties the destination.
    let typo = run(bed
        .parabyte()
        .args(["sync", "--delete", &bed.url("s-typo/"), &bed.url("d/")]));
    assert_eq!(typo.status.code(), Some(1), "{}", stderr(&typo));
    assert_eq!(keys(&bed, "d/").len(), 3, "nothing deleted");
}

/// The review's cases: a source root that is a link, a link and a FIFO inside the source,
/// an empty source. What the source could not give is never deleted for lacking it.
#[test]
fn a_source_not_read_whole_or_empty_deletes_nothing() {
    let bed = Bed::new(ServerKind::Versitygw, "sync-whole");
    let stored = [
        ("t/a", "a"),
        ("t/sub/x", "x"),
        ("t/linked/y", "y"),
        ("t/linked-not", "z"),
    ];
    bed.admin.fill(&bed.bucket, stored).unwrap();
    let real = bed.path("real");
    write(&real, "a", "a");
    write(&bed.path("outside"), "y", "y");
    std::os::unix::fs::symlink(bed.path("outside"), real.join("linked")).unwrap();
    let pipe = real.join("pipe").into_os_string().into_encoded_bytes();
    let fifo = std::ffi::CString::new(pipe).unwrap();
    // SAFETY: a NUL-terminated path that lives across the call.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let root = bed.path("root-link");
    std::os::unix::fs::symlink(&real, &root).unwrap();
    let (root_text, tree) = (root.to_str().unwrap(), bed.url("t/"));
    let all = || keys(&bed, "t/");
    // The root is the directory it names; the FIFO inside it is refused, so nothing goes.
    let refused = run(bed.parabyte().args(["sync", "--delete", root_text, &tree]));
    let said = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(said.contains("nothing was deleted"), "{said}");
    assert_eq!(all(), ["t/a", "t/linked-not", "t/linked/y", "t/sub/x"]);
    // Without it: the link is passed over (said, exit 0), what lies below its name stays,
    // and the rest the source positively lacks goes.
    std::fs::remove_file(real.join("pipe")).unwrap();
    let passed = run(bed.parabyte().args(["sync", "--delete", root_text, &tree]));
    assert!(passed.status.success(), "{}", stderr(&passed));
    assert!(stderr(&passed).contains("skip: "), "{}", stderr(&passed));
    assert_eq!(all(), ["t/a", "t/linked/y"]);
    std::fs::remove_file(real.join("linked")).unwrap();
    let whole = sync(&bed, &["--delete", root_text, &tree]);
    assert_eq!(whole["deleted"], 1);
    assert_eq!(all(), ["t/a"]);
    // An empty directory deletes nothing unless the user says it should.
    let empty = bed.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let empty_text = empty.to_str().unwrap();
    let kept = run(bed.parabyte().args(["sync", "--delete", empty_text, &tree]));
    assert_eq!(kept.status.code(), Some(1), "{}", stderr(&kept));
    assert!(
        stderr(&kept).contains("--delete-if-source-empty"),
        "{}",
        stderr(&kept)
    );
    assert_eq!(all(), ["t/a"]);
    let asked = sync(
        &bed,
        &["--delete", "--delete-if-source-empty", empty_text, &tree],
    );
    assert_eq!(asked["deleted"], 1);
    assert!(all().is_empty());
}
