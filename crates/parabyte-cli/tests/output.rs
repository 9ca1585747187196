//! What `parabyte cp` shows: on a terminal (a real pseudo-terminal of a given width) the bar
//! fits and each failure is printed once; `--json-lines` streams one line per object; `-v`
//! prints each request without a secret; the summary says what was resumed and leaves out
//! request counts a local copy never had.

mod common;

use std::fs::File;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use common::{bare_parabyte, run, stderr, summary, wait_for_exit, Bed};
use parabyte_testkit::{payload, Fault, Rule, ServerKind, Serving, WebServer};

const MIB: u64 = 1 << 20;

/// Run `command` with its stderr on a pseudo-terminal `columns` wide (stdout discarded);
/// returns how it exited and everything the terminal received.
fn on_terminal(mut command: Command, columns: u16) -> (ExitStatus, String) {
    let (mut controller, mut terminal) = (-1, -1);
    let size = libc::winsize {
        ws_row: 24,
        ws_col: columns,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty only writes the two descriptors it opens; no name buffer, default
    // terminal settings, and `size` outlives the call.
    let opened = unsafe {
        libc::openpty(
            &mut controller,
            &mut terminal,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened by openpty and are owned by nobody else.
    let (mut controller, terminal) = unsafe {
        (
            File::from_raw_fd(controller),
            OwnedFd::from_raw_fd(terminal),
        )
    };
    command
        .env("TERM", "xterm-256color")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(terminal));
    let mut child = command.spawn().unwrap();
    // The command holds our copy of the terminal's descriptor: once it is gone, reading
    // ends (EIO) when the child exits.
    drop(command);
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buffer = [0u8; 4096];
        while let Ok(read @ 1..) = controller.read(&mut buffer) {
            seen.extend_from_slice(&buffer[..read]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let status = wait_for_exit(&mut child, Duration::from_secs(60));
    (status, reader.join().unwrap())
}

/// The text a terminal shows, line by line as drawn: escape sequences removed, split at
/// carriage returns and newlines.
fn drawn_lines(text: &str) -> Vec<String> {
    let mut plain = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters, then one final byte in @..~.
            if chars.next_if_eq(&'[').is_some() {
                while chars.next().is_some_and(|c| !('@'..='~').contains(&c)) {}
            }
            continue;
        }
        plain.push(c);
    }
    plain
        .split(['\r', '\n'])
        .filter(|line| !line.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// A line of the progress bar: it starts with the spinner.
fn is_bar(line: &str) -> bool {
    line.starts_with(|c: char| ('\u{2800}'..='\u{28ff}').contains(&c))
}

#[test]
fn on_a_terminal_each_failure_shows_once_and_the_bar_fits_its_width() {
    let bed = Bed::new(ServerKind::Versitygw, "terminal");
    bed.admin
        .put_generated(&bed.bucket, "set/good", 1, 3 * MIB)
        .unwrap();
    bed.admin
        .put_generated(&bed.bucket, "set/bad", 2, 1000)
        .unwrap();
    bed.proxy.inject(
        Rule::get().key_contains("bad"),
        Fault::error(500, "InternalError"),
    );
    // Long enough for the bar to be drawn a few times at 10 per second.
    bed.proxy.inject(
        Rule::get().key_contains("good"),
        Fault::delay_headers(Duration::from_millis(500)),
    );
    for columns in [70, 40] {
        let mut command = bed.parabyte_process(bed.server.secret_key());
        let out = format!("out{columns}");
        command.args(["cp", "--retries", "0", &bed.url("set/"), &out]);
        let (status, text) = on_terminal(command, columns);
        assert_eq!(status.code(), Some(1), "{text}");
        let bad = bed.url("set/bad");
        assert_eq!(
            text.lines().filter(|line| line.contains(&bad)).count(),
            1,
            "the failure is printed once, as it happens: {text}"
        );
        assert!(
            text.contains("failed 1 object(s), each shown above"),
            "{text}"
        );
        let lines = drawn_lines(&text);
        let bars: Vec<_> = lines.iter().filter(|line| is_bar(line)).collect();
        assert!(
            !bars.is_empty(),
            "no bar drawn at {columns} columns: {text:?}"
        );
        for bar in bars {
            assert!(
                bar.chars().count() <= usize::from(columns),
                "wider than {columns} columns: {bar:?}"
            );
        }
    }
}

#[test]
fn off_a_terminal_failures_are_listed_at_the_end() {
    let bed = Bed::new(ServerKind::Versitygw, "no-terminal");
    bed.admin
        .put_generated(&bed.bucket, "set/bad", 2, 1000)
        .unwrap();
    bed.proxy.inject(
        Rule::get().key_contains("bad"),
        Fault::error(500, "InternalError"),
    );
    let output = run(bed
        .parabyte()
        .args(["cp", "--retries", "0", &bed.url("set/"), "out"]));
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.contains("failed 1 object(s):"), "{err}");
    let bad = bed.url("set/bad");
    assert_eq!(err.lines().filter(|l| l.contains(&bad)).count(), 1, "{err}");
}

/// The `--json-lines` objects printed on stdout (the summary, if any, is the last line).
fn object_lines(output: &std::process::Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .filter(|line: &serde_json::Value| line.get("status").is_some())
        .collect()
}

#[test]
fn json_lines_stream_each_object_as_it_ends() {
    let bed = Bed::new(ServerKind::Versitygw, "json-lines");
    bed.admin
        .put_generated(&bed.bucket, "set/a", 1, 1000)
        .unwrap();
    bed.admin
        .put_generated(&bed.bucket, "set/sub/b", 2, 2 * MIB)
        .unwrap();
    bed.admin
        .put_generated(&bed.bucket, "set/bad", 3, 10)
        .unwrap();
    let broken = bed.proxy.inject(
        Rule::get().key_contains("bad"),
        Fault::error(500, "InternalError"),
    );
    let copy = || {
        run(bed.parabyte().args([
            "cp",
            "--json-lines",
            "--json",
            "--retries",
            "0",
            &bed.url("set/"),
            "out",
        ]))
    };
    let first = copy();
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    let mut lines = object_lines(&first);
    lines.sort_by_key(|line| line["source"].as_str().unwrap().to_owned());
    assert_eq!(lines.len(), 3, "{lines:?}");
    let (a, bad, b) = (&lines[0], &lines[1], &lines[2]);
    assert_eq!(a["source"], bed.url("set/a"));
    assert_eq!(a["status"], "copied");
    assert_eq!(a["bytes"], 1000);
    assert!(a["destination"].as_str().unwrap().ends_with("out/a"), "{a}");
    assert_eq!(b["bytes"], 2 * MIB);
    assert_eq!(bad["status"], "failed");
    assert!(bad["error"].as_str().unwrap().contains("500"), "{bad}");
    assert!(bad["verification"].is_null());
    // How each copied object was checked, counted the same way by the summary.
    let json = summary_line(&first);
    let checks: Vec<_> = [a, b].iter().map(|l| l["verification"].clone()).collect();
    let by_md5 = checks.iter().filter(|c| *c == "md5").count() as u64;
    assert_eq!(json["verified"]["md5"].as_u64(), Some(by_md5), "{checks:?}");
    for check in &checks {
        let known = ["crc32", "crc32c", "crc64nvme", "md5", "size-only"];
        assert!(known.iter().any(|k| check == k), "{check}");
    }

    broken.remove();
    let second = copy();
    assert!(second.status.success(), "{}", stderr(&second));
    let statuses: Vec<_> = object_lines(&second)
        .iter()
        .map(|l| (l["status"].clone(), l["verification"].clone()))
        .collect();
    assert_eq!(statuses.len(), 3);
    let skipped = statuses
        .iter()
        .filter(|(status, how)| *status == "skipped" && *how == "version-mark")
        .count();
    assert_eq!(skipped, 2, "{statuses:?}");
}

/// The `--json` summary when it follows `--json-lines`: the last line.
fn summary_line(output: &std::process::Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

#[test]
fn verbose_prints_each_request_and_no_secret() {
    let server = WebServer::start().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(server.root().join("big.bin"), payload(1, 3 * MIB as usize)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let presigned = format!(
        "{}?X-Amz-Credential=AKIDLEAK%2F20260101&X-Amz-Signature=sigleak123&api_key=keyleak",
        server.url(Serving::Ranges, "big.bin")
    )
    .replace("http://", "http://someone:passleak@");
    let output = bare_parabyte(dir.path())
        .args(["cp", "-v", "--part-size", "1MiB", &presigned, "big.bin"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    let requests: Vec<_> = err.lines().filter(|l| l.starts_with("GET ")).collect();
    assert_eq!(requests.len(), 3, "{err}");
    assert!(
        requests
            .iter()
            .any(|l| l.contains(" bytes=0-1048575 -> 206 in ")),
        "{err}"
    );
    assert!(requests
        .iter()
        .all(|l| l.contains("X-Amz-Signature=REDACTED")
            && l.contains("/files/big.bin?")
            && l.ends_with(" ms")));
    for secret in ["AKIDLEAK", "sigleak123", "keyleak", "passleak"] {
        assert!(!err.contains(secret), "{secret} printed: {err}");
    }

    // A store: listing and GETs, signed with a secret that never prints.
    let bed = Bed::new(ServerKind::Versitygw, "verbose");
    bed.admin
        .put_generated(&bed.bucket, "set/a", 1, 10)
        .unwrap();
    let output = run(bed
        .parabyte()
        .args(["cp", "--verbose", &bed.url("set/"), "out"]));
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    let listing = format!("GET {}/{}/?", bed.proxy.endpoint(), bed.bucket);
    assert!(
        err.lines()
            .any(|l| l.starts_with(&listing) && l.contains(" -> 200 in ")),
        "{err}"
    );
    // A listed object of one part is one GET of the whole object, without a Range (S3
    // sends the object's checksum only then).
    assert!(err.contains("/set/a -> 200 in"), "{err}");
    assert!(!err.contains(bed.server.secret_key()), "{err}");
    assert!(!err.to_lowercase().contains("authorization"), "{err}");
}

#[test]
fn the_summary_says_what_was_resumed_and_a_local_copy_shows_no_requests() {
    let bed = Bed::new(ServerKind::Versitygw, "resumed-summary");
    const SIZE: u64 = 4 * MIB + 5;
    bed.admin
        .put_generated(&bed.bucket, "set/big", 3, SIZE)
        .unwrap();
    // The part at 2 MiB always fails; the other four arrive and stay for the next run.
    let broken = bed.proxy.inject(
        Rule::get().range_start(2 * MIB),
        Fault::error(500, "InternalError"),
    );
    let copy = || {
        run(bed.parabyte().args([
            "cp",
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
    let resumed = copy();
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let err = stderr(&resumed);
    assert!(
        err.contains("resumed 1 object(s) where an earlier run stopped: 3.0 MiB already on disk"),
        "{err}"
    );
    assert!(err.contains("requests: 1 GET"), "{err}");

    let json = run(bed
        .parabyte()
        .args(["cp", "--json", "--force", &bed.url("set/"), "again"]));
    let json = summary(&json);
    assert_eq!(
        (json["resumed"].as_u64(), json["resumed_bytes"].as_u64()),
        (Some(0), Some(0))
    );

    let local = run(bed.parabyte().args(["cp", "out", "copy"]));
    assert!(local.status.success(), "{}", stderr(&local));
    let err = stderr(&local);
    assert!(err.contains("1 object(s)"), "{err}");
    assert!(
        !err.contains("requests:") && !err.contains("verified:"),
        "{err}"
    );
}

/// On a terminal the bar shows and copies are not named one by one (a big tree would
/// scroll past it); `--object-lines always` names them above the bar, `--no-progress`
/// names them instead of it, and a move is always named.
#[test]
fn on_a_terminal_copies_are_named_when_asked_and_moves_always() {
    let bed = Bed::new(ServerKind::Versitygw, "terminal-lines");
    bed.admin
        .put_generated(&bed.bucket, "t/a", 1, 1000)
        .unwrap();
    let line = |to: &str| format!("download: {} to {to}", bed.url("t/a"));
    for (flag, named) in [
        (None, false),
        (Some("--object-lines=always"), true),
        (Some("--no-progress"), true),
    ] {
        let mut command = bed.parabyte_process(bed.server.secret_key());
        let to = format!("out-{}", flag.unwrap_or("auto").trim_start_matches('-'));
        command.arg("cp").args(flag).args([&bed.url("t/a"), &to]);
        let (status, text) = on_terminal(command, 100);
        assert!(status.success(), "{text}");
        let shown = drawn_lines(&text).iter().any(|shown| *shown == line(&to));
        assert_eq!(shown, named, "{flag:?}: {text:?}");
    }
    let mut command = bed.parabyte_process(bed.server.secret_key());
    command.args(["mv", &bed.url("t/a"), "moved"]);
    let (status, text) = on_terminal(command, 100);
    assert!(status.success(), "{text}");
    let line = format!("move: {} to moved", bed.url("t/a"));
    assert!(drawn_lines(&text).contains(&line), "{text:?}");
}
