//! Names and runs that share a destination: keys shaped like temporary names, long names
//! with a common beginning, names that differ only in non-UTF-8 bytes, and two `parabyte`
//! processes writing the same file. Each gets its own temporary file or is refused by name;
//! a second run is told that the first is writing, and never mixes its bytes in.

mod common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::{files_under, run, stderr, summary, Bed};
use parabyte_testkit::{payload, AfterStall, CountingProxy, Fault, Rule, ServerKind};

const MIB: u64 = 1 << 20;

#[test]
fn a_key_shaped_like_a_temporary_name_is_kept_apart_or_refused() {
    let bed = Bed::new(ServerKind::Versitygw, "temp-shaped");
    // The old temporary name of `x`, and a name in today's reserved pattern.
    bed.admin
        .put_generated(&bed.bucket, "set/x", 1, 3 * MIB)
        .unwrap();
    bed.admin
        .put_generated(&bed.bucket, "set/.x.parabyte-part", 2, 3 * MIB)
        .unwrap();
    let reserved = "set/.parabyte-00112233445566778899aabbccddeeff.tmp";
    bed.admin
        .put_object(&bed.bucket, reserved, payload(3, 10))
        .unwrap();

    let output = run(bed.parabyte().args([
        "cp",
        "--json",
        "--part-size",
        "1MiB",
        &bed.url("set/"),
        "out",
    ]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains(&bed.url(reserved)) && text.contains("reserves for its temporary files"),
        "the reserved key is reported by name: {text}"
    );
    assert!(std::fs::read(bed.path("out/x")).unwrap() == payload(1, 3 * MIB as usize));
    assert!(
        std::fs::read(bed.path("out/.x.parabyte-part")).unwrap() == payload(2, 3 * MIB as usize)
    );
    assert_eq!(files_under(&bed.path("out")), vec![".x.parabyte-part", "x"]);
    assert_eq!(summary(&output)["objects"], 2);
}

/// Two 250-byte names whose first 240 bytes are equal.
fn long_names() -> [String; 2] {
    let common = "l".repeat(240);
    [
        format!("{common}{}", "a".repeat(10)),
        format!("{common}{}", "b".repeat(10)),
    ]
}

#[test]
fn long_names_sharing_a_prefix_download_apart() {
    let bed = Bed::new(ServerKind::Versitygw, "long-names");
    let names = long_names();
    for (seed, name) in names.iter().enumerate() {
        bed.admin
            .put_generated(&bed.bucket, &format!("set/{name}"), seed as u64, 3 * MIB)
            .unwrap();
    }
    let output = run(bed
        .parabyte()
        .args(["cp", "--part-size", "1MiB", &bed.url("set/"), "out"]));
    assert!(output.status.success(), "{}", stderr(&output));
    for (seed, name) in names.iter().enumerate() {
        assert!(
            std::fs::read(bed.path("out").join(name)).unwrap()
                == payload(seed as u64, 3 * MIB as usize),
            "{name} holds its own bytes"
        );
    }
    assert_eq!(files_under(&bed.path("out")).len(), 2);
}

/// Copy `names` (raw bytes), each 3 MiB of its own content, from one local tree to another.
fn copy_local_tree(names: &[&[u8]]) {
    let dir = tempfile::tempdir().unwrap();
    let (source, destination) = (dir.path().join("src"), dir.path().join("dst"));
    std::fs::create_dir(&source).unwrap();
    for (seed, name) in names.iter().enumerate() {
        let content = payload(seed as u64, 3 * MIB as usize);
        std::fs::write(source.join(OsStr::from_bytes(name)), content).unwrap();
    }
    let output = common::bare_parabyte(dir.path())
        .args(["cp", "--part-size", "1MiB"])
        .arg(&source)
        .arg(&destination)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    for (seed, name) in names.iter().enumerate() {
        let copied = std::fs::read(destination.join(OsStr::from_bytes(name))).unwrap();
        assert!(
            copied == payload(seed as u64, 3 * MIB as usize),
            "{:?} holds its own bytes",
            OsStr::from_bytes(name)
        );
    }
    assert_eq!(
        std::fs::read_dir(&destination).unwrap().count(),
        names.len()
    );
}

#[test]
fn long_names_sharing_a_prefix_copy_apart() {
    let names = long_names();
    copy_local_tree(&[names[0].as_bytes(), names[1].as_bytes()]);
}

#[test]
fn names_differing_only_in_non_utf8_bytes_copy_apart() {
    copy_local_tree(&[b"n\xff", b"n\xfe", b"n\xef\xbf\xbd"]);
}

/// A gate in front of the store: matched requests wait until it opens.
#[derive(Default)]
struct Gate {
    state: Mutex<(u64, bool)>,
    changed: Condvar,
}

impl Gate {
    fn hold(self: &Arc<Self>) -> Fault {
        let gate = self.clone();
        Fault::hook(move |_, _| {
            let mut state = gate.state.lock().unwrap();
            state.0 += 1;
            gate.changed.notify_all();
            let limit = Duration::from_secs(50);
            let _ = gate
                .changed
                .wait_timeout_while(state, limit, |(_, open)| !*open);
        })
    }

    fn wait_for_arrivals(&self, n: u64) {
        let state = self.state.lock().unwrap();
        let (state, timeout) = self
            .changed
            .wait_timeout_while(state, Duration::from_secs(20), |(arrived, _)| *arrived < n)
            .unwrap();
        assert!(
            !timeout.timed_out(),
            "only {} requests reached the gate",
            state.0
        );
    }

    fn open(&self) {
        self.state.lock().unwrap().1 = true;
        self.changed.notify_all();
    }
}

/// The bytes the resume journal on the one temporary file in `dir` vouches for.
fn journaled_bytes(dir: &Path) -> u64 {
    if !dir.exists() {
        return 0;
    }
    let Some(temp) = files_under(dir)
        .into_iter()
        .find(|f| f.starts_with(".parabyte-"))
    else {
        return 0;
    };
    let Ok(Some(journal)) = xattr::get(dir.join(temp), "user.parabyte.journal") else {
        return 0;
    };
    let journal = String::from_utf8(journal).unwrap();
    let ranges = journal.split('\n').nth(2).unwrap_or_default();
    ranges
        .split(',')
        .filter_map(|range| range.split_once('-'))
        .map(|(start, end)| end.parse::<u64>().unwrap() - start.parse::<u64>().unwrap())
        .sum()
}

fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// When the first run is stopped, relative to its parts.
#[derive(Debug, Clone, Copy)]
enum Moment {
    /// Its temporary file is created and locked, no byte has arrived.
    BeforeFirstByte,
    /// Five of six parts are in; the last is halfway and stalls.
    MidBody,
    /// Five of six parts are in; the sixth has not started.
    BeforeLastPart,
    /// Not stopped: it goes on after the second run gave up.
    NotStopped,
}

const SIZE: u64 = 6 * MIB;

fn start_first_run(bed: &Bed, proxy: &CountingProxy, moment: Moment) -> (Child, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    match moment {
        Moment::BeforeFirstByte | Moment::NotStopped => {
            proxy.inject(Rule::get(), gate.hold());
        }
        Moment::MidBody => {
            proxy.inject(
                Rule::get().range_start(5 * MIB),
                Fault::stall_after(MIB / 2, Duration::from_secs(60), AfterStall::Close),
            );
        }
        Moment::BeforeLastPart => {
            proxy.inject(Rule::get().range_start(5 * MIB), gate.hold());
        }
    }
    let child = bed
        .parabyte_process(bed.server.secret_key())
        .env("AWS_ENDPOINT_URL", proxy.endpoint())
        .args(["cp", "--part-size", "1MiB", &bed.url("set/"), "out"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    match moment {
        Moment::BeforeFirstByte | Moment::NotStopped => gate.wait_for_arrivals(1),
        Moment::MidBody | Moment::BeforeLastPart => {
            wait_until("five parts journaled", || {
                journaled_bytes(&bed.path("out")) >= 5 * MIB
            });
        }
    }
    (child, gate)
}

#[test]
fn two_runs_into_one_destination_give_one_correct_file() {
    for moment in [
        Moment::BeforeFirstByte,
        Moment::MidBody,
        Moment::BeforeLastPart,
        Moment::NotStopped,
    ] {
        let bed = Bed::new(ServerKind::Versitygw, "two-runs");
        bed.admin
            .put_generated(&bed.bucket, "set/big", 7, SIZE)
            .unwrap();
        let first_proxy = CountingProxy::start(&bed.server.endpoint());
        let (mut first, gate) = start_first_run(&bed, &first_proxy, moment);

        // The second run, while the first holds the file: told, and nothing fetched.
        let second =
            run(bed
                .parabyte()
                .args(["cp", "--part-size", "1MiB", &bed.url("set/"), "out"]));
        let text = stderr(&second);
        assert_eq!(second.status.code(), Some(1), "{moment:?}: {text}");
        assert!(
            text.contains("another parabyte process is writing") && text.contains("out/big"),
            "{moment:?}: {text}"
        );
        assert_eq!(
            bed.proxy.counts().get,
            0,
            "{moment:?}: the second run fetched nothing"
        );

        if let Moment::NotStopped = moment {
            gate.open();
            let status = first.wait().unwrap();
            assert!(status.success(), "{moment:?}: the first run finishes");
        } else {
            first.kill().unwrap();
            first.wait().unwrap();
            gate.open();
            bed.proxy.reset();
            // What the killed run's journal vouches for: its finished parts, and what
            // reached the file of the held one up to its last record.
            let kept = journaled_bytes(&bed.path("out"));
            let third = run(bed.parabyte().args([
                "cp",
                "--json",
                "--part-size",
                "1MiB",
                &bed.url("set/"),
                "out",
            ]));
            assert!(third.status.success(), "{moment:?}: {}", stderr(&third));
            let refetched = summary(&third)["bytes"].as_u64().unwrap();
            match moment {
                Moment::BeforeFirstByte => assert_eq!(kept, 0, "{moment:?}"),
                _ => assert!(kept >= 5 * MIB, "{moment:?}: {kept} bytes kept"),
            }
            assert_eq!(
                refetched,
                SIZE - kept,
                "{moment:?}: resumed from what the killed run recorded"
            );
        }
        assert!(
            std::fs::read(bed.path("out/big")).unwrap() == payload(7, SIZE as usize),
            "{moment:?}: one correct file"
        );
        assert_eq!(files_under(&bed.path("out")), vec!["big"], "{moment:?}");
    }
}
