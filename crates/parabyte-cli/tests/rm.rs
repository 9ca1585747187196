//! `parabyte rm` against real servers: what it deletes (a key, a prefix, a pattern, what the
//! filters keep), in batches of 1,000, what a dry run leaves, and a refused request.

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
    assert!(String::from_utf8_lossy(&output.stdout).contains("delete: s3://"));
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
