//! What the command line refuses and how it ends: out-of-range numbers and remote
//! destinations are usage errors (exit 2) that create nothing, a `--json` summary whose
//! reader has gone ends quietly, never with a panic (exit 101), the counters in the
//! summary count only what happened, and a cluster copy says how to get it.

mod common;

use std::ffi::OsString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::process::{Output, Stdio};

use common::{bare_parabyte, files_under, stderr, summary};
use parabyte_testkit::{payload, HostileServer, Reply};

/// A web server with one file, to show that a refused command sends nothing.
fn one_file() -> HostileServer {
    let data = payload(3, 5000);
    HostileServer::start(move |request| Reply::object(request, &data, Some("\"e\"")))
}

fn assert_usage_error(output: &Output, expected: &str) {
    let shown = stderr(output);
    assert_eq!(output.status.code(), Some(2), "{shown}");
    assert!(shown.contains(expected), "{shown}");
    assert!(!shown.contains("panicked"), "{shown}");
}

#[test]
fn out_of_range_numbers_are_usage_errors_naming_the_flag() {
    let server = one_file();
    let url = format!("{}/f.bin", server.endpoint());
    let dir = tempfile::tempdir().unwrap();
    let huge = usize::MAX.to_string();
    let mut cases: Vec<(String, &str)> = ["inf", "1e30", "NaN", "-1", "0", "-inf", "forever"]
        .iter()
        .map(|timeout| (format!("--timeout={timeout}"), "--timeout"))
        .collect();
    for flag in [
        "--workers",
        "--max-requests",
        "--ranges-per-object",
        "--list-parallelism",
    ] {
        cases.push((format!("{flag}={huge}"), flag));
    }
    for (arg, flag) in &cases {
        let output = bare_parabyte(dir.path())
            .args(["cp", &url, "out.bin", arg])
            .output()
            .unwrap();
        assert_usage_error(&output, flag);
    }
    assert_eq!(server.request_count(), 0);
    assert!(files_under(dir.path()).is_empty());
    let fine = bare_parabyte(dir.path())
        .args(["cp", &url, "out.bin", "--timeout", "0.5"])
        .output()
        .unwrap();
    assert_eq!(fine.status.code(), Some(0), "{}", stderr(&fine));
}

#[test]
fn destinations_that_cannot_be_written_exit_2_and_create_nothing() {
    let store = one_file();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "local\n").unwrap();
    std::fs::write(
        dir.path().join("list.txt"),
        format!("{}/f.bin\n", store.endpoint()),
    )
    .unwrap();
    let before = files_under(dir.path());
    let source_url = format!("{}/f.bin", store.endpoint());
    let bytes = |text: &[u8]| OsString::from_vec(text.to_vec());
    let not_local = "is not a local path";
    let text_cases = [
        (
            vec!["cp", "-", "s3://bucket/up/"],
            "standard input has no name",
        ),
        (
            vec!["cp", "f.txt", "https://example.com/up/f.txt"],
            not_local,
        ),
        (
            vec!["cp", &source_url, "http://127.0.0.1:9/up/f.bin"],
            not_local,
        ),
    ];
    let mut cases: Vec<(Vec<OsString>, &str)> = text_cases
        .iter()
        .map(|(args, expected)| (args.iter().map(OsString::from).collect(), *expected))
        .collect();
    // Not UTF-8, still a URL: classified on its bytes, never a folder named `s3:`.
    for url in [
        &b"s3://bkt/k\xff"[..],
        b"gs://bkt/\xfe/k",
        b"https://h/\xff",
    ] {
        cases.push((vec!["cp".into(), "f.txt".into(), bytes(url)], not_local));
    }
    for (args, expected) in cases {
        let output = bare_parabyte(dir.path())
            .env("AWS_ACCESS_KEY_ID", "id")
            .env("AWS_SECRET_ACCESS_KEY", "secret")
            .env("AWS_ENDPOINT_URL", store.endpoint())
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_usage_error(&output, expected);
        assert_eq!(files_under(dir.path()), before, "{args:?} created files");
        let entries = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(entries, before.len(), "{args:?} created a folder");
    }
    assert_eq!(store.request_count(), 0);
}

#[test]
fn a_dask_scheduler_says_how_to_get_the_cluster_copy_and_sends_nothing() {
    let server = one_file();
    let url = format!("{}/f.bin", server.endpoint());
    let dir = tempfile::tempdir().unwrap();
    let flag = [
        "cp",
        "--dask-scheduler",
        "tcp://127.0.0.1:9",
        &url,
        "out.bin",
    ];
    let from_flag = bare_parabyte(dir.path()).args(flag).output().unwrap();
    assert_usage_error(&from_flag, "pip install 'parabyte[dask]'");
    let from_env = bare_parabyte(dir.path())
        .env("PARABYTE_DASK_SCHEDULER", "tcp://127.0.0.1:9")
        .args(["cp", &url, "out.bin"])
        .output()
        .unwrap();
    assert_usage_error(&from_env, "PARABYTE_DASK_SCHEDULER");
    // Every command that runs on a cluster takes the flag, and this binary runs none.
    for command in [
        vec!["sync", "s3://bucket/prefix/", "out"],
        vec!["mv", "s3://bucket/key", "out.bin"],
        vec!["rm", "-r", "s3://bucket/prefix/"],
    ] {
        let endpoint = ["--endpoint-url", &server.endpoint()];
        let cluster = ["--dask-scheduler", "tcp://127.0.0.1:9"];
        let args = [command.as_slice(), &endpoint, &cluster].concat();
        let refused = bare_parabyte(dir.path()).args(&args).output().unwrap();
        assert_usage_error(&refused, "pip install 'parabyte[dask]'");
    }
    assert_eq!(server.request_count(), 0);
    assert!(files_under(dir.path()).is_empty());
}

/// A pipe whose reading end is already closed: writing to it fails with EPIPE.
fn pipe_without_reader() -> Stdio {
    let mut ends = [0; 2];
    // SAFETY: `ends` is two ints, as pipe2 expects; both descriptors are owned right after.
    let made = unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(made, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just created and are owned by nothing else.
    let (reader, writer) =
        unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
    drop(reader);
    Stdio::from(writer)
}

#[test]
fn a_json_summary_nobody_reads_ends_quietly_with_the_copys_status() {
    let server = one_file();
    let url = format!("{}/f.bin", server.endpoint());
    let dir = tempfile::tempdir().unwrap();
    let output = bare_parabyte(dir.path())
        .args(["cp", "--json", &url, "out.bin"])
        .stdout(pipe_without_reader())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!stderr(&output).contains("panicked"), "{}", stderr(&output));
    assert_eq!(
        std::fs::read(dir.path().join("out.bin")).unwrap(),
        payload(3, 5000)
    );

    // Both streams gone, and an object that fails: still its own status, not a panic.
    let missing = format!(
        "{}/gone.bin",
        HostileServer::start(|_| Reply::status(404)).endpoint()
    );
    let output = bare_parabyte(dir.path())
        .args(["cp", "--json", &missing, "gone.bin"])
        .stdout(pipe_without_reader())
        .stderr(pipe_without_reader())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn requests_that_never_went_out_are_not_counted() {
    // A port nothing listens on: every attempt fails to connect.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/f.bin", closed.local_addr().unwrap());
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let output = bare_parabyte(dir.path())
        .args(["cp", "--json", "--retries", "2", &url, "out.bin"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let json = summary(&output);
    assert_eq!(json["requests"]["get"], 0, "{json}");
    assert_eq!(json["connections"], 0, "{json}");
    assert_eq!(json["retries"], 2, "{json}");
}

#[test]
fn an_object_that_does_not_arrive_is_not_counted_as_verified() {
    let server = one_file();
    let url = format!("{}/f.bin", server.endpoint());
    let dir = tempfile::tempdir().unwrap();
    // The final name is taken by a directory that is not empty: the download completes and
    // checks out, but the file can never take its name.
    std::fs::create_dir_all(dir.path().join("out/f.bin/f.bin/occupied")).unwrap();
    let output = bare_parabyte(dir.path())
        .args(["cp", "--json", &url, "out/f.bin"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let json = summary(&output);
    assert_eq!(json["objects"], 0, "{json}");
    assert_eq!(json["failed"], 1, "{json}");
    let verified = &json["verified"];
    let counted = ["checksum", "md5", "size_only"].map(|how| verified[how].as_u64());
    assert_eq!(counted, [Some(0); 3], "{json}");
}
