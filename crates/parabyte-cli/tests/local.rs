//! `parabyte cp /src /dst`: local trees copied in parallel, byte for byte, symbolic links
//! reported and never followed, nothing written through a link in the destination.

mod common;

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::Output;

use common::{bare_parabyte, files_under, stderr, summary};
use parabyte_testkit::payload;

const BIG: usize = 5 * (1 << 20) + 3;

/// A clean directory with the tree of `make_tree` at `src`.
fn dir_with_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    make_tree(&dir.path().join("src"));
    dir
}

/// A tree with a small file, a large one, an empty one, an executable, an empty directory,
/// and links to a file and to a directory.
fn make_tree(root: &Path) {
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(root.join("empty_dir")).unwrap();
    std::fs::write(root.join("a.txt"), b"hello").unwrap();
    std::fs::write(root.join("sub/big.bin"), payload(4, BIG)).unwrap();
    std::fs::write(root.join("sub/empty"), b"").unwrap();
    std::fs::write(root.join("run.sh"), b"#!/bin/sh\n").unwrap();
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    symlink("a.txt", root.join("link.txt")).unwrap();
    symlink("sub", root.join("dirlink")).unwrap();
}

fn cp(dir: &Path, args: &[&str]) -> Output {
    let mut command = bare_parabyte(dir);
    command.args(["cp", "--json", "--part-size", "1MiB", "--threads", "4"]);
    command.args(args);
    command.output().unwrap()
}

#[test]
fn a_tree_is_copied_and_links_are_reported_not_followed() {
    let dir = dir_with_tree();
    let output = cp(dir.path(), &["src", "dst"]);
    // Passed over and said, not failures: a tree holding links (a virtualenv) exits 0.
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    for link in ["src/link.txt", "src/dirlink"] {
        assert!(
            err.contains(&format!(
                "skip: skipped '{link}': a symbolic link inside the tree"
            )),
            "{err}"
        );
    }
    let json = summary(&output);
    assert_eq!(json["objects"], 4);
    assert_eq!(json["failed"], 0);
    assert_eq!(json["bytes"], BIG as u64 + 5 + 10);
    let dst = dir.path().join("dst");
    assert_eq!(
        files_under(&dst),
        vec!["a.txt", "run.sh", "sub/big.bin", "sub/empty"]
    );
    assert!(std::fs::read(dst.join("sub/big.bin")).unwrap() == payload(4, BIG));
    assert_eq!(std::fs::read(dst.join("a.txt")).unwrap(), b"hello");
    assert!(dst.join("empty_dir").is_dir());
    let mode = std::fs::metadata(dst.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
}

#[test]
fn a_single_file_goes_to_a_path_or_into_a_directory() {
    let dir = dir_with_tree();
    let output = cp(dir.path(), &["src/sub/big.bin", "out/"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(std::fs::read(dir.path().join("out/big.bin")).unwrap() == payload(4, BIG));
    let output = cp(dir.path(), &["src/a.txt", "renamed.txt"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        std::fs::read(dir.path().join("renamed.txt")).unwrap(),
        b"hello"
    );
    // A link the user names is read as the file it points to, as every peer reads it.
    let output = cp(dir.path(), &["src/link.txt", "copy.txt"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        std::fs::read(dir.path().join("copy.txt")).unwrap(),
        b"hello"
    );
    assert!(!std::fs::symlink_metadata(dir.path().join("copy.txt"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn nothing_is_written_through_a_link_in_the_destination() {
    let dir = dir_with_tree();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::create_dir_all(dir.path().join("dst")).unwrap();
    symlink(&elsewhere, dir.path().join("dst/sub")).unwrap();
    let output = cp(dir.path(), &["src", "dst"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("in the destination is a symbolic link"),
        "{}",
        stderr(&output)
    );
    assert!(files_under(&elsewhere).is_empty());
    assert!(dir.path().join("dst/a.txt").exists());
}

#[test]
fn a_tree_cannot_be_copied_into_itself() {
    let dir = dir_with_tree();
    let output = cp(dir.path(), &["src", "src/inner/copy"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("inside it"), "{}", stderr(&output));
    assert!(!dir.path().join("src/inner").exists());
}
