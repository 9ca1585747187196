//! `parabyte cp - FILE`: standard input written into a local directory the way the store's
//! keys are, through the directory store's writes and `disk/`'s gates: in parts, each
//! checked by its CRC64NVME, under its name only when whole, never through a link or onto
//! a FIFO, and nothing at all in a dry run.

mod common;

use std::io::Write;
use std::os::unix::fs::{symlink, FileTypeExt};
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::Duration;

use common::{bare_parabyte, files_under, stderr, summary, wait_for, wait_for_exit};
use parabyte_testkit::payload;

const MIB: usize = 1 << 20;
/// Far above what any of these runs needs: only a hang reaches it.
const LIMIT: Duration = Duration::from_secs(60);

fn start(dir: &Path, args: &[&str]) -> Child {
    bare_parabyte(dir)
        .args(["cp", "--json", "--part-size", "5MiB"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Run `parabyte cp ARGS` in `dir` with `data` on standard input.
fn cp_stdin(dir: &Path, args: &[&str], data: Vec<u8>) -> Output {
    let mut child = start(dir, args);
    let mut input = child.stdin.take().unwrap();
    // The writer may be refused before it reads: a closed pipe is not this test's failure.
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    wait_for_exit(&mut child, LIMIT);
    feeder.join().unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn standard_input_becomes_a_file_whole_checked_and_with_nothing_hidden_left() {
    let dir = tempfile::tempdir().unwrap();
    for (name, size) in [("small.bin", 1000), ("big.bin", 12 * MIB + 5)] {
        let output = cp_stdin(dir.path(), &["-", name], payload(21, size));
        assert!(output.status.success(), "{name}: {}", stderr(&output));
        let json = summary(&output);
        assert_eq!(json["objects"], 1, "{name}");
        assert_eq!(json["bytes"], size, "{name}");
        assert_eq!(json["verified"]["checksum"], 1, "{name}: {json}");
        let written = std::fs::read(dir.path().join(name)).unwrap();
        assert!(
            written == payload(21, size),
            "{name}: {} bytes",
            written.len()
        );
    }
    assert_eq!(files_under(dir.path()), ["big.bin", "small.bin"]);
}

#[test]
fn a_directory_is_refused_as_the_destination_of_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("existing")).unwrap();
    for destination in ["existing", "new/", "."] {
        let output = cp_stdin(dir.path(), &["-", destination], b"bytes".to_vec());
        assert_eq!(output.status.code(), Some(2), "{destination}");
        assert!(
            stderr(&output).contains("give the file's path"),
            "{destination}: {}",
            stderr(&output)
        );
    }
    assert!(files_under(dir.path()).is_empty());
    assert!(!dir.path().join("new").exists());
}

#[test]
fn no_clobber_keeps_the_file_and_a_dry_run_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kept"), b"theirs").unwrap();
    for size in [10, 6 * MIB] {
        let output = cp_stdin(dir.path(), &["--no-clobber", "-", "kept"], payload(3, size));
        assert!(output.status.success(), "{}", stderr(&output));
        assert_eq!(summary(&output)["skipped"], 1);
        assert_eq!(std::fs::read(dir.path().join("kept")).unwrap(), b"theirs");
    }
    let output = bare_parabyte(dir.path())
        .args(["cp", "--dryrun", "-", "planned"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        said.contains("(dryrun) copy: - to ") && said.contains("planned"),
        "{said}"
    );
    assert_eq!(files_under(dir.path()), ["kept"]);
}

#[test]
fn never_through_a_link_onto_a_fifo_or_into_a_hard_link() {
    let dir = tempfile::tempdir().unwrap();
    let (root, outside) = (dir.path().join("root"), dir.path().join("outside"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("target"), b"theirs").unwrap();
    symlink(outside.join("target"), root.join("link")).unwrap();
    let fifo =
        std::ffi::CString::new(root.join("fifo").into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only reads it.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    std::fs::hard_link(outside.join("target"), root.join("hard")).unwrap();
    for (name, size) in [
        ("link", 10),
        ("fifo", 10),
        ("link", 6 * MIB),
        ("fifo", 6 * MIB),
    ] {
        let output = cp_stdin(&root, &["-", name], payload(5, size));
        assert_eq!(output.status.code(), Some(1), "{name}: {}", stderr(&output));
        assert!(
            stderr(&output).contains(name),
            "{name}: {}",
            stderr(&output)
        );
    }
    let output = cp_stdin(&root, &["-", "hard"], payload(5, 6 * MIB));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(std::fs::read(root.join("hard")).unwrap() == payload(5, 6 * MIB));
    assert_eq!(std::fs::read(outside.join("target")).unwrap(), b"theirs");
    assert!(std::fs::symlink_metadata(root.join("fifo"))
        .unwrap()
        .file_type()
        .is_fifo());
    assert_eq!(files_under(&root), ["fifo", "hard", "link"]);
}

#[test]
fn killed_mid_stream_the_name_never_holds_a_part_and_the_next_run_takes_the_parts_over() {
    let dir = tempfile::tempdir().unwrap();
    let data = payload(9, 12 * MIB + 5);
    let mut child = start(dir.path(), &["-", "out.bin"]);
    let mut input = child.stdin.take().unwrap();
    // The first part is whole once 5 MiB and one more byte went in; its file then appears.
    input.write_all(&data[..6 * MIB]).unwrap();
    wait_for("a part file", LIMIT, || {
        files_under(dir.path())
            .iter()
            .any(|name| name.starts_with(".parabyte-"))
    });
    child.kill().unwrap();
    child.wait().unwrap();
    drop(input);
    assert!(
        !dir.path().join("out.bin").exists(),
        "a part under the final name"
    );

    let output = cp_stdin(dir.path(), &["-", "out.bin"], data.clone());
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(std::fs::read(dir.path().join("out.bin")).unwrap() == data);
    assert_eq!(
        files_under(dir.path()),
        ["out.bin"],
        "the killed run's parts were taken over"
    );
}
