//! Messages that name what went wrong, not something near it: a sync source that does not
//! exist is named as missing, `stat` of a bucket or of a "folder" says what to run instead,
//! an upload onto a key a store keeps as a directory says why it was refused, and the top
//! line of `--help` names everything parabyte does (issue 44).

mod common;

use common::{bare_parabyte, run, stderr, Bed};
use parabyte_testkit::ServerKind;

#[test]
fn a_sync_source_that_does_not_exist_is_named_as_missing() {
    let bed = Bed::new(ServerKind::Versitygw, "wn-sync");
    let output = run(bed.parabyte().args(["sync", "./typo", &bed.url("p/")]));
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("./typo"), "{said}");
    assert!(said.contains("no such file or directory"), "{said}");
    assert!(!said.contains("use cp"), "{said}");
    assert!(bed.proxy.requests().is_empty(), "{said}");
    // A file is still told to use cp.
    std::fs::write(bed.path("one.txt"), b"one").unwrap();
    let output = run(bed.parabyte().args(["sync", "one.txt", &bed.url("p/")]));
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(
        said.contains("sync takes a directory; to upload one file use cp"),
        "{said}"
    );
}

#[test]
fn stat_of_a_bucket_or_a_prefix_says_what_to_run() {
    let bed = Bed::new(ServerKind::Versitygw, "wn-stat");
    bed.admin.put_object(&bed.bucket, "folder/a", "a").unwrap();
    let bucket = format!("s3://{}", bed.bucket);
    for url in [bucket.clone(), format!("{bucket}/")] {
        let output = run(bed.parabyte().args(["stat", &url]));
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{said}");
        assert!(said.contains("give a key"), "{said}");
        assert!(said.contains("parabyte ls"), "{said}");
        assert!(!said.contains("Content-Length"), "{said}");
    }
    let output = run(bed.parabyte().args(["stat", &bed.url("folder")]));
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("is a prefix"), "{said}");
    assert!(
        said.contains(&format!("parabyte ls {}", bed.url("folder/"))),
        "{said}"
    );
    assert!(said.contains("parabyte du"), "{said}");
    // A key that is neither: a plain not found, after one HEAD and one LIST.
    let output = run(bed.parabyte().args(["stat", &bed.url("nothing")]));
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("not found"), "{said}");
    assert!(!said.contains("is a prefix"), "{said}");
}

#[test]
fn an_upload_onto_a_key_kept_as_a_directory_says_why() {
    // versitygw over a directory answers 409 ExistingObjectIsDirectory; MinIO keeps both.
    let bed = Bed::new(ServerKind::Versitygw, "wn-409");
    bed.admin.put_object(&bed.bucket, "tree/a", "a").unwrap();
    std::fs::write(bed.path("f"), b"file").unwrap();
    let output = run(bed.parabyte().args(["cp", "f", &bed.url("tree")]));
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("{} is a prefix", bed.url("tree/"))),
        "{said}"
    );
    assert!(
        said.contains(&format!("upload into {}", bed.url("tree/"))),
        "{said}"
    );
    assert!(said.contains("409"), "{said}");
}

#[test]
fn the_top_line_of_help_names_everything_parabyte_does() {
    let dir = tempfile::tempdir().unwrap();
    let output = bare_parabyte(dir.path()).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    let top = help.lines().next().unwrap();
    for verb in ["downloads", "uploads", "copies", "syncs", "deletes"] {
        assert!(top.contains(verb), "{verb} not in {top:?}");
    }
}
