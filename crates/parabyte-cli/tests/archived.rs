//! Objects in an archive tier (GLACIER, DEEP_ARCHIVE), on moto, which refuses a GET of one
//! (InvalidObjectState) and a copy from one (ObjectNotInActiveTierError) until it is
//! restored, as S3 does. Each is reported once by name as archived, with no retry, and the
//! rest goes on; a restored one is fetched; `--ignore-glacier-warnings` passes them over
//! with exit 0; `sync` deletes nothing because of them and `mv` keeps them.

mod common;

use common::{run, stderr, summary, Bed};
use http::Method;
use parabyte_testkit::{RequestKind, ServerKind};

/// `p/` holds a plain object, two archived ones and a restored one.
const PLAIN: &str = "p/plain.txt";
const GLACIER: &str = "p/cold.txt";
const DEEP: &str = "p/deep/colder.txt";
const RESTORED: &str = "p/restored.txt";

fn archived_bed(name: &str) -> Bed {
    let bed = Bed::new(ServerKind::Moto, name);
    bed.admin.put_object(&bed.bucket, PLAIN, "plain\n").unwrap();
    for (key, class) in [
        (GLACIER, "GLACIER"),
        (DEEP, "DEEP_ARCHIVE"),
        (RESTORED, "GLACIER"),
    ] {
        let put = bed.admin.block_on(
            bed.admin
                .client()
                .request(Method::PUT, &bed.bucket, key)
                .header("x-amz-storage-class", class)
                .body(format!("{key}\n"))
                .send(),
        );
        assert!(put.unwrap().status.is_success(), "{key}");
    }
    let restore = bed.admin.block_on(
        bed.admin
            .client()
            .request(Method::POST, &bed.bucket, RESTORED)
            .query("restore", "")
            .body("<RestoreRequest><Days>1</Days></RestoreRequest>")
            .send(),
    );
    assert!(restore.unwrap().status.is_success());
    bed.proxy.reset();
    bed
}

/// GETs and copies that named `key` (as a path or a copy source).
fn requests_for(bed: &Bed, key: &str) -> usize {
    bed.proxy
        .requests()
        .iter()
        .filter(|request| request.path.ends_with(&format!("/{key}")))
        .filter(|request| matches!(request.kind, RequestKind::Get))
        .count()
}

#[test]
fn archived_objects_are_named_once_and_the_rest_goes_on() {
    let bed = archived_bed("archived-cp");
    let output = run(bed
        .parabyte()
        .args(["cp", "-r", "--json", &bed.url("p/"), "out"]));
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    for key in [GLACIER, DEEP] {
        let named = text
            .lines()
            .filter(|line| line.contains(&bed.url(key)) && line.contains("archived"))
            .count();
        assert_eq!(named, 1, "{key} named once as archived: {text}");
        assert_eq!(requests_for(&bed, key), 1, "{key}: one GET, no retry");
        let file = bed.path("out").join(key.trim_start_matches("p/"));
        assert!(!file.exists(), "{key}");
    }
    assert!(text.contains("--ignore-glacier-warnings"), "{text}");
    let json = summary(&output);
    assert_eq!((&json["objects"], &json["failed"]), (&2.into(), &2.into()));
    assert_eq!(json["retries"], 0);
    assert_eq!(
        std::fs::read(bed.path("out/restored.txt")).unwrap(),
        format!("{RESTORED}\n").as_bytes(),
        "a restored object is fetched"
    );
    assert_eq!(
        std::fs::read(bed.path("out/plain.txt")).unwrap(),
        b"plain\n"
    );

    // Passed over when asked: a skip line each, exit 0.
    let output = run(bed.parabyte().args([
        "cp",
        "-r",
        "--json",
        "--ignore-glacier-warnings",
        &bed.url("p/"),
        "again",
    ]));
    let text = stderr(&output);
    assert!(output.status.success(), "{text}");
    for key in [GLACIER, DEEP] {
        assert!(
            text.lines()
                .any(|line| line.starts_with("skip: ") && line.contains(&bed.url(key))),
            "{key}: {text}"
        );
    }
    let json = summary(&output);
    assert_eq!(
        (&json["objects"], &json["failed"], &json["skipped"]),
        (&2.into(), &0.into(), &2.into())
    );
}

/// A sync down with --delete: the archived keys are in the source, so their files stay as
/// they are, and a file the source lacks is still deleted (the listing was whole).
#[test]
fn sync_deletes_nothing_because_of_archived_objects() {
    let bed = archived_bed("archived-sync");
    std::fs::create_dir_all(bed.path("out/deep")).unwrap();
    std::fs::write(bed.path("out/cold.txt"), b"an older copy\n").unwrap();
    std::fs::write(bed.path("out/deep/colder.txt"), b"an older copy\n").unwrap();
    std::fs::write(bed.path("out/gone.txt"), b"the source lacks it\n").unwrap();
    let output = run(bed.parabyte().args([
        "sync",
        "--delete",
        "--ignore-glacier-warnings",
        &bed.url("p/"),
        "out",
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    for kept in ["out/cold.txt", "out/deep/colder.txt"] {
        assert_eq!(std::fs::read(bed.path(kept)).unwrap(), b"an older copy\n");
    }
    assert!(!bed.path("out/gone.txt").exists());
    assert_eq!(
        std::fs::read(bed.path("out/plain.txt")).unwrap(),
        b"plain\n"
    );
}

/// A copy inside the store from an archived object is refused by the store; `mv` then
/// keeps that source, and moves the rest.
#[test]
fn a_move_keeps_archived_sources() {
    let bed = archived_bed("archived-mv");
    let output = run(bed
        .parabyte()
        .args(["mv", "-r", &bed.url("p/"), &bed.url("q/")]));
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("archived"), "{text}");
    for key in [GLACIER, DEEP] {
        assert!(
            bed.admin.get_object(&bed.bucket, key).is_err(),
            "{key}: still there, and still archived"
        );
        let head = bed.admin.block_on(
            bed.admin
                .client()
                .request(Method::HEAD, &bed.bucket, key)
                .send(),
        );
        assert!(head.unwrap().status.is_success(), "{key} kept");
    }
    assert_eq!(
        bed.admin.get_object(&bed.bucket, "q/plain.txt").unwrap(),
        "plain\n".as_bytes()
    );
    assert!(bed.admin.get_object(&bed.bucket, PLAIN).is_err(), "moved");
}
