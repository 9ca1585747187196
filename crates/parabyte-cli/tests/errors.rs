//! Bad input and failures through the real binary: clear messages, the right exit status,
//! and nothing left half-written.

mod common;

use common::{files_under, run, stderr, summary, Bed};
use parabyte_testkit::{payload, Fault, Rule, ServerKind};

fn wrong_credentials(kind: ServerKind) {
    let bed = Bed::new(kind, "badcreds");
    bed.admin
        .put_object(&bed.bucket, "k", payload(1, 10))
        .unwrap();
    for source in [bed.url("k"), bed.url("")] {
        let output = run(bed
            .parabyte_with_secret("not-the-secret")
            .args(["cp", &source, "out/"]));
        assert_eq!(
            output.status.code(),
            Some(2),
            "{source}: {}",
            stderr(&output)
        );
        let text = stderr(&output);
        assert!(text.contains("403"), "{text}");
        assert!(
            text.contains("credentials") || text.contains("access denied"),
            "{text}"
        );
        assert!(
            !text.contains("not-the-secret"),
            "secrets never appear: {text}"
        );
    }
    assert!(!bed.path("out").exists() || files_under(&bed.path("out")).is_empty());
}

#[test]
fn wrong_credentials_versitygw() {
    wrong_credentials(ServerKind::Versitygw);
}

#[test]
fn wrong_credentials_seaweedfs() {
    wrong_credentials(ServerKind::SeaweedFs);
}

#[test]
fn wrong_credentials_minio() {
    wrong_credentials(ServerKind::Minio);
}

fn missing_bucket_and_key(kind: ServerKind) {
    let bed = Bed::new(kind, "missing");
    let missing_bucket = format!("{}-absent", bed.bucket);
    for source in [
        format!("s3://{missing_bucket}/k"),
        format!("s3://{missing_bucket}/dir/"),
    ] {
        let output = run(bed.parabyte().args(["cp", &source, "out"]));
        assert_eq!(
            output.status.code(),
            Some(2),
            "{source}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(&format!("bucket '{missing_bucket}' does not exist")),
            "{}",
            stderr(&output)
        );
    }

    let output = run(bed
        .parabyte()
        .args(["cp", "--json", &bed.url("no/such/key"), "out"]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains(&format!("s3://{}/no/such/key", bed.bucket)) && text.contains("not found"),
        "{text}"
    );
    assert_eq!(summary(&output)["failed"], 1);
    assert!(!bed.path("out").exists());
}

#[test]
fn missing_bucket_and_key_versitygw() {
    missing_bucket_and_key(ServerKind::Versitygw);
}

#[test]
fn missing_bucket_and_key_seaweedfs() {
    missing_bucket_and_key(ServerKind::SeaweedFs);
}

#[test]
fn missing_bucket_and_key_minio() {
    missing_bucket_and_key(ServerKind::Minio);
}

#[test]
fn missing_bucket_and_key_moto() {
    missing_bucket_and_key(ServerKind::Moto);
}

#[test]
fn one_failure_does_not_stop_the_rest() {
    let bed = Bed::new(ServerKind::Versitygw, "partial");
    bed.admin
        .fill(
            &bed.bucket,
            [
                ("d/a", payload(1, 10)),
                ("d/b", payload(2, 10)),
                ("d/c", payload(3, 10)),
            ],
        )
        .unwrap();
    // A directory where a file must go: that object fails, the others arrive.
    std::fs::create_dir_all(bed.path("out/b")).unwrap();
    let output = run(bed.parabyte().args(["cp", &bed.url("d/"), "out"]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains("failed 1 object(s)") && text.contains(&bed.url("d/b")),
        "{text}"
    );
    assert_eq!(std::fs::read(bed.path("out/a")).unwrap(), payload(1, 10));
    assert_eq!(std::fs::read(bed.path("out/c")).unwrap(), payload(3, 10));
    assert_eq!(
        files_under(&bed.path("out")),
        vec!["a", "c"],
        "no temp file left behind"
    );
}

#[test]
fn usage_errors_exit_2_with_a_hint() {
    let bed = Bed::new(ServerKind::Versitygw, "usage");
    let cases: [(&[&str], &str); 5] = [
        (
            &["cp", "gs://bucket/key", "out"],
            "unsupported scheme 'gs://'",
        ),
        (&["cp", "s3:///key", "out"], "no valid bucket"),
        (
            &["cp", "./no-such-dir", "out"],
            "cannot read './no-such-dir'",
        ),
        (&["cp", "--part-size", "8XB", "s3://b/k", "out"], "8MiB"),
        (&["cp", "s3://b/k"], "required"),
    ];
    for (args, expected) in cases {
        let output = run(bed.parabyte().args(args));
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&output).contains(expected),
            "{args:?}: {}",
            stderr(&output)
        );
    }
}

#[test]
fn an_unreachable_endpoint_fails_fast_and_clearly() {
    let bed = Bed::new(ServerKind::Versitygw, "unreachable");
    // A loopback port nothing listens on: connection refused, retried, then reported.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // One object, a prefix, a listing, a total: the same failure, the same status (1: the
    // store cannot be reached now; 2 is for what no later run can change).
    for args in [
        vec!["cp", "--retries", "1", &bed.url("k"), "out"],
        vec!["cp", "--retries", "1", &bed.url("p/"), "out/"],
        vec!["ls", &bed.url("p/")],
        vec!["du", &bed.url("p/")],
        vec!["stat", &bed.url("k")],
    ] {
        let output = run(bed
            .parabyte()
            .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"))
            .args(&args));
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {text}");
        assert!(
            text.contains("could not connect") && text.contains(&format!("127.0.0.1:{port}")),
            "{args:?}: {text}"
        );
    }
}

#[test]
fn a_symlink_inside_the_destination_is_never_written_through() {
    let bed = Bed::new(ServerKind::Versitygw, "symlink");
    bed.admin
        .fill(
            &bed.bucket,
            [("d/link/x", payload(1, 10)), ("d/ok", payload(2, 10))],
        )
        .unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(bed.path("out")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), bed.path("out/link")).unwrap();
    let output = run(bed.parabyte().args(["cp", &bed.url("d/"), "out"]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("is a symbolic link"),
        "{}",
        stderr(&output)
    );
    assert_eq!(std::fs::read(bed.path("out/ok")).unwrap(), payload(2, 10));
    assert_eq!(
        std::fs::read_dir(elsewhere.path()).unwrap().count(),
        0,
        "nothing written outside"
    );
}

#[test]
fn expired_credentials_stop_the_run_and_no_secret_is_ever_shown() {
    let bed = Bed::new(ServerKind::Versitygw, "expired");
    bed.admin
        .put_object(&bed.bucket, "k", payload(1, 10))
        .unwrap();
    bed.proxy
        .inject(Rule::get(), Fault::error(400, "ExpiredToken"));
    let token = "session-token-that-must-not-show";
    let output = run(bed.parabyte().env("AWS_SESSION_TOKEN", token).args([
        "cp",
        "--json",
        &bed.url("k"),
        "out/",
    ]));
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = format!(
        "{}{}",
        stderr(&output),
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(text.contains("ExpiredToken"), "{text}");
    assert!(text.contains("refresh your session"), "{text}");
    for secret in [bed.server.secret_key(), token, "Signature=", "Credential="] {
        assert!(!text.contains(secret), "{secret} shown: {text}");
    }
}

#[test]
fn a_destination_file_that_is_a_symlink_is_left_alone() {
    let bed = Bed::new(ServerKind::Versitygw, "symlink-file");
    bed.admin
        .fill(
            &bed.bucket,
            [
                ("d/small", payload(1, 10)),
                ("d/large", payload(2, 300_000)),
            ],
        )
        .unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let victim = elsewhere.path().join("victim");
    std::fs::write(&victim, b"keep me").unwrap();
    for key in ["d/small", "d/large"] {
        std::os::unix::fs::symlink(&victim, bed.path("link")).unwrap();
        let output = run(bed.parabyte().args(["cp", &bed.url(key), "link"]));
        // Refused before any GET: the user's own destination cannot be written.
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(
            stderr(&output).contains("will not replace 'link': it is a symbolic link"),
            "{}",
            stderr(&output)
        );
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
        assert!(bed.path("link").symlink_metadata().unwrap().is_symlink());
        std::fs::remove_file(bed.path("link")).unwrap();
    }
}
