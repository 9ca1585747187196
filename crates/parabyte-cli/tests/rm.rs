//! `parabyte rm` against real servers: what it deletes (a key, a prefix, a pattern, what the
//! filters keep), in batches of 1,000, what a dry run leaves, and a refused request; that a
//! key named without -r is that one key, never a tree; and that every delete (of `rm`,
//! `sync --delete` and `mv`) is named.

mod common;

use common::{run, stderr, summary, Bed};
use parabyte_testkit::{Fault, RequestKind, Rule, ServerKind};

fn keys(bed: &Bed, prefix: &str) -> Vec<String> {
    let output = run(bed
        .parabyte()
        .args(["ls", "-r", "--json", &bed.url(prefix)]));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|entry| entry["key"].as_str().map(str::to_owned))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

fn rm_deletes_what_it_is_told(kind: ServerKind) {
    let bed = Bed::new(kind, "rm");
    let names = ["d/a.txt", "d/b.bin", "d/sub/c.txt", "d.txt", "other/e.txt"];
    bed.admin
        .fill(&bed.bucket, names.iter().map(|name| (*name, "x")))
        .unwrap();
    // A dry run lists and says, and deletes nothing.
    let dry = run(bed.parabyte().args(["rm", "--dryrun", "-r", &bed.url("d")]));
    assert!(dry.status.success(), "{}", stderr(&dry));
    let said = String::from_utf8_lossy(&dry.stdout);
    assert!(
        said.contains(&format!("(dryrun) delete: {}", bed.url("d/sub/c.txt"))),
        "{said}"
    );
    assert_eq!(keys(&bed, "").len(), names.len());
    // A prefix, less what the filters keep out; "d" means "d/", so d.txt stays.
    let output = run(bed
        .parabyte()
        .args(["rm", "-r", "--exclude", "*.bin", &bed.url("d")]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("delete: s3://"),
        "{}",
        stderr(&output)
    );
    assert_eq!(keys(&bed, ""), ["d.txt", "d/b.bin", "other/e.txt"]);
    // One key; a pattern.
    let one = run(bed.parabyte().args(["rm", &bed.url("d.txt")]));
    assert!(one.status.success(), "{}", stderr(&one));
    let pattern = run(bed.parabyte().args(["rm", &bed.url("*.bin")]));
    assert!(pattern.status.success(), "{}", stderr(&pattern));
    assert_eq!(keys(&bed, ""), ["other/e.txt"]);
}

#[test]
fn rm_deletes_what_it_is_told_versitygw() {
    rm_deletes_what_it_is_told(ServerKind::Versitygw);
}

#[test]
fn rm_deletes_what_it_is_told_minio() {
    rm_deletes_what_it_is_told(ServerKind::Minio);
}

#[test]
fn rm_deletes_what_it_is_told_seaweedfs() {
    rm_deletes_what_it_is_told(ServerKind::SeaweedFs);
}

#[test]
fn rm_deletes_what_it_is_told_moto() {
    rm_deletes_what_it_is_told(ServerKind::Moto);
}

/// Without -r, `s3://b/d/` is the key `d/`, as `aws s3 rm` takes it: a tree under it stays,
/// and a key that is not there is a failure that names it, never "deleted".
fn rm_without_r_deletes_only_the_key_named(kind: ServerKind) {
    let bed = Bed::new(kind, "rm-one");
    bed.admin
        .fill(&bed.bucket, ["d/a", "d/sub/b", "k"].map(|name| (name, "x")))
        .unwrap();
    for source in ["d/", "d"] {
        let output = run(bed.parabyte().args(["rm", &bed.url(source)]));
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        let said = stderr(&output);
        assert!(
            said.contains(&bed.url("d/")) && said.contains("--recursive"),
            "{said}"
        );
        assert!(!said.contains("delete:"), "{said}");
    }
    assert_eq!(keys(&bed, ""), ["d/a", "d/sub/b", "k"]);
    let missing = run(bed.parabyte().args(["rm", &bed.url("missing")]));
    assert_eq!(missing.status.code(), Some(1), "{}", stderr(&missing));
    let said = stderr(&missing);
    assert!(
        said.contains(&format!("{}: not found", bed.url("missing"))),
        "{said}"
    );
    assert!(said.contains("deleted 0 object(s)"), "{said}");
    let one = run(bed.parabyte().args(["rm", &bed.url("k")]));
    assert!(one.status.success(), "{}", stderr(&one));
    assert!(
        stderr(&one).contains(&format!("delete: {}", bed.url("k"))),
        "{}",
        stderr(&one)
    );
    assert_eq!(keys(&bed, ""), ["d/a", "d/sub/b"]);
}

#[test]
fn rm_without_r_deletes_only_the_key_named_versitygw() {
    rm_without_r_deletes_only_the_key_named(ServerKind::Versitygw);
}

#[test]
fn rm_without_r_deletes_only_the_key_named_minio() {
    rm_without_r_deletes_only_the_key_named(ServerKind::Minio);
}

#[test]
fn rm_without_r_deletes_only_the_key_named_seaweedfs() {
    rm_without_r_deletes_only_the_key_named(ServerKind::SeaweedFs);
}

#[test]
fn rm_without_r_deletes_only_the_key_named_moto() {
    rm_without_r_deletes_only_the_key_named(ServerKind::Moto);
}

/// A "folder" key `d/` is what `rm s3://b/d/` deletes, and all it deletes.
fn rm_of_a_folder_key_leaves_the_keys_under_it(kind: ServerKind) {
    let bed = Bed::new(kind, "rm-folder");
    bed.admin
        .fill(&bed.bucket, [("d/", ""), ("d/a", "x")])
        .unwrap();
    assert_eq!(keys(&bed, ""), ["d/", "d/a"]);
    let output = run(bed.parabyte().args(["rm", &bed.url("d/")]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!("delete: {}", bed.url("d/"))),
        "{}",
        stderr(&output)
    );
    assert_eq!(keys(&bed, ""), ["d/a"]);
}

#[test]
fn rm_of_a_folder_key_leaves_the_keys_under_it_minio() {
    rm_of_a_folder_key_leaves_the_keys_under_it(ServerKind::Minio);
}

#[test]
fn rm_of_a_folder_key_leaves_the_keys_under_it_moto() {
    rm_of_a_folder_key_leaves_the_keys_under_it(ServerKind::Moto);
}

#[test]
fn rm_of_a_folder_key_leaves_the_keys_under_it_versitygw() {
    rm_of_a_folder_key_leaves_the_keys_under_it(ServerKind::Versitygw);
}

#[test]
fn rm_of_a_folder_key_leaves_the_keys_under_it_seaweedfs() {
    rm_of_a_folder_key_leaves_the_keys_under_it(ServerKind::SeaweedFs);
}

/// Every delete is named on stderr, as aws and s5cmd name them (stdout stays the data's:
/// a --json summary, --json-lines), a move's source as a move; --quiet silences it (and
/// `--object-lines never`, which keeps the summary), and --json-lines names each with
/// status "deleted" instead.
#[test]
fn every_delete_is_named_unless_quiet() {
    let bed = Bed::new(ServerKind::Minio, "rm-named");
    let fill = || {
        bed.admin
            .fill(
                &bed.bucket,
                ["r/a", "r/b", "src/s", "dst/s", "dst/gone", "mv/m"].map(|name| (name, "x")),
            )
            .unwrap()
    };
    fill();
    let rm = run(bed.parabyte().args(["rm", "-r", "--json", &bed.url("r/")]));
    assert!(rm.status.success(), "{}", stderr(&rm));
    assert_eq!(summary(&rm)["deleted"], 2, "stdout holds only the summary");
    for key in ["r/a", "r/b"] {
        let line = format!("delete: {}\n", bed.url(key));
        assert!(stderr(&rm).contains(&line), "{}", stderr(&rm));
    }
    let sync = run(bed.parabyte().args([
        "sync",
        "--delete",
        "--no-progress",
        &bed.url("src/"),
        &bed.url("dst/"),
    ]));
    assert!(sync.status.success(), "{}", stderr(&sync));
    let line = format!("delete: {}", bed.url("dst/gone"));
    assert!(stderr(&sync).contains(&line), "{}", stderr(&sync));
    let moved = run(bed
        .parabyte()
        .args(["mv", &bed.url("mv/m"), &bed.url("moved/m")]));
    assert!(moved.status.success(), "{}", stderr(&moved));
    // A move names its source once, with where it went.
    let line = format!("move: {} to {}", bed.url("mv/m"), bed.url("moved/m"));
    assert!(stderr(&moved).contains(&line), "{}", stderr(&moved));
    // So is a local file a move deletes, by its path.
    let file = bed.path("to-move");
    std::fs::write(&file, "x").unwrap();
    let file_text = file.to_str().unwrap();
    let up = run(bed
        .parabyte()
        .args(["mv", file_text, &bed.url("up/to-move")]));
    assert!(up.status.success(), "{}", stderr(&up));
    let line = format!("move: {file_text} to {}", bed.url("up/to-move"));
    assert!(stderr(&up).contains(&line), "{}", stderr(&up));
    // A local file a sync deletes is named by its path.
    let local = bed.path("local");
    std::fs::create_dir(&local).unwrap();
    std::fs::write(local.join("stale"), "x").unwrap();
    let down = run(bed
        .parabyte()
        .args(["sync", "--delete", &bed.url("src/")])
        .arg(&local));
    assert!(down.status.success(), "{}", stderr(&down));
    let line = format!("delete: {}", local.join("stale").display());
    assert!(stderr(&down).contains(&line), "{}", stderr(&down));
    // --quiet: nothing but errors.
    fill();
    let quiet = run(bed.parabyte().args(["rm", "-r", "--quiet", &bed.url("r/")]));
    assert!(quiet.status.success(), "{}", stderr(&quiet));
    assert_eq!(stderr(&quiet), "");
    assert!(keys(&bed, "r/").is_empty());
    fill();
    let unnamed = run(bed
        .parabyte()
        .args(["rm", "-r", "--object-lines", "never", &bed.url("r/")]));
    assert!(unnamed.status.success(), "{}", stderr(&unnamed));
    assert!(
        !stderr(&unnamed).contains("delete:"),
        "{}",
        stderr(&unnamed)
    );
    assert!(
        stderr(&unnamed).contains("deleted 2 object(s)"),
        "{}",
        stderr(&unnamed)
    );
    assert!(keys(&bed, "r/").is_empty());
    // --json-lines: each delete is a line of its own on stdout, and no text line on stderr.
    fill();
    for args in [
        ["rm", "-r", "--json-lines", &bed.url("r/")].as_slice(),
        &[
            "sync",
            "--delete",
            "--json-lines",
            &bed.url("src/"),
            &bed.url("r/"),
        ],
    ] {
        let output = run(bed.parabyte().args(args));
        assert!(output.status.success(), "{}", stderr(&output));
        assert!(!stderr(&output).contains("delete:"), "{}", stderr(&output));
        let deleted: Vec<String> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .filter(|line| line["status"] == "deleted")
            .map(|line| line["source"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(deleted, [bed.url("r/a"), bed.url("r/b")], "{args:?}");
        fill();
    }
}

#[test]
fn many_keys_go_a_thousand_a_request() {
    let bed = Bed::new(ServerKind::Minio, "rm-many");
    let names: Vec<String> = (0..1500).map(|i| format!("many/{i:04}")).collect();
    bed.admin
        .fill(&bed.bucket, names.iter().map(|name| (name.as_str(), "x")))
        .unwrap();
    bed.proxy.reset();
    let output = run(bed
        .parabyte()
        .args(["rm", "-r", "--json", &bed.url("many/")]));
    assert!(output.status.success(), "{}", stderr(&output));
    let json = summary(&output);
    assert_eq!(json["deleted"], 1500);
    assert_eq!(json["requests"]["delete"], 2);
    assert_eq!(
        bed.proxy.counts().other,
        2,
        "two DeleteObjects, nothing else"
    );
    assert!(keys(&bed, "many/").is_empty());
}

#[test]
fn a_refused_delete_fails_its_keys_and_says_so() {
    let bed = Bed::new(ServerKind::Minio, "rm-refused");
    bed.admin
        .fill(&bed.bucket, ["k/a", "k/b"].map(|name| (name, "x")))
        .unwrap();
    bed.proxy.inject(
        Rule::kind(RequestKind::Other),
        Fault::error(403, "AccessDenied"),
    );
    let output = run(bed.parabyte().args(["rm", "-r", &bed.url("k/")]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("AccessDenied"),
        "{}",
        stderr(&output)
    );
    assert_eq!(keys(&bed, "k/").len(), 2, "nothing deleted");
}
