//! `cat` as people use it, through the real binary on a real server: a quoted wildcard
//! concatenates the matching objects in key order (as s5cmd's cat), and a reader that goes
//! away (`| head -c 10`) ends it quietly with status 141 (128 + SIGPIPE, what a shell
//! reports for GNU cat there), no "Broken pipe" message, nothing more fetched.

mod common;

use std::io::Read;
use std::process::Stdio;
use std::time::Duration;

use common::{run, stderr, wait_for_exit, Bed};
use parabyte_testkit::{payload, ServerKind};

#[test]
fn a_wildcard_concatenates_the_matching_objects_in_key_order() {
    let bed = Bed::new(ServerKind::Versitygw, "cat-glob");
    for (key, body) in [
        ("p/b.txt", "second\n"),
        ("p/a.txt", "first\n"),
        ("p/c.log", "not a txt\n"),
        ("p/sub/d.txt", "third\n"),
        ("q/e.txt", "outside\n"),
    ] {
        bed.admin.put_object(&bed.bucket, key, body).unwrap();
    }
    let output = run(bed.parabyte().args(["cat", &bed.url("p/*.txt")]));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "first\nsecond\nthird\n"
    );
    assert!(stderr(&output).is_empty(), "{}", stderr(&output));
    // One object, as before; a pattern that matches nothing says so (exit 1).
    let one = run(bed.parabyte().args(["cat", &bed.url("p/c.log")]));
    assert_eq!(String::from_utf8_lossy(&one.stdout), "not a txt\n");
    let none = run(bed.parabyte().args(["cat", &bed.url("p/*.csv")]));
    assert_eq!(none.status.code(), Some(1), "{}", stderr(&none));
    assert!(none.stdout.is_empty());
    assert!(
        stderr(&none).contains("no object matched"),
        "{}",
        stderr(&none)
    );
}

#[test]
fn a_reader_that_goes_away_ends_cat_quietly_with_the_status_of_sigpipe() {
    let bed = Bed::new(ServerKind::Versitygw, "cat-pipe");
    let size = 32 << 20;
    bed.admin
        .put_generated(&bed.bucket, "big1", 1, size)
        .unwrap();
    bed.admin
        .put_generated(&bed.bucket, "big2", 2, size)
        .unwrap();
    for source in [bed.url("big1"), bed.url("big*")] {
        bed.proxy.reset();
        let mut child = bed
            .parabyte_process(bed.server.secret_key())
            .args(["cat", &source])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // `| head -c 10`: ten bytes read, then the pipe closed.
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 10];
        stdout.read_exact(&mut first).unwrap();
        assert_eq!(&first[..], &payload(1, 10)[..]);
        drop(stdout);
        let status = wait_for_exit(&mut child, Duration::from_secs(60));
        let mut said = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut said)
            .unwrap();
        assert_eq!(status.code(), Some(141), "{source}: {said}");
        assert!(said.is_empty(), "{source}: {said}");
        // The wildcard stopped at the first object: the second was never asked for.
        let asked_second = bed
            .proxy
            .requests()
            .iter()
            .any(|request| request.path.ends_with("/big2"));
        assert!(!asked_second, "{source}");
    }
}
