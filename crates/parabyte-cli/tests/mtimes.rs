//! Files people already have: a download takes the object's Last-Modified as its
//! modification time (small, large, resumed, single objects and web files alike), so a file
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
