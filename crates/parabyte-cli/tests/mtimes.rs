//! Files people already have: a download takes the time of the file an upload stored with
//! the object (`x-amz-meta-mtime`, as parabyte and rclone keep it), else the object's
//! Last-Modified (small, large, resumed, single objects and web files alike), so a file
//! another tool downloaded (same size, same time to the second) is skipped as `aws s3 sync`
//! would, unless `--force`; local copies keep the source's time and a rerun skips them.

mod common;

use std::path::Path;
use std::time::{Duration, SystemTime};

use common::{bare_parabyte, run, stderr, summary, Bed};
use parabyte::Timestamp;
use parabyte_testkit::{payload, Fault, Rule, ServerKind, Serving, WebServer};

const MIB: u64 = 1 << 20;

fn modified(path: &Path) -> SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

fn set_modified(path: &Path, time: SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(time)
        .unwrap();
}

/// Each key's LastModified as `ls --recursive --json` reports it.
fn listed_times(bed: &Bed, prefix: &str) -> Vec<(String, SystemTime)> {
    let output = run(bed
        .parabyte()
        .args(["ls", "--recursive", "--json", &bed.url(prefix)]));
    assert!(output.status.success(), "{}", stderr(&output));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            let entry: serde_json::Value = serde_json::from_str(line).unwrap();
            let time = Timestamp::parse_iso8601(entry["last_modified"].as_str().unwrap());
            (
                entry["key"].as_str().unwrap().to_owned(),
                SystemTime::from(time.unwrap()),
            )
        })
        .collect()
}

/// Whole seconds since the epoch, as `aws s3 sync` and HTTP dates compare times.
fn seconds(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn downloads_take_the_objects_last_modified_time() {
    let bed = Bed::new(ServerKind::Versitygw, "mtimes");
    bed.admin
        .put_generated(&bed.bucket, "set/small", 1, 1000)
        .unwrap();
    bed.admin
        .put_generated(&bed.bucket, "set/large", 2, 3 * MIB)
        .unwrap();
    bed.admin
        .put_generated(&bed.bucket, "set/resumed", 3, 3 * MIB + 5)
        .unwrap();
    let broken = bed.proxy.inject(
        Rule::get().key_contains("resumed").range_start(MIB),
        Fault::error(500, "InternalError"),
    );
    let copy = || {
        run(bed.parabyte().args([
            "cp",
            "--json",
            "--part-size",
            "1MiB",
            "--retries",
            "0",
            &bed.url("set/"),
            "out",
        ]))
    };
    assert_eq!(copy().status.code(), Some(1));
    broken.remove();
    let second = copy();
    assert!(second.status.success(), "{}", stderr(&second));
    assert_eq!(summary(&second)["resumed"], 1);
    for (key, time) in listed_times(&bed, "set/") {
        let name = key.strip_prefix("set/").unwrap();
        assert_eq!(modified(&bed.path("out").join(name)), time, "{key}");
    }

    // One object without a listing: the time from its response's Last-Modified.
    let single = run(bed
        .parabyte()
        .args(["cp", &bed.url("set/large"), "one.bin"]));
    assert!(single.status.success(), "{}", stderr(&single));
    let listed = listed_times(&bed, "set/large")[0].1;
    assert_eq!(seconds(modified(&bed.path("one.bin"))), seconds(listed));

    // One object resumed from its journal, without a listing: the time from the responses
    // for its missing parts.
    let broken = bed.proxy.inject(
        Rule::get().key_contains("resumed").range_start(2 * MIB),
        Fault::error(500, "InternalError"),
    );
    let single = || {
        run(bed.parabyte().args([
            "cp",
            "--json",
            "--part-size",
            "1MiB",
            "--retries",
            "0",
            &bed.url("set/resumed"),
            "again.bin",
        ]))
    };
    assert_eq!(single().status.code(), Some(1));
    broken.remove();
    let again = single();
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(summary(&again)["resumed"], 1);
    let listed = listed_times(&bed, "set/resumed")[0].1;
    assert_eq!(seconds(modified(&bed.path("again.bin"))), seconds(listed));

    // A web server's file: its Last-Modified.
    let server = WebServer::start().unwrap_or_else(|e| panic!("{e}"));
    let file = server.root().join("page.bin");
    std::fs::write(&file, payload(4, 2 * MIB as usize)).unwrap();
    let then = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    set_modified(&file, then);
    let web = bare_parabyte(bed.dir.path())
        .args(["cp", &server.url(Serving::Ranges, "page.bin"), "page.bin"])
        .output()
        .unwrap();
    assert!(web.status.success(), "{}", stderr(&web));
    assert_eq!(modified(&bed.path("page.bin")), then);
}

#[test]
fn a_file_another_tool_downloaded_is_skipped_unless_forced() {
    let bed = Bed::new(ServerKind::Versitygw, "other-tool");
    for (i, size) in [(0u64, 10u64), (1, 300_000), (2, 2 * MIB), (3, 100)] {
        bed.admin
            .put_generated(&bed.bucket, &format!("set/f{i}"), i, size)
            .unwrap();
    }
    let times = listed_times(&bed, "set/");
    // What `aws s3 sync` leaves: the bytes, the object's time, no parabyte mark. f2 has its
    // size and time but other bytes: judged by size and time, it passes too (as it does
    // for aws s3 sync). f3 has another time: fetched.
    let out = bed.path("out");
    std::fs::create_dir_all(&out).unwrap();
    for (key, time) in &times {
        let name = key.strip_prefix("set/").unwrap();
        let seed = name[1..].parse::<u64>().unwrap();
        let size = [10, 300_000, 2 * MIB as usize, 100][seed as usize];
        let bytes = if name == "f2" {
            payload(99, size)
        } else {
            payload(seed, size)
        };
        std::fs::write(out.join(name), bytes).unwrap();
        let shift = if name == "f3" {
            Duration::from_secs(1)
        } else {
            Duration::ZERO
        };
        set_modified(&out.join(name), *time + shift);
    }
    bed.proxy.reset();
    let rerun = run(bed
        .parabyte()
        .args(["cp", "--json", &bed.url("set/"), "out"]));
    assert!(rerun.status.success(), "{}", stderr(&rerun));
    let json = summary(&rerun);
    assert_eq!(
        (
            json["objects"].as_u64(),
            json["skipped"].as_u64(),
            json["skipped_by_size_and_time"].as_u64()
        ),
        (Some(1), Some(3), Some(3)),
        "{json}"
    );
    let fetched: Vec<_> = bed.proxy.requests().iter().map(|r| r.key()).collect();
    assert_eq!(
        fetched.iter().filter(|k| k.contains("set/")).count(),
        1,
        "{fetched:?}"
    );
    assert!(fetched.iter().any(|k| k == "set/f3"), "{fetched:?}");
    assert!(std::fs::read(out.join("f2")).unwrap() == payload(99, 2 * MIB as usize));

    // The text summary says why.
    let text = run(bed.parabyte().args(["cp", &bed.url("set/f0"), "out/f0"]));
    assert!(
        stderr(&text).contains(
            "1 already complete and skipped (1 of them by size and modification time alone)"
        ),
        "{}",
        stderr(&text)
    );

    let forced = run(bed
        .parabyte()
        .args(["cp", "--json", "--force", &bed.url("set/"), "out"]));
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert_eq!(summary(&forced)["objects"], 4);
    assert!(std::fs::read(out.join("f2")).unwrap() == payload(2, 2 * MIB as usize));
}

#[test]
fn a_local_rerun_skips_files_whose_size_and_time_match() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    std::fs::write(src.join("a.txt"), b"hello").unwrap();
    std::fs::write(src.join("sub/big.bin"), payload(1, 3 * MIB as usize)).unwrap();
    let old = SystemTime::UNIX_EPOCH + Duration::from_nanos(1_500_000_000_123_456_789);
    set_modified(&src.join("a.txt"), old);
    let copy = |extra: &[&str]| {
        let mut command = bare_parabyte(dir.path());
        command.args(["cp", "--json", "--part-size", "1MiB"]);
        command.args(extra).args(["src", "dst"]);
        command.output().unwrap()
    };
    let first = copy(&[]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(summary(&first)["objects"], 2);
    for name in ["a.txt", "sub/big.bin"] {
        assert_eq!(
            modified(&dir.path().join("dst").join(name)),
            modified(&src.join(name)),
            "{name} keeps its time"
        );
    }

    let second = copy(&[]);
    let json = summary(&second);
    assert_eq!(
        (json["objects"].as_u64(), json["skipped"].as_u64()),
        (Some(0), Some(2)),
        "{json}"
    );
    assert_eq!(json["skipped_by_size_and_time"], 2);

    // A source edited since (same size, new time) is copied again; so is all with --force.
    std::fs::write(src.join("a.txt"), b"HELLO").unwrap();
    let third = summary(&copy(&[]));
    assert_eq!(
        (third["objects"].as_u64(), third["skipped"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        std::fs::read(dir.path().join("dst/a.txt")).unwrap(),
        b"HELLO"
    );
    let forced = summary(&copy(&["--force"]));
    assert_eq!(
        (forced["objects"].as_u64(), forced["skipped"].as_u64()),
        (Some(2), Some(0))
    );
}

/// An upload keeps its file's time in the object, and a download gives it back to the
/// nanosecond, from the GETs it sends anyway. Every object is newer than its file then, yet
/// syncing the tree down again fetches nothing (each file's mark names its version), and
/// syncing it back up sends nothing.
fn an_uploaded_files_time_comes_back_with_it(kind: ServerKind) {
    let bed = Bed::new(kind, "mtime-back");
    let old = SystemTime::UNIX_EPOCH + Duration::new(1_500_000_000, 123_456_789);
    let files = [("a.txt", 1000), ("sub/b.bin", 3 * MIB as usize + 5)];
    for (i, (name, size)) in files.iter().enumerate() {
        let path = bed.path("up").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, payload(i as u64, *size)).unwrap();
        set_modified(&path, old);
    }
    let tree = bed.url("tree/");
    let up = run(bed.parabyte().args(["cp", "-r", "up", &tree]));
    assert!(up.status.success(), "{}", stderr(&up));

    let single = run(bed.parabyte().args([
        "cp",
        "--part-size",
        "1MiB",
        &bed.url("tree/sub/b.bin"),
        "one.bin",
    ]));
    assert!(single.status.success(), "{}", stderr(&single));
    assert_eq!(modified(&bed.path("one.bin")), old);

    let sync = |args: &[&str]| {
        let output = run(bed.parabyte().arg("sync").arg("--json").args(args));
        assert!(output.status.success(), "{}", stderr(&output));
        summary(&output)
    };
    let down = sync(&["--part-size", "1MiB", &tree, "down"]);
    assert_eq!(down["objects"], 2);
    for (name, _) in files {
        assert_eq!(modified(&bed.path("down").join(name)), old, "{name}");
    }
    let gets_before = bed.proxy.counts().get;
    let again = sync(&[&tree, "down"]);
    assert_eq!(
        (again["objects"].as_u64(), again["skipped"].as_u64()),
        (Some(0), Some(2))
    );
    assert_eq!(again["requests"]["get"], 0);
    assert_eq!(
        bed.proxy.counts().get,
        gets_before,
        "the second sync fetched"
    );

    let writes_before = bed.proxy.counts();
    let back = sync(&["down", &tree]);
    assert_eq!(
        (back["objects"].as_u64(), back["skipped"].as_u64()),
        (Some(0), Some(2))
    );
    let writes = bed.proxy.counts();
    assert_eq!(
        (writes.put, writes.other),
        (writes_before.put, writes_before.other),
        "the sync up sent"
    );
}

#[test]
fn an_uploaded_files_time_comes_back_with_it_versitygw() {
    an_uploaded_files_time_comes_back_with_it(ServerKind::Versitygw);
}

#[test]
fn an_uploaded_files_time_comes_back_with_it_minio() {
    an_uploaded_files_time_comes_back_with_it(ServerKind::Minio);
}

/// A stored time is taken only in the form parabyte and rclone write (whole seconds, or
/// with a fraction, negative before 1970); anything else another writer put there leaves the object's
/// Last-Modified, and the download goes on.
fn a_stored_time_counts_only_when_it_reads_as_one(kind: ServerKind) {
    let bed = Bed::new(kind, "mtime-meta");
    let stored = [
        ("garbage", "yesterday"),
        ("negative", "-1500000000.25"),
        ("absurd", "99999999999999"),
        ("rclone", "1500000000.5"),
        ("whole", "1500000000"),
    ];
    for (i, (key, value)) in stored.iter().enumerate() {
        bed.admin
            .block_on(
                bed.admin
                    .client()
                    .request(http::Method::PUT, &bed.bucket, &format!("m/{key}"))
                    .header("x-amz-meta-mtime", value)
                    .body(payload(i as u64, 1000))
                    .send(),
            )
            .unwrap();
    }
    let output = run(bed.parabyte().args(["cp", &bed.url("m/"), "out"]));
    assert!(output.status.success(), "{}", stderr(&output));
    let single = run(bed
        .parabyte()
        .args(["cp", &bed.url("m/garbage"), "one.bin"]));
    assert!(single.status.success(), "{}", stderr(&single));
    let listed: std::collections::HashMap<String, SystemTime> =
        listed_times(&bed, "m/").into_iter().collect();
    for key in ["garbage", "absurd"] {
        let time = modified(&bed.path("out").join(key));
        assert_eq!(time, listed[&format!("m/{key}")], "{key}");
    }
    assert_eq!(
        seconds(modified(&bed.path("one.bin"))),
        seconds(listed["m/garbage"])
    );
    let epoch = SystemTime::UNIX_EPOCH;
    assert_eq!(
        modified(&bed.path("out/rclone")),
        epoch + Duration::new(1_500_000_000, 500_000_000)
    );
    assert_eq!(
        modified(&bed.path("out/whole")),
        epoch + Duration::from_secs(1_500_000_000)
    );
    assert_eq!(
        modified(&bed.path("out/negative")),
        epoch - Duration::new(1_500_000_000, 250_000_000)
    );
}

#[test]
fn a_stored_time_counts_only_when_it_reads_as_one_versitygw() {
    a_stored_time_counts_only_when_it_reads_as_one(ServerKind::Versitygw);
}

#[test]
fn a_stored_time_counts_only_when_it_reads_as_one_minio() {
    a_stored_time_counts_only_when_it_reads_as_one(ServerKind::Minio);
}
