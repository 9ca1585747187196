//! Downloads through the real binary against the three real servers: bytes compared with what
//! was uploaded, and requests counted on the server side by the proxy.

mod common;

use common::{files_under, run, stderr, summary, Bed};
use parabyte_testkit::{payload, ServerKind};

const PART: usize = 1 << 20;

/// Sizes at every boundary the planner cares about, with keys that need encoding.
fn objects() -> Vec<(String, Vec<u8>)> {
    let sizes = [
        ("empty", 0),
        ("one-byte", 1),
        ("kib with space.bin", 1024),
        ("exactly one part", PART),
        ("one part + 1", PART + 1),
        ("many/parts+plus%percent", 5 * PART + 12345),
        ("nested/deeper/ünïcödé ☃.txt", 3000),
    ];
    sizes
        .iter()
        .enumerate()
        .map(|(seed, (name, size))| (format!("data/{name}"), payload(seed as u64, *size)))
        .collect()
}

/// GETs for a listed object of `len` bytes in parts of [`PART`].
fn listed_gets(len: usize) -> usize {
    match len {
        0 => 0,
        len if len <= 2 * PART => 1,
        len => len.div_ceil(PART),
    }
}

fn prefix_round_trip(kind: ServerKind) {
    let bed = Bed::new(kind, "prefix");
    let objects = objects();
    bed.admin.fill(&bed.bucket, objects.clone()).unwrap();

    let output = run(bed.parabyte().args([
        "cp",
        "--json",
        "--part-size",
        "1MiB",
        &bed.url("data/"),
        "out",
    ]));
    assert!(output.status.success(), "{}", stderr(&output));

    for (key, bytes) in &objects {
        let written =
            std::fs::read(bed.path("out").join(key.strip_prefix("data/").unwrap())).unwrap();
        assert!(
            written == *bytes,
            "{key} differs ({} vs {} bytes)",
            written.len(),
            bytes.len()
        );
    }
    assert_eq!(
        files_under(&bed.path("out")).len(),
        objects.len(),
        "no temp files or extras"
    );

    // Sizes come from the listing: an object of up to two parts is one GET, a larger one a
    // GET per part and one HEAD for its checksum; the empty object needs nothing.
    let gets: usize = objects.iter().map(|(_, b)| listed_gets(b.len())).sum();
    let heads = objects
        .iter()
        .filter(|(_, b)| listed_gets(b.len()) > 1)
        .count();
    let seen = bed.proxy.counts();
    assert_eq!(
        (seen.get as usize, seen.list, seen.head as usize, seen.put),
        (gets, 1, heads, 0)
    );
    let json = summary(&output);
    assert_eq!(json["requests"]["get"], seen.get);
    assert_eq!(json["requests"]["list"], seen.list);
    assert_eq!(json["requests"]["head"], seen.head);
    // Every kind parabyte sends is reported; a download sends no writes.
    let kinds: Vec<&String> = json["requests"].as_object().unwrap().keys().collect();
    assert_eq!(
        kinds,
        ["copy", "delete", "get", "head", "list", "multipart", "put"]
    );
    assert_eq!(
        (&json["requests"]["put"], &json["requests"]["multipart"]),
        (&0.into(), &0.into())
    );
    assert_eq!(json["objects"], objects.len());
    assert_eq!(
        json["bytes"],
        objects.iter().map(|(_, b)| b.len()).sum::<usize>()
    );
    // Listed sizes and ETags pin every request, the first one included.
    assert!(bed
        .proxy
        .requests()
        .iter()
        .filter(|r| r.kind == parabyte_testkit::RequestKind::Get)
        .all(|r| r.if_match.is_some()));
}

#[test]
fn prefix_round_trip_versitygw() {
    prefix_round_trip(ServerKind::Versitygw);
}

#[test]
fn prefix_round_trip_seaweedfs() {
    prefix_round_trip(ServerKind::SeaweedFs);
}

#[test]
fn prefix_round_trip_minio() {
    prefix_round_trip(ServerKind::Minio);
}

#[test]
fn prefix_round_trip_moto() {
    prefix_round_trip(ServerKind::Moto);
}

fn single_objects(kind: ServerKind) {
    let bed = Bed::new(kind, "single");
    let objects = objects();
    bed.admin.fill(&bed.bucket, objects.clone()).unwrap();
    for (index, (key, bytes)) in objects.iter().enumerate() {
        bed.proxy.reset();
        let target = format!("file-{index}");
        let output = run(bed.parabyte().args([
            "cp",
            "--json",
            "--part-size",
            "1MiB",
            &bed.url(key),
            &target,
        ]));
        assert!(output.status.success(), "{key}: {}", stderr(&output));
        assert!(
            std::fs::read(bed.path(&target)).unwrap() == *bytes,
            "{key} differs"
        );

        // No size known: the first ranged GET is the probe. An empty object costs one 416.
        // One of more than one GET gets its checksum from one HEAD.
        let seen = bed.proxy.counts();
        let expected_gets = bytes.len().div_ceil(PART).max(1);
        assert_eq!(
            (seen.get as usize, seen.list, seen.head),
            (expected_gets, 0, u64::from(expected_gets > 1)),
            "{key}"
        );
        assert_eq!(summary(&output)["requests"]["get"], seen.get, "{key}");
        let requests: Vec<_> = bed
            .proxy
            .requests()
            .into_iter()
            .filter(|r| r.kind == parabyte_testkit::RequestKind::Get)
            .collect();
        assert_eq!(
            requests[0].range.as_deref(),
            Some("bytes=0-1048575"),
            "{key}"
        );
        assert_eq!(requests[0].if_match, None, "{key}: nothing to pin yet");
        assert!(
            requests[1..].iter().all(|r| r.if_match.is_some()),
            "{key}: later parts are pinned"
        );
    }
}

#[test]
fn single_objects_versitygw() {
    single_objects(ServerKind::Versitygw);
}

#[test]
fn single_objects_seaweedfs() {
    single_objects(ServerKind::SeaweedFs);
}

#[test]
fn single_objects_minio() {
    single_objects(ServerKind::Minio);
}

#[test]
fn single_objects_moto() {
    single_objects(ServerKind::Moto);
}

fn thousand_small_objects(kind: ServerKind) {
    let bed = Bed::new(kind, "thousand");
    let objects: Vec<_> = (0..1000u64)
        .map(|i| (format!("small/{i:04}.bin"), payload(i, 1024)))
        .collect();
    bed.admin.fill(&bed.bucket, objects.clone()).unwrap();

    let output = run(bed.parabyte().args([
        "cp",
        "--json",
        "--workers",
        "16",
        &bed.url("small/"),
        "out/",
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    for (key, bytes) in &objects {
        assert!(
            std::fs::read(bed.path("out").join(&key[6..])).unwrap() == *bytes,
            "{key}"
        );
    }
    let seen = bed.proxy.counts();
    assert_eq!(
        (seen.get, seen.list, seen.head),
        (1000, 1, 0),
        "a 1 KiB object costs exactly one GET"
    );
    // Keep-alive: connections track the concurrency (16 objects + the listing), not the
    // requests. moto's server (werkzeug) closes every connection after one answer: there,
    // one connection per request and never more.
    let most = if kind == ServerKind::Moto { 1001 } else { 24 };
    assert!(
        seen.connections <= most,
        "{} connections for 1000 requests",
        seen.connections
    );
    assert_eq!(summary(&output)["connections"], seen.connections);
}

#[test]
fn thousand_small_objects_versitygw() {
    thousand_small_objects(ServerKind::Versitygw);
}

#[test]
fn thousand_small_objects_seaweedfs() {
    thousand_small_objects(ServerKind::SeaweedFs);
}

#[test]
fn thousand_small_objects_minio() {
    thousand_small_objects(ServerKind::Minio);
}

#[test]
fn thousand_small_objects_moto() {
    thousand_small_objects(ServerKind::Moto);
}

#[test]
fn a_single_object_goes_into_an_existing_directory() {
    let bed = Bed::new(ServerKind::Versitygw, "into-dir");
    bed.admin
        .put_object(&bed.bucket, "deep/path/model.bin", payload(1, 4096))
        .unwrap();
    std::fs::create_dir(bed.path("existing")).unwrap();
    for destination in ["existing", "fresh/"] {
        let output =
            run(bed
                .parabyte()
                .args(["cp", "-q", &bed.url("deep/path/model.bin"), destination]));
        assert!(output.status.success(), "{}", stderr(&output));
        assert_eq!(
            std::fs::read(bed.path(destination).join("model.bin")).unwrap(),
            payload(1, 4096)
        );
    }
}

#[test]
fn recursive_takes_a_prefix_without_a_slash() {
    let bed = Bed::new(ServerKind::Versitygw, "recursive");
    bed.admin
        .fill(
            &bed.bucket,
            [
                ("dir/a", payload(1, 10)),
                ("dir/b/c", payload(2, 20)),
                ("dirx", payload(3, 5)),
            ],
        )
        .unwrap();
    let output = run(bed
        .parabyte()
        .args(["cp", "-q", "--recursive", &bed.url("dir"), "out"]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(files_under(&bed.path("out")), vec!["a", "b/c"]);
}

#[test]
fn discard_fetches_everything_and_writes_nothing() {
    let bed = Bed::new(ServerKind::Versitygw, "discard");
    bed.admin
        .put_generated(&bed.bucket, "big.bin", 9, 3 * PART as u64 + 7)
        .unwrap();
    let output = run(bed.parabyte().args([
        "cp",
        "--discard",
        "--json",
        "--part-size",
        "1MiB",
        &bed.url("big.bin"),
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    let json = summary(&output);
    assert_eq!(json["bytes"], 3 * PART + 7);
    assert_eq!(json["requests"]["get"], 4);
    assert!(files_under(bed.dir.path()).is_empty());
}

#[test]
fn the_human_summary_names_requests_by_kind() {
    let bed = Bed::new(ServerKind::Versitygw, "human");
    bed.admin
        .put_object(&bed.bucket, "k", payload(1, 100))
        .unwrap();
    let output = run(bed.parabyte().args(["cp", &bed.url("k"), "k"]));
    assert!(output.status.success());
    let text = stderr(&output);
    assert!(text.contains("1 object(s), 100 B"), "{text}");
    assert!(
        text.contains("requests: 1 GET, 0 LIST, 0 HEAD; 1 connection(s) opened; 0 retries"),
        "{text}"
    );
    assert!(
        output.stdout.is_empty(),
        "stdout is for data and --json only"
    );
}

#[test]
fn cat_writes_one_object_to_stdout_and_nothing_else() {
    let bed = Bed::new(ServerKind::Versitygw, "cat");
    let data = payload(42, 3 * PART + 11);
    bed.admin
        .fill(&bed.bucket, [("big.bin", data.clone())])
        .unwrap();
    let output = run(bed
        .parabyte()
        .args(["cat", "--part-size", "1MiB", &bed.url("big.bin")]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(output.stdout == data, "{} bytes", output.stdout.len());
    assert_eq!(stderr(&output), "", "errors only");
    assert_eq!(bed.proxy.counts().get, 4, "parts in parallel, as cp - does");

    let missing = run(bed.parabyte().args(["cat", &bed.url("nope")]));
    assert_eq!(missing.status.code(), Some(1));
    assert!(missing.stdout.is_empty());
    assert!(
        stderr(&missing).contains("not found"),
        "{}",
        stderr(&missing)
    );
}
