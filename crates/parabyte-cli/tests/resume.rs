//! Running the same command again: files an earlier run completed are skipped while the
//! object is the same version, and a large object that stopped part-way resumes from the
//! parts already written.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::{files_under, run, stderr, summary, temporary_name, wait_for, wait_for_exit, Bed};
use parabyte_testkit::{payload, payload_at, AfterStall, Fault, RequestKind, Rule, ServerKind};

const MIB: u64 = 1 << 20;

fn copy_prefix(bed: &Bed, extra: &[&str]) -> std::process::Output {
    let source = bed.url("set/");
    let mut args = vec!["cp", "--json", "--part-size", "1MiB"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[source.as_str(), "out"]);
    run(bed.parabyte().args(args))
}

#[test]
fn a_second_run_skips_what_is_complete_and_fetches_what_changed() {
    let bed = Bed::new(ServerKind::Versitygw, "rerun");
    for (i, size) in [10u64, 300_000, 3 * MIB].into_iter().enumerate() {
        bed.admin
            .put_generated(&bed.bucket, &format!("set/f{i}"), i as u64, size)
            .unwrap();
    }
    let first = copy_prefix(&bed, &[]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(summary(&first)["objects"], 3);

    bed.proxy.reset();
    let second = copy_prefix(&bed, &[]);
    assert!(second.status.success(), "{}", stderr(&second));
    let report = summary(&second);
    assert_eq!(
        (report["objects"].as_u64(), report["skipped"].as_u64()),
        (Some(0), Some(3))
    );
    assert_eq!(bed.proxy.counts().get, 0, "nothing fetched again");

    // A file edited locally, and an object replaced in the store, are fetched again.
    std::fs::write(bed.path("out/f0"), b"edited here").unwrap();
    bed.admin
        .put_generated(&bed.bucket, "set/f1", 99, 300_000)
        .unwrap();
    let third = copy_prefix(&bed, &[]);
    let report = summary(&third);
    assert_eq!(
        (report["objects"].as_u64(), report["skipped"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(std::fs::read(bed.path("out/f0")).unwrap(), payload(0, 10));
    assert_eq!(
        std::fs::read(bed.path("out/f1")).unwrap(),
        payload(99, 300_000)
    );

    let forced = copy_prefix(&bed, &["--force"]);
    assert_eq!(summary(&forced)["objects"], 3, "--force fetches everything");
}

#[test]
fn a_large_object_that_failed_resumes_from_its_finished_parts() {
    let bed = Bed::new(ServerKind::Versitygw, "resume-fail");
    const SIZE: u64 = 8 * MIB + 5;
    bed.admin
        .put_generated(&bed.bucket, "set/big", 3, SIZE)
        .unwrap();
    // The part at 5 MiB always fails; the other eight arrive.
    let broken = bed.proxy.inject(
        Rule::get().range_start(5 * MIB),
        Fault::error(500, "InternalError"),
    );
    let failed = copy_prefix(&bed, &["--retries", "1"]);
    assert_eq!(failed.status.code(), Some(1), "{}", stderr(&failed));
    assert!(broken.fired() >= 2);
    assert_only_a_temporary_file(&bed.path("out"), "no final name, the finished parts kept");

    broken.remove();
    bed.proxy.reset();
    let resumed = copy_prefix(&bed, &[]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let requests = bed.proxy.requests();
    let ranges: Vec<_> = requests.iter().filter_map(|r| r.range.clone()).collect();
    assert_eq!(
        ranges,
        vec![format!("bytes={}-{}", 5 * MIB, 6 * MIB - 1)],
        "only the missing part is fetched"
    );
    assert!(std::fs::read(bed.path("out/big")).unwrap() == payload(3, SIZE as usize));
    assert_eq!(
        summary(&resumed)["verified"]["checksum"],
        1,
        "the whole file, old parts (read back) and new, checked by the store's CRC"
    );
    assert_eq!(files_under(&bed.path("out")), vec!["big"]);
}

/// `dir` holds one file, hidden under a temporary name (`.parabyte-<hex>.tmp`).
fn assert_only_a_temporary_file(dir: &std::path::Path, why: &str) {
    let files = files_under(dir);
    assert!(
        files.len() == 1 && files[0].starts_with(".parabyte-") && files[0].ends_with(".tmp"),
        "{why}: {files:?}"
    );
}

const INTERRUPTED_SIZE: u64 = 6 * MIB;
/// Far above what any awaited event needs, far below the 60 s stall.
const EVENT_LIMIT: Duration = Duration::from_secs(20);

/// Bytes the journal on a temporary file vouches for (`ETAG\nSIZE\nSTART-END,...`, ends
/// exclusive): what a later run will not fetch again. 0 while there is no journal.
fn journaled_bytes(temp: &Path) -> u64 {
    let Ok(Some(journal)) = xattr::get(temp, "user.parabyte.journal") else {
        return 0;
    };
    let journal = String::from_utf8_lossy(&journal);
    let ranges = journal.splitn(3, '\n').nth(2).unwrap_or_default();
    ranges
        .split(',')
        .filter_map(|stretch| stretch.split_once('-'))
        .map(|(start, end)| end.parse::<u64>().unwrap() - start.parse::<u64>().unwrap())
        .sum()
}

/// Bytes of the part at 2 MiB that arrive before it hangs: five 128 KiB writes.
const ARRIVED: u64 = 640 << 10;
/// The most body bytes a range gathers before writing them.
const WRITE_BUFFER: u64 = 128 << 10;

/// `length` bytes of `path` from `offset`, fewer where the file ends (or is not there).
fn read_at(path: &Path, offset: u64, length: usize) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let mut bytes = vec![0; length];
    let read = file.read_at(&mut bytes, offset).unwrap_or(0);
    bytes.truncate(read);
    bytes
}

/// `set/big` (6 MiB) downloaded by `cp SOURCE DEST` in 1 MiB parts, interrupted with
/// SIGINT while the part at 2 MiB hangs after [`ARRIVED`] bytes and the five others are in.
/// Returns the bytes the temporary file's journal vouches for after the interrupt.
fn interrupt_a_download(bed: &Bed, source: &str, destination: &str) -> u64 {
    bed.admin
        .put_generated(&bed.bucket, "set/big", 4, INTERRUPTED_SIZE)
        .unwrap();
    bed.proxy.inject(
        Rule::get().range_start(2 * MIB),
        Fault::stall_after(ARRIVED, Duration::from_secs(60), AfterStall::Close),
    );
    let mut child = bed
        .parabyte_process(bed.server.secret_key())
        .args(["cp", "--part-size", "1MiB", source, destination])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let temp = bed.path("out").join(temporary_name("big"));
    wait_for("the five other parts journaled", EVENT_LIMIT, || {
        journaled_bytes(&temp) >= INTERRUPTED_SIZE - MIB
    });
    // The hanging part's bytes may still sit in the socket when the others are in: wait
    // until all but the last write buffer of them are in the file.
    let written = (ARRIVED - WRITE_BUFFER) as usize;
    wait_for("the hanging part's bytes written", EVENT_LIMIT, || {
        read_at(&temp, 2 * MIB, written) == payload_at(4, 2 * MIB, written)
    });
    // SAFETY: kill only sends a signal to the child we spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    assert_eq!(wait_for_exit(&mut child, EVENT_LIMIT).code(), Some(130));
    assert_only_a_temporary_file(&bed.path("out"), "interrupted: only the parts kept");
    // The hanging part's bytes that reached the file are journaled too: at most the one
    // write buffer still filling was lost.
    let kept = journaled_bytes(&temp);
    let at_least = INTERRUPTED_SIZE - MIB + ARRIVED - WRITE_BUFFER;
    assert!(
        (at_least..=INTERRUPTED_SIZE - MIB + ARRIVED).contains(&kept),
        "journaled {kept} bytes"
    );
    bed.proxy.clear_faults();
    bed.proxy.reset();
    kept
}

#[test]
fn an_interrupted_download_resumes_where_it_stopped() {
    let bed = Bed::new(ServerKind::Versitygw, "resume-signal");
    const SIZE: u64 = INTERRUPTED_SIZE;
    let kept = interrupt_a_download(&bed, &bed.url("set/"), "out");
    let resumed = copy_prefix(&bed, &[]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(
        bed.proxy.counts().get,
        1,
        "only the rest of the part that hung"
    );
    assert_eq!(summary(&resumed)["bytes"], SIZE - kept);
    // Asked for, not only counted: the ranges the GETs named add up to what the journal
    // lacked, nothing fetched twice.
    assert_eq!(
        bytes_asked(&bed),
        SIZE - kept,
        "bytes asked for against bytes missing"
    );
    assert!(std::fs::read(bed.path("out/big")).unwrap() == payload(4, SIZE as usize));
}

/// The bytes the GETs through the proxy asked for, by their ranges.
fn bytes_asked(bed: &Bed) -> u64 {
    bed.proxy
        .requests()
        .iter()
        .filter(|request| request.kind == RequestKind::Get)
        .map(|request| range_length(request.range.as_deref().expect("a ranged GET")))
        .sum()
}

/// The length a `bytes=START-END` range names.
fn range_length(range: &str) -> u64 {
    let (start, end) = range
        .trim_start_matches("bytes=")
        .split_once('-')
        .expect("bytes=START-END");
    end.parse::<u64>().unwrap() - start.parse::<u64>().unwrap() + 1
}

#[test]
fn a_single_object_resumes_from_its_journal_without_a_probe() {
    let bed = Bed::new(ServerKind::Versitygw, "resume-single");
    let kept = interrupt_a_download(&bed, &bed.url("set/big"), "out/big");
    let resume_at = 2 * MIB + kept - (INTERRUPTED_SIZE - MIB);
    // Default 8 MiB parts this time: the journal, not the part size, says what is missing.
    let resumed = run(bed
        .parabyte()
        .args(["cp", "--json", &bed.url("set/big"), "out/big"]));
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let sent = bed.proxy.requests();
    assert_eq!(
        sent.first().map(|request| request.kind),
        Some(RequestKind::Get),
        "the journal holds the size and version: the GET goes first, the HEAD for the checksum after it: {sent:?}"
    );
    let requests: Vec<_> = sent
        .into_iter()
        .filter(|request| request.kind == RequestKind::Get)
        .collect();
    assert_eq!(
        requests.len(),
        1,
        "no probe, only the part that hung: {requests:?}"
    );
    assert_eq!(
        summary(&resumed)["verified"]["checksum"],
        1,
        "checked by the store's CRC, the earlier run's bytes read back"
    );
    assert_eq!(
        requests[0].range.as_deref(),
        Some(format!("bytes={resume_at}-{}", 3 * MIB - 1).as_str()),
        "from the byte where the part stopped"
    );
    assert!(
        requests[0].if_match.is_some(),
        "pinned to the interrupted version"
    );
    assert_eq!(summary(&resumed)["bytes"], 3 * MIB - resume_at);
    assert!(std::fs::read(bed.path("out/big")).unwrap() == payload(4, INTERRUPTED_SIZE as usize));
    assert_eq!(files_under(&bed.path("out")), vec!["big"]);
}

#[test]
fn a_journal_for_a_version_that_is_gone_restarts_the_object_whole() {
    let bed = Bed::new(ServerKind::Versitygw, "resume-changed");
    interrupt_a_download(&bed, &bed.url("set/big"), "out/big");
    bed.admin
        .put_generated(&bed.bucket, "set/big", 5, INTERRUPTED_SIZE)
        .unwrap();
    let resumed = run(bed
        .parabyte()
        .args(["cp", "--json", &bed.url("set/big"), "out/big"]));
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let statuses: Vec<_> = bed
        .proxy
        .requests()
        .iter()
        .map(|r| r.range.clone())
        .collect();
    assert!(
        std::fs::read(bed.path("out/big")).unwrap() == payload(5, INTERRUPTED_SIZE as usize),
        "the new version whole, nothing of the old: {statuses:?}"
    );
    assert_eq!(summary(&resumed)["bytes"], INTERRUPTED_SIZE);
    assert_eq!(files_under(&bed.path("out")), vec!["big"]);
}

/// At default settings (8 MiB parts, 16 ranges), Ctrl-C while every part is mid-body: the
/// next run fetches only what had not reached the file. Before the journal recorded writes
/// as they landed, no part had finished, so nothing was kept and all of it came again.
#[test]
fn ctrl_c_at_default_settings_keeps_every_byte_that_reached_the_file() {
    let bed = Bed::new(ServerKind::Versitygw, "resume-default");
    const SIZE: u64 = 48 * MIB;
    const ARRIVES: u64 = 3 * MIB;
    bed.admin
        .put_generated(&bed.bucket, "set/big", 6, SIZE)
        .unwrap();
    let stall = bed.proxy.inject(
        Rule::get(),
        Fault::stall_after(ARRIVES, Duration::from_secs(60), AfterStall::Close),
    );
    let mut child = bed
        .parabyte_process(bed.server.secret_key())
        .args(["cp", &bed.url("set/big"), "out/big"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let temp = bed.path("out").join(temporary_name("big"));
    let parts = SIZE / (8 * MIB);
    wait_for("every part stalled", EVENT_LIMIT, || stall.fired() == parts);
    // The journal on the file follows the writes every 4 MiB: 16 of the 18 MiB that
    // arrive are on record while the parts hang, none of them a finished part.
    let on_record = 16 * MIB;
    wait_for("16 MiB journaled", EVENT_LIMIT, || {
        journaled_bytes(&temp) >= on_record
    });
    // SAFETY: kill only sends a signal to the child we spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    assert_eq!(wait_for_exit(&mut child, EVENT_LIMIT).code(), Some(130));
    let kept = journaled_bytes(&temp);
    assert!(
        (on_record..=parts * ARRIVES).contains(&kept),
        "journaled {kept} bytes of {} that arrived",
        parts * ARRIVES
    );
    bed.proxy.clear_faults();
    bed.proxy.reset();
    let resumed = run(bed
        .parabyte()
        .args(["cp", "--json", &bed.url("set/big"), "out/big"]));
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(
        summary(&resumed)["bytes"],
        SIZE - kept,
        "only what was missing"
    );
    assert_eq!(
        bytes_asked(&bed),
        SIZE - kept,
        "bytes asked for against bytes missing"
    );
    assert!(std::fs::read(bed.path("out/big")).unwrap() == payload(6, SIZE as usize));
    assert_eq!(files_under(&bed.path("out")), vec!["big"]);
}
