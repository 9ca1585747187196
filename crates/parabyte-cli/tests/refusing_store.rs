//! The write side against a store that refuses checksum headers (the test kit's
//! `RefusingStore` in front of a real server), in both of the ways such stores word it:
//! a tree, a multipart file, a stream, a sync with deletes, a move, a copy in parts and a
//! delete all work, each object goes up checked by its Content-MD5, the run learns the
//! refusal once, and the summary names what was stored without a CRC.

mod common;

use std::io::Write;
use std::process::Stdio;

use common::{run, stderr, summary, tree, upload_tree, Bed};
use parabyte_testkit::{payload, Refusal, ServerKind};

const MIB: usize = 1 << 20;

fn refused(bed: &Bed) -> u64 {
    bed.refusing.as_ref().expect("a refusing bed").refused()
}

fn stored(bed: &Bed, key: &str) -> Vec<u8> {
    bed.admin.get_object(&bed.bucket, key).unwrap().to_vec()
}

fn every_write_goes_with_content_md5(kind: ServerKind, refusal: Refusal) {
    let bed = Bed::refusing_checksums(kind, "refusing", refusal);

    // A tree, with files of one part and of several.
    let output = upload_tree(&bed);
    // Learned once a run: only the writes that set out before the first refusal came back
    // (at most one per object) carried the headers.
    let first_run = refused(&bed);
    assert!(
        (1..=tree().len() as u64).contains(&first_run),
        "{first_run} writes refused"
    );
    let json = summary(&output);
    let mut named: Vec<String> = json["sent_with_md5_objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap().to_owned())
        .collect();
    named.sort();
    let mut expected: Vec<String> = tree()
        .iter()
        .map(|(path, _)| bed.url(&format!("up/{path}")))
        .collect();
    expected.sort();
    assert_eq!(named, expected, "each object stored without a CRC, by name");
    assert_eq!(json["sent_with_md5"], tree().len());
    assert_eq!(json["verified"]["size_only"], 0, "never unchecked");
    for (path, bytes) in tree() {
        assert!(stored(&bed, &format!("up/{path}")) == bytes, "{path}");
    }
    assert_eq!(bed.admin.open_uploads(&bed.bucket).unwrap(), 0);

    // A stream of two parts.
    let mut child = bed
        .parabyte_process(bed.server.secret_key())
        .args(["cp", "--part-size", "5MiB", "-", &bed.url("stream.bin")])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let streamed = payload(5, 7 * MIB);
    child.stdin.take().unwrap().write_all(&streamed).unwrap();
    let ended = child.wait_with_output().unwrap();
    assert!(ended.status.success(), "{}", stderr(&ended));
    assert!(stored(&bed, "stream.bin") == streamed);

    // A sync up that sends a changed file and deletes the key of a removed one.
    std::fs::write(bed.path("src/small.txt"), b"changed\n").unwrap();
    std::fs::remove_file(bed.path("src/empty")).unwrap();
    let output = run(bed
        .parabyte()
        .args(["sync", "--delete", "--json", "src", &bed.url("up")]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        (&summary(&output)["objects"], &summary(&output)["deleted"]),
        (&1.into(), &1.into())
    );
    assert_eq!(stored(&bed, "up/small.txt"), b"changed\n");
    assert!(bed.admin.get_object(&bed.bucket, "up/empty").is_err());

    // A copy inside the store in parts, then a move of a local file.
    let output = run(bed.parabyte().args([
        "cp",
        "--copy-cutoff",
        "5MiB",
        "--part-size",
        "5MiB",
        &bed.url("up/nested/deeper/ünïcödé+%.bin"),
        &bed.url("copy/big.bin"),
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stored(&bed, "copy/big.bin") == payload(4, 11 * MIB + 7));
    std::fs::write(bed.path("moved.txt"), b"moved\n").unwrap();
    let output = run(bed
        .parabyte()
        .args(["mv", "moved.txt", &bed.url("moved.txt")]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stored(&bed, "moved.txt"), b"moved\n");
    assert!(!bed.path("moved.txt").exists(), "moved once stored");

    // A delete of a prefix (DeleteObjects goes with its Content-MD5).
    let output = run(bed.parabyte().args(["rm", "-r", &bed.url("copy/")]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(bed.admin.get_object(&bed.bucket, "copy/big.bin").is_err());

    // What a person reads names the object stored without a CRC.
    std::fs::write(bed.path("one.txt"), b"one\n").unwrap();
    let output = run(bed
        .parabyte()
        .args(["cp", "--no-progress", "one.txt", &bed.url("one.txt")]));
    let text = stderr(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("stored without a CRC")
            && text.contains(&format!("  {}", bed.url("one.txt"))),
        "{text}"
    );
    assert_eq!(bed.admin.open_uploads(&bed.bucket).unwrap(), 0);
}

#[test]
fn every_write_goes_with_content_md5_versitygw_refusing_not_implemented() {
    every_write_goes_with_content_md5(ServerKind::Versitygw, Refusal::NotImplemented);
}

#[test]
fn every_write_goes_with_content_md5_minio_refusing_invalid_argument() {
    every_write_goes_with_content_md5(ServerKind::Minio, Refusal::InvalidArgument);
}

#[test]
fn every_write_goes_with_content_md5_moto_refusing_invalid_argument() {
    every_write_goes_with_content_md5(ServerKind::Moto, Refusal::InvalidArgument);
}

#[test]
fn every_write_goes_with_content_md5_seaweedfs_refusing_not_implemented() {
    every_write_goes_with_content_md5(ServerKind::SeaweedFs, Refusal::NotImplemented);
}
