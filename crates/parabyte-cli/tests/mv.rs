//! `parabyte mv` against a real server: a copy, then each source that arrived deleted;
//! a source whose copy failed, or whose key `--no-clobber` kept for another object, stays.

mod common;

use common::{run, stderr, Bed};
use parabyte_testkit::{Fault, RequestKind, Rule, ServerKind};

#[test]
fn files_move_up_keys_move_across_and_down() {
    let bed = Bed::new(ServerKind::Minio, "mv");
    std::fs::create_dir_all(bed.path("src/sub")).unwrap();
    std::fs::write(bed.path("src/a.txt"), b"alpha").unwrap();
    std::fs::write(bed.path("src/sub/b.txt"), b"beta").unwrap();
    // Up: the files go, their directories stay (as with aws s3 mv).
    let up = run(bed.parabyte().args(["mv", "-r", "src", &bed.url("up/")]));
    assert!(up.status.success(), "{}", stderr(&up));
    assert!(!bed.path("src/a.txt").exists() && !bed.path("src/sub/b.txt").exists());
    assert_eq!(
        &bed.admin.get_object(&bed.bucket, "up/sub/b.txt").unwrap()[..],
        b"beta"
    );
    // Across: copied inside the store, then the old keys deleted.
    let across = run(bed
        .parabyte()
        .args(["mv", "-r", &bed.url("up/"), &bed.url("moved/")]));
    assert!(across.status.success(), "{}", stderr(&across));
    assert!(bed.admin.get_object(&bed.bucket, "up/a.txt").is_err());
    assert_eq!(
        &bed.admin.get_object(&bed.bucket, "moved/a.txt").unwrap()[..],
        b"alpha"
    );
    // Down: downloaded, then the key deleted.
    let down = run(bed
        .parabyte()
        .args(["mv", &bed.url("moved/a.txt"), "back.txt"]));
    assert!(down.status.success(), "{}", stderr(&down));
    assert_eq!(std::fs::read(bed.path("back.txt")).unwrap(), b"alpha");
    assert!(bed.admin.get_object(&bed.bucket, "moved/a.txt").is_err());
}

#[test]
fn a_source_whose_copy_failed_or_was_kept_out_stays() {
    let bed = Bed::new(ServerKind::Minio, "mv-stays");
    std::fs::create_dir_all(bed.path("src")).unwrap();
    for name in ["ok.txt", "refused.txt", "theirs.txt"] {
        std::fs::write(bed.path("src").join(name), name).unwrap();
    }
    bed.admin
        .put_object(&bed.bucket, "t/theirs.txt", "another object")
        .unwrap();
    bed.proxy.inject(
        Rule::kind(RequestKind::Put).key_contains("refused"),
        Fault::error(403, "AccessDenied"),
    );
    let output = run(bed
        .parabyte()
        .args(["mv", "-r", "--no-clobber", "src", &bed.url("t/")]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(!bed.path("src/ok.txt").exists(), "moved");
    assert!(
        bed.path("src/refused.txt").exists(),
        "its upload failed: it stays"
    );
    assert!(
        bed.path("src/theirs.txt").exists(),
        "--no-clobber kept their object: it stays"
    );
    assert_eq!(
        &bed.admin.get_object(&bed.bucket, "t/theirs.txt").unwrap()[..],
        b"another object"
    );
}

/// A move whose destination is its source, however spelled, is refused before anything is
/// copied, and the only copy stays (aws: "Cannot mv a file onto itself").
#[test]
fn a_move_onto_itself_is_refused_and_deletes_nothing() {
    let bed = Bed::new(ServerKind::Versitygw, "mv-itself");
    std::fs::create_dir_all(bed.path("d")).unwrap();
    std::fs::write(bed.path("d/f"), b"only copy").unwrap();
    bed.admin
        .put_object(&bed.bucket, "d/k", "only copy")
        .unwrap();
    let file = bed.path("d/f");
    let respelled = bed.path("d/../d/f");
    let folder = bed.path("d");
    let local: [[&str; 2]; 3] = [
        [file.to_str().unwrap(), file.to_str().unwrap()],
        [file.to_str().unwrap(), respelled.to_str().unwrap()],
        [file.to_str().unwrap(), folder.to_str().unwrap()],
    ];
    for [from, to] in local {
        let output = run(bed.parabyte().args(["mv", from, to]));
        assert_eq!(
            output.status.code(),
            Some(2),
            "{from} {to}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("onto itself"),
            "{}",
            stderr(&output)
        );
        assert_eq!(std::fs::read(&file).unwrap(), b"only copy");
    }
    let key = bed.url("d/k");
    for to in [key.clone(), bed.url("d/")] {
        let output = run(bed.parabyte().args(["mv", &key, &to]));
        assert_eq!(output.status.code(), Some(2), "{to}: {}", stderr(&output));
        assert_eq!(
            &bed.admin.get_object(&bed.bucket, "d/k").unwrap()[..],
            b"only copy"
        );
    }
    let tree = run(bed
        .parabyte()
        .args(["mv", "-r", &bed.url("d"), &bed.url("d/")]));
    assert_eq!(tree.status.code(), Some(2), "{}", stderr(&tree));
    assert_eq!(
        &bed.admin.get_object(&bed.bucket, "d/k").unwrap()[..],
        b"only copy"
    );
}

/// A move inside the store deletes its source only once the copy was compared with it
/// (the copy's ETag is the source's MD5, or its CRC64NVME is the one the source keeps):
/// on every server, an object parabyte uploaded moves whole.
fn a_move_inside_the_store_is_verified_then_deletes(kind: ServerKind) {
    let bed = Bed::new(kind, "mv-verified");
    std::fs::write(bed.path("f"), b"moved across").unwrap();
    let up = run(bed.parabyte().args(["cp", "f", &bed.url("a/f")]));
    assert!(up.status.success(), "{}", stderr(&up));
    let across = run(bed
        .parabyte()
        .args(["mv", "--json", &bed.url("a/f"), &bed.url("b/f")]));
    assert!(across.status.success(), "{}", stderr(&across));
    let summary: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&across.stdout)
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    let verified = &summary["verified"];
    assert_eq!(
        verified["checksum"].as_u64().unwrap() + verified["md5"].as_u64().unwrap(),
        1,
        "{summary}"
    );
    assert!(bed.admin.get_object(&bed.bucket, "a/f").is_err());
    assert_eq!(
        &bed.admin.get_object(&bed.bucket, "b/f").unwrap()[..],
        b"moved across"
    );
}

#[test]
fn a_move_inside_the_store_is_verified_then_deletes_versitygw() {
    a_move_inside_the_store_is_verified_then_deletes(ServerKind::Versitygw);
}

#[test]
fn a_move_inside_the_store_is_verified_then_deletes_minio() {
    a_move_inside_the_store_is_verified_then_deletes(ServerKind::Minio);
}

#[test]
fn a_move_inside_the_store_is_verified_then_deletes_seaweedfs() {
    a_move_inside_the_store_is_verified_then_deletes(ServerKind::SeaweedFs);
}

#[test]
fn a_move_inside_the_store_is_verified_then_deletes_moto() {
    a_move_inside_the_store_is_verified_then_deletes(ServerKind::Moto);
}
