//! `parabyte ls` against the three real servers.

mod common;

use bytes::Bytes;
use common::{bare_parabyte, run, stderr, Bed};
use parabyte_testkit::{payload, HostileServer, KeySpace, ListingServer, Reply, ServerKind};

fn lists_one_level_or_everything(kind: ServerKind) {
    let bed = Bed::new(kind, "ls");
    bed.admin
        .fill(
            &bed.bucket,
            [
                ("p/a.txt", payload(1, 12)),
                ("p/sub/b.txt", payload(2, 3456)),
                ("q", payload(3, 1)),
            ],
        )
        .unwrap();

    let output = run(bed.parabyte().args(["ls", &bed.url("p/")]));
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    // As aws prints them: the page's folders first, then the date, the size right-aligned
    // in 10, and the name.
    assert!(lines[0].trim_start().starts_with("PRE sub/"), "{text}");
    assert_eq!(&lines[1][19..], "         12 a.txt", "{text}");

    let output = run(bed
        .parabyte()
        .args(["ls", "--recursive", "--json", &bed.url("")]));
    assert!(output.status.success(), "{}", stderr(&output));
    let entries: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let keys: Vec<_> = entries
        .iter()
        .map(|e| e["key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(keys, vec!["p/a.txt", "p/sub/b.txt", "q"]);
    assert_eq!(entries[1]["size"], 3456);
    assert!(entries[1]["last_modified"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn a_wildcard_lists_the_keys_that_match_as_cp_takes_them() {
    let bed = Bed::new(ServerKind::Versitygw, "lswild");
    bed.admin
        .fill(
            &bed.bucket,
            [
                ("imgs/a.jpg", payload(1, 3)),
                ("imgs/b.png", payload(2, 4)),
                ("imgs/sub/c.jpg", payload(3, 5)),
                ("other.jpg", payload(4, 6)),
            ],
        )
        .unwrap();
    let output = run(bed
        .parabyte()
        .args(["ls", "--summarize", &bed.url("imgs/*.jpg")]));
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    let names: Vec<&str> = text
        .lines()
        .take_while(|line| !line.is_empty())
        .map(|line| &line[19..])
        .collect();
    assert_eq!(
        names,
        ["          3 imgs/a.jpg", "          5 imgs/sub/c.jpg"]
    );
    assert!(text.contains("Total Objects: 2"), "{text}");
    // Only the literal prefix was listed.
    assert_eq!(bed.proxy.counts().list, 1);

    let output = run(bed.parabyte().args(["ls", &bed.url("imgs/*.gif")]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("no key matches this pattern"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn lists_one_level_or_everything_versitygw() {
    lists_one_level_or_everything(ServerKind::Versitygw);
}

#[test]
fn lists_one_level_or_everything_seaweedfs() {
    lists_one_level_or_everything(ServerKind::SeaweedFs);
}

#[test]
fn lists_one_level_or_everything_minio() {
    lists_one_level_or_everything(ServerKind::Minio);
}

#[test]
fn lists_one_level_or_everything_moto() {
    lists_one_level_or_everything(ServerKind::Moto);
}

fn summarize_counts_objects_and_bytes_in_parallel_listings(kind: ServerKind) {
    let bed = Bed::new(kind, "summarize");
    let objects: Vec<_> = (0..250u64)
        .map(|i| (format!("s/{i:04}"), payload(i, (i % 7) as usize)))
        .collect();
    bed.admin.fill(&bed.bucket, objects.clone()).unwrap();
    let total: usize = objects.iter().map(|(_, bytes)| bytes.len()).sum();

    // Pages of 20 keys listed by up to 8 workers: same lines, same order as one by one.
    let listing = |parallelism: &str| {
        let output = run(bed.parabyte().args([
            "ls",
            "--recursive",
            "--summarize",
            "--list-page-size",
            "20",
            "--list-parallelism",
            parallelism,
            &bed.url("s/"),
        ]));
        assert!(output.status.success(), "{}", stderr(&output));
        String::from_utf8(output.stdout).unwrap()
    };
    let sequential = listing("1");
    assert_eq!(listing("8"), sequential);
    assert!(
        sequential.ends_with(&format!("Total Objects: 250\n   Total Size: {total}\n")),
        "{sequential}"
    );
    assert_eq!(
        sequential
            .lines()
            .filter(|line| line.contains(" s/0"))
            .count(),
        250
    );

    let output = run(bed
        .parabyte()
        .args(["ls", "-r", "--json", "--summarize", &bed.url("s/")]));
    let last = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_owned();
    let summary: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(
        (
            summary["total_objects"].as_u64(),
            summary["total_bytes"].as_u64()
        ),
        (Some(250), Some(total as u64))
    );
}

#[test]
fn summarize_counts_objects_and_bytes_in_parallel_listings_versitygw() {
    summarize_counts_objects_and_bytes_in_parallel_listings(ServerKind::Versitygw);
}

#[test]
fn summarize_counts_objects_and_bytes_in_parallel_listings_seaweedfs() {
    summarize_counts_objects_and_bytes_in_parallel_listings(ServerKind::SeaweedFs);
}

#[test]
fn summarize_counts_objects_and_bytes_in_parallel_listings_minio() {
    summarize_counts_objects_and_bytes_in_parallel_listings(ServerKind::Minio);
}

#[test]
fn summarize_counts_objects_and_bytes_in_parallel_listings_moto() {
    summarize_counts_objects_and_bytes_in_parallel_listings(ServerKind::Moto);
}

/// `ls s3://` against `server`, which must refuse its bucket list as too large.
fn refused_bucket_list(server: &HostileServer) {
    let dir = tempfile::tempdir().unwrap();
    let mut command = bare_parabyte(dir.path());
    command
        .env("AWS_ACCESS_KEY_ID", "id")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .args(["ls", "--endpoint-url", &server.endpoint(), "s3://"]);
    let output =
        run(assert_cmd::Command::from_std(command).timeout(std::time::Duration::from_secs(120)));
    let text = stderr(&output);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("more than any store sends"), "{text}");
}

/// A bucket list that never ends (a hostile or broken server) is refused once a page is
/// larger than any store sends, in bounded memory; it used to be read whole, the process
/// growing with the answer until it was killed.
#[test]
fn an_endless_bucket_list_is_refused_in_bounded_memory() {
    let server = HostileServer::start(|_| {
        let head = Bytes::from_static(
            b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListAllMyBucketsResult><Buckets>",
        );
        let bucket = Bytes::from_static(
            b"<Bucket><Name>b</Name><CreationDate>2026-01-01T00:00:00.000Z</CreationDate></Bucket>",
        );
        Reply::status(200)
            .header("content-type", "application/xml")
            .generated(std::iter::once(head).chain(std::iter::repeat(bucket)))
    });
    refused_bucket_list(&server);
    assert_eq!(server.request_count(), 1);
}

/// A bucket list that announces 400 MiB is refused before its body is read: the answer
/// (chunks counted as the server makes them) stops where the kernel's buffers fill, short
/// of the 16 MiB a page may hold; it used to be read until the cap, and before the cap
/// whole (1.1 GiB at its peak).
#[test]
fn a_bucket_list_announcing_more_than_a_page_holds_is_refused_unread() {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    const ANNOUNCED: u64 = 400 << 20;
    let made = std::sync::Arc::new(AtomicU64::new(0));
    let counted = made.clone();
    let server = HostileServer::start(move |_| {
        let counted = counted.clone();
        let bucket = Bytes::from_static(
            b"<Bucket><Name>b</Name><CreationDate>2026-01-01T00:00:00.000Z</CreationDate></Bucket>",
        );
        let chunks = std::iter::repeat(bucket).inspect(move |chunk| {
            counted.fetch_add(chunk.len() as u64, Relaxed);
        });
        Reply::status(200)
            .header("content-type", "application/xml")
            .header("content-length", &ANNOUNCED.to_string())
            .generated(chunks.take((ANNOUNCED / 84) as usize))
    });
    refused_bucket_list(&server);
    let read = made.load(Relaxed);
    assert!(
        read < 16 << 20,
        "{read} bytes of the answer were made to be read"
    );
}

/// A hundred thousand keys in W4's shape, from a store whose page costs the same wherever it
/// starts: the parallel listing prints every key once, in order, and asks for few pages more
/// than the sequential listing would (each part may read its first page from inside the one
/// before, and one page past its end).
#[test]
fn a_hundred_thousand_keys_list_in_parallel_once_each_in_order() {
    const KEYS: usize = 100_000;
    let written: Vec<String> = (0..KEYS)
        .map(|i| format!("w4/d{:03}/k{i:06}", i % 100))
        .collect();
    let mut expected = written.clone();
    expected.sort();
    let server = ListingServer::start(KeySpace::new("b", written, 64));
    let dir = tempfile::tempdir().unwrap();
    let mut command = bare_parabyte(dir.path());
    command
        .env("AWS_ACCESS_KEY_ID", "id")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .args([
            "ls",
            "--recursive",
            "--endpoint-url",
            &server.endpoint(),
            "s3://b/w4/",
        ]);
    let output =
        run(assert_cmd::Command::from_std(command).timeout(std::time::Duration::from_secs(300)));
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    let listed: Vec<&str> = text
        .lines()
        .map(|line| line.rsplit(' ').next().unwrap())
        .collect();
    assert!(listed == expected, "{} keys listed of {KEYS}", listed.len());

    let requests = server.requests();
    let pages: Vec<_> = requests
        .iter()
        .filter(|seen| seen.query_param("max-keys").as_deref() != Some("1"))
        .collect();
    let parts = 1 + pages
        .iter()
        .filter(|seen| {
            seen.query_param("start-after").is_some()
                && seen.query_param("continuation-token").is_none()
        })
        .count();
    assert!(parts >= 4, "the listing ran in {parts} parts");
    assert!(
        pages.len() <= KEYS / 1000 + 2 * parts,
        "{} page requests in {parts} parts",
        pages.len()
    );
}

#[test]
fn du_totals_a_prefix_or_a_pattern_as_s5cmd_prints_it() {
    let bed = Bed::new(ServerKind::Versitygw, "du");
    bed.admin
        .fill(
            &bed.bucket,
            [
                ("logs/a.gz", payload(1, 1000)),
                ("logs/b.txt", payload(2, 24)),
                ("logs/sub/c.gz", payload(3, 2048)),
                ("other", payload(4, 7)),
            ],
        )
        .unwrap();
    let du = |args: &[&str]| {
        let output = run(bed.parabyte().arg("du").args(args));
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        String::from_utf8(output.stdout).unwrap()
    };
    let prefix = bed.url("logs/");
    assert_eq!(
        du(&[&prefix]),
        format!("3072 bytes in 3 objects: {prefix}\n")
    );
    let pattern = bed.url("logs/*.gz");
    assert_eq!(
        du(&["-h", "--group", &pattern]),
        format!("STANDARD 3.0 KiB in 2 objects: {pattern}\n")
    );
    let json: serde_json::Value = serde_json::from_str(du(&["--json", &pattern]).trim()).unwrap();
    assert_eq!(
        (json["objects"].as_u64(), json["bytes"].as_u64()),
        (Some(2), Some(3048))
    );

    let empty = run(bed.parabyte().args(["du", &bed.url("nothing/")]));
    assert_eq!(empty.status.code(), Some(1), "{}", stderr(&empty));
    assert!(
        stderr(&empty).contains("no object there"),
        "{}",
        stderr(&empty)
    );
}

#[test]
fn stat_tells_what_the_store_keeps_about_one_object() {
    let bed = Bed::new(ServerKind::Versitygw, "stat");
    bed.admin
        .fill(&bed.bucket, [("k.json", payload(5, 1234))])
        .unwrap();
    let url = bed.url("k.json");
    let output = run(bed.parabyte().args(["stat", &url]));
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    for line in [
        format!("URL:           {url}"),
        "Size:          1234".to_owned(),
    ] {
        assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
    }
    assert!(text.contains("ETag:          \""), "{text}");
    assert!(text.contains("Checksum:      CRC"), "{text}");

    let output = run(bed.parabyte().args(["stat", "--json", &url]));
    assert!(output.status.success(), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        (json["url"].as_str(), json["size"].as_u64()),
        (Some(url.as_str()), Some(1234))
    );
    assert_eq!(bed.proxy.counts().head, 2, "one HEAD each");

    let missing = run(bed.parabyte().args(["stat", &bed.url("nope")]));
    assert_eq!(missing.status.code(), Some(1), "{}", stderr(&missing));
    assert!(
        stderr(&missing).contains("not found"),
        "{}",
        stderr(&missing)
    );
}
