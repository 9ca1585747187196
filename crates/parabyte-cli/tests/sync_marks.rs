//! What `sync` believes without reading: a file edited in place with its size and mtime
//! kept is seen by `--checksum` up and down (the marks that spare a read hold only while
//! the ctime shows no change), and a file dated in the future or before 1970 is sent once,
//! its time stored and given back with it.

mod common;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{run, stderr, summary, Bed};
use parabyte_testkit::ServerKind;

/// `parabyte sync ARGS --json`, which must exit 0; its summary.
fn sync(bed: &Bed, args: &[&str]) -> serde_json::Value {
    let output = run(bed.parabyte().arg("sync").arg("--json").args(args));
    assert!(output.status.success(), "{}", stderr(&output));
    summary(&output)
}

fn counts(summary: &serde_json::Value, request: &str) -> (Option<u64>, Option<u64>) {
    (
        summary["requests"][request].as_u64(),
        summary["skipped"].as_u64(),
    )
}

fn set_modified(path: &Path, time: SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(time)
        .unwrap();
}

/// Other bytes of the same length written over `path`, its mtime put back as it was (as
/// `touch -r` does), once the clock the kernel stamps ctimes with is past any deadline
/// of a mark written so far (10 ms after it was written).
fn edit_in_place_keeping_size_and_mtime(path: &Path, text: &str) {
    let coarse_now = || {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a valid timespec for the call to fill.
        assert_eq!(
            unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut now) },
            0
        );
        Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
    };
    let deadline =
        SystemTime::now().duration_since(UNIX_EPOCH).unwrap() + Duration::from_millis(10);
    while coarse_now() <= deadline {
        std::hint::spin_loop();
    }
    let before = std::fs::metadata(path).unwrap();
    assert_eq!(before.len(), text.len() as u64);
    std::fs::write(path, text).unwrap();
    set_modified(path, before.modified().unwrap());
    assert_eq!(
        std::fs::metadata(path).unwrap().modified().unwrap(),
        before.modified().unwrap()
    );
}

#[test]
fn checksum_sees_an_edit_in_place_that_keeps_size_and_mtime_up_and_down() {
    let bed = Bed::new(ServerKind::Minio, "sync-marks");
    let (up, down) = (bed.path("up"), bed.path("down"));
    std::fs::create_dir_all(&up).unwrap();
    std::fs::write(up.join("f"), "0123456789").unwrap();
    let (up_text, down_text, to) = (up.to_str().unwrap(), down.to_str().unwrap(), bed.url("c/"));
    sync(&bed, &[up_text, &to]);
    // Read once, found the same, and marked with its CRC.
    let unchanged = sync(&bed, &["--checksum", up_text, &to]);
    assert_eq!(counts(&unchanged, "put"), (Some(0), Some(1)));
    edit_in_place_keeping_size_and_mtime(&up.join("f"), "ABCDEFGHIJ");
    let edited = sync(&bed, &["--checksum", up_text, &to]);
    assert_eq!(counts(&edited, "put"), (Some(1), Some(0)), "sent up again");

    sync(&bed, &[&to, down_text]);
    assert_eq!(
        std::fs::read_to_string(down.join("f")).unwrap(),
        "ABCDEFGHIJ"
    );
    edit_in_place_keeping_size_and_mtime(&down.join("f"), "abcdefghij");
    let edited = sync(&bed, &["--checksum", &to, down_text]);
    assert_eq!(counts(&edited, "get"), (Some(1), Some(0)), "fetched again");
    assert_eq!(
        std::fs::read_to_string(down.join("f")).unwrap(),
        "ABCDEFGHIJ"
    );
    let unchanged = sync(&bed, &["--checksum", &to, down_text]);
    assert_eq!(counts(&unchanged, "get"), (Some(0), Some(1)));
}

#[test]
fn a_file_dated_in_the_future_or_before_1970_is_sent_once_and_keeps_its_time() {
    let bed = Bed::new(ServerKind::Versitygw, "sync-dates");
    let (up, down) = (bed.path("up"), bed.path("down"));
    std::fs::create_dir_all(&up).unwrap();
    let future = UNIX_EPOCH + Duration::new(4_102_444_800, 250_000_000); // 2100
    let past = UNIX_EPOCH - Duration::new(86_400 * 365, 750_000_000); // 1969
    for (name, time) in [("future", future), ("past", past)] {
        std::fs::write(up.join(name), name).unwrap();
        set_modified(&up.join(name), time);
    }
    let (up_text, down_text, to) = (up.to_str().unwrap(), down.to_str().unwrap(), bed.url("d/"));
    assert_eq!(
        counts(&sync(&bed, &[up_text, &to]), "put"),
        (Some(2), Some(0))
    );
    let again = sync(&bed, &[up_text, &to]);
    assert_eq!(
        counts(&again, "put"),
        (Some(0), Some(2)),
        "nothing sent again"
    );
    sync(&bed, &[&to, down_text]);
    for (name, time) in [("future", future), ("past", past)] {
        let modified = std::fs::metadata(down.join(name))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(modified, time, "{name}");
    }
    let again = sync(&bed, &[&to, down_text]);
    assert_eq!(
        counts(&again, "get"),
        (Some(0), Some(2)),
        "nothing fetched again"
    );
}

/// `--checksum` compares contents down too: a file no parabyte run marked, of the object's
/// size and time but other bytes, is fetched; and a dry run reads what it must but leaves
/// no mark on the files it read.
#[test]
fn checksum_down_fetches_other_bytes_of_equal_size_and_time_and_a_dry_run_marks_nothing() {
    let bed = Bed::new(ServerKind::Versitygw, "sync-contents");
    let (up, down) = (bed.path("up"), bed.path("down"));
    std::fs::create_dir_all(&up).unwrap();
    std::fs::write(up.join("f"), "the object").unwrap();
    let tree = bed.url("t/");
    sync(&bed, &[up.to_str().unwrap(), &tree]);
    sync(&bed, &[&tree, down.to_str().unwrap()]);
    let file = down.join("f");
    let time = std::fs::metadata(&file).unwrap().modified().unwrap();
    // Another tool's file: no mark, the object's size and time, other bytes.
    std::fs::remove_file(&file).unwrap();
    std::fs::write(&file, "other byte").unwrap();
    set_modified(&file, time);
    let fetched = sync(&bed, &["--checksum", &tree, down.to_str().unwrap()]);
    assert_eq!(fetched["objects"], 1, "{fetched}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "the object");

    // Up, a file of the key's size: its CRC is read, and a dry run keeps no mark of it.
    std::fs::write(up.join("f"), "other byte").unwrap();
    let dry = run(bed.parabyte().args([
        "sync",
        "--checksum",
        "--dryrun",
        up.to_str().unwrap(),
        &tree,
    ]));
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert!(
        stderr(&dry).contains("1 object(s) would be copied"),
        "{}",
        stderr(&dry)
    );
    let marks: Vec<_> = xattr::list(up.join("f")).unwrap().collect();
    assert!(marks.is_empty(), "{marks:?}");
}
