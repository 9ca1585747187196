//! Interrupts and local failures: a stopped or failed download leaves nothing under a final
//! name; a stopped one keeps what reached its temporary file to resume from, and says so.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{files_under, run, stderr, wait_for, wait_for_exit, Bed};
use parabyte_testkit::{payload, AfterStall, Fault, Rule, ServerKind};

/// Far above what any awaited event needs, far below the 60 s stall.
const EVENT_LIMIT: Duration = Duration::from_secs(20);

fn interrupt_mid_download(signal: i32, expected_status: i32) {
    let bed = Bed::new(ServerKind::Versitygw, "interrupt");
    bed.admin
        .put_generated(&bed.bucket, "big.bin", 1, 8 << 20)
        .unwrap();
    bed.admin
        .put_object(&bed.bucket, "small.txt", payload(2, 10))
        .unwrap();
    // Every part of big.bin stalls after its first 64 KiB, for longer than the test waits;
    // small.txt arrives at once.
    let stall = bed.proxy.inject(
        Rule::get().key_contains("big.bin"),
        Fault::stall_after(64 << 10, Duration::from_secs(60), AfterStall::Close),
    );
    let mut child = bed
        .parabyte_process(bed.server.secret_key())
        .args(["cp", "--part-size", "1MiB", &bed.url(""), "out"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("small.txt to arrive", EVENT_LIMIT, || {
        bed.path("out/small.txt").exists()
    });
    wait_for("big.bin to be mid-body", EVENT_LIMIT, || stall.fired() > 0);
    // SAFETY: kill only sends a signal to the child we spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    // Well before the stall ends by itself: the signal stopped it, not the stall.
    let status = wait_for_exit(&mut child, EVENT_LIMIT);
    assert_eq!(status.code(), Some(expected_status));
    let mut said = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut said).unwrap();
    // Finished objects stay; nothing partial under a final name. What reached big.bin's
    // temporary file (its parts' first bytes, when a write buffer filled) is kept hidden
    // to resume from, and the message says so only when it was.
    let files = files_under(&bed.path("out"));
    let hidden: Vec<_> = files
        .iter()
        .filter(|f| f.starts_with(".parabyte-"))
        .collect();
    let shown: Vec<_> = files
        .iter()
        .filter(|f| !f.starts_with(".parabyte-"))
        .collect();
    assert_eq!(shown, ["small.txt"], "{files:?}");
    match hidden.as_slice() {
        [] => assert!(said.contains("nothing unfinished was kept"), "{said}"),
        [temp] => {
            assert!(temp.ends_with(".tmp"), "{temp}");
            assert!(
                said.contains("1 unfinished download(s) keep what they fetched"),
                "{said}"
            );
        }
        more => panic!("one object, {more:?}"),
    }
}

#[test]
fn ctrl_c_stops_a_stalled_download_and_cleans_up() {
    interrupt_mid_download(libc::SIGINT, 130);
}

#[test]
fn sigterm_stops_a_stalled_download_and_cleans_up() {
    interrupt_mid_download(libc::SIGTERM, 143);
}

/// Mount a small tmpfs (the tests run as root, as CI does) and unmount it on drop.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(options: &str) -> SmallDisk {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(
            status.success(),
            "mounting a tmpfs needs root (CI runs as root)"
        );
        SmallDisk { dir }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

#[test]
fn a_full_disk_fails_the_object_clearly_and_removes_the_temp_file() {
    let bed = Bed::new(ServerKind::Versitygw, "diskfull");
    bed.admin
        .put_generated(&bed.bucket, "d/big.bin", 1, 3 << 20)
        .unwrap();
    bed.admin
        .put_object(&bed.bucket, "d/small.txt", payload(2, 1000))
        .unwrap();
    let disk = SmallDisk::mount("size=1m");
    let output = run(bed
        .parabyte()
        .args(["cp", &bed.url("d/")])
        .arg(disk.dir.path()));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains("s3://")
            && text.contains("big.bin")
            && text.contains("No space left on device"),
        "{text}"
    );
    assert_eq!(files_under(disk.dir.path()), vec!["small.txt"]);
}

#[test]
fn a_read_only_destination_fails_before_any_get() {
    let bed = Bed::new(ServerKind::Versitygw, "readonly");
    bed.admin
        .put_object(&bed.bucket, "k", payload(1, 100))
        .unwrap();
    let disk = SmallDisk::mount("size=1m,ro");
    let output = run(bed
        .parabyte()
        .args(["cp", &bed.url("k")])
        .arg(disk.dir.path().join("k")));
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    let named = format!("'{}'", disk.dir.path().join("k").display());
    assert!(
        text.contains("Read-only file system") && text.contains(&named),
        "{text}"
    );
    assert_eq!(bed.proxy.counts().get, 0, "refused before any GET");
}
