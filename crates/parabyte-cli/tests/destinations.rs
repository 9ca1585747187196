//! What a destination may be: a device or a FIFO gets the bytes in order and stays what it
//! is, `-` is stdout, a destination that cannot be written fails before any GET, and a link
//! planted at any path parabyte creates is never written through or replaced.

mod common;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{bare_parabyte, files_under, run, stderr, summary, temporary_name, Bed};
use parabyte_testkit::{payload, Fault, Rule, ServerKind, Serving, WebServer};

const MIB: u64 = 1 << 20;
/// Large enough for eight parts of 1 MiB, which arrive in any order.
const SIZE: u64 = 8 * MIB + 3;

fn bed_with_big(name: &str) -> Bed {
    let bed = Bed::new(ServerKind::Versitygw, name);
    bed.admin
        .put_generated(&bed.bucket, "set/big", 5, SIZE)
        .unwrap();
    bed
}

fn mknod(path: &Path, mode: libc::mode_t, device: libc::dev_t) {
    let name = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mknod only reads it.
    let status = unsafe { libc::mknod(name.as_ptr(), mode, device) };
    assert_eq!(status, 0, "mknod {path:?} (the tests run as root)");
}

#[test]
fn a_character_device_is_written_and_never_replaced() {
    let bed = bed_with_big("dest-device");
    // The null device, made where the test owns it: the same as /dev/null.
    let null = bed.path("null");
    mknod(&null, libc::S_IFCHR | 0o666, libc::makedev(1, 3));
    let output = run(bed.parabyte().args([
        "cp",
        "--json",
        "--part-size",
        "1MiB",
        &bed.url("set/big"),
        "null",
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(summary(&output)["bytes"], SIZE, "measured");
    let kind = std::fs::symlink_metadata(&null).unwrap().file_type();
    assert!(kind.is_char_device(), "still the device: {kind:?}");
    assert_eq!(
        files_under(bed.dir.path()),
        vec!["null"],
        "no temporary file"
    );
}

#[test]
fn a_fifo_reader_gets_the_exact_bytes() {
    let bed = bed_with_big("dest-fifo");
    let fifo = bed.path("pipe");
    mknod(&fifo, libc::S_IFIFO | 0o600, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let output =
        run(bed
            .parabyte()
            .args(["cp", "--part-size", "1MiB", &bed.url("set/big"), "pipe"]));
    assert!(output.status.success(), "{}", stderr(&output));
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(kind.is_fifo(), "still the FIFO: {kind:?}");
    let received = reader.join().unwrap();
    assert_eq!(received.len() as u64, SIZE);
    assert!(received == payload(5, SIZE as usize), "in order, exactly");
}

#[test]
fn a_part_that_fails_into_a_device_ends_the_object_instead_of_hanging() {
    let bed = bed_with_big("dest-device-fails");
    let null = bed.path("null");
    mknod(&null, libc::S_IFCHR | 0o666, libc::makedev(1, 3));
    // The parts after it wait their turn; they must stop when it fails for good.
    bed.proxy.inject(
        Rule::get().range_start(2 * MIB),
        Fault::error(500, "InternalError"),
    );
    let mut child = bed
        .parabyte_process(bed.server.secret_key())
        .args([
            "cp",
            "--retries",
            "0",
            "--part-size",
            "1MiB",
            &bed.url("set/big"),
            "null",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("the download hung behind the failed part");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(1));
    let kind = std::fs::symlink_metadata(&null).unwrap().file_type();
    assert!(kind.is_char_device(), "still the device: {kind:?}");
}

#[test]
fn a_dash_streams_to_stdout() {
    let bed = bed_with_big("dest-stdout");
    let output = run(bed
        .parabyte()
        .args(["cp", "--part-size", "1MiB", &bed.url("set/big"), "-"]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        output.stdout == payload(5, SIZE as usize),
        "the object, in order"
    );
    assert!(files_under(bed.dir.path()).is_empty(), "no file named '-'");
}

/// `--json` prints the summary to stdout: a destination that is stdout under another name
/// is refused as `-` is, before any GET, instead of mixing the summary into the bytes.
#[test]
fn stdout_by_another_name_is_refused_with_json_as_dash_is() {
    let bed = bed_with_big("dest-stdout-json");
    for destination in ["/dev/stdout", "/proc/self/fd/1"] {
        for flag in ["--json", "--json-lines"] {
            let output = run(bed
                .parabyte()
                .args(["cp", flag, &bed.url("set/big"), destination]));
            let text = stderr(&output);
            assert_eq!(
                output.status.code(),
                Some(2),
                "{destination} {flag}: {text}"
            );
            assert!(text.contains("is stdout too"), "{text}");
        }
    }
    assert_eq!(bed.proxy.counts().get, 0);
}

#[test]
fn a_destination_that_cannot_be_written_fails_before_any_get() {
    let bed = bed_with_big("dest-unwritable");
    std::fs::write(bed.path("file"), b"not a directory").unwrap();
    for (source, destination) in [
        (bed.url("set/"), "file/sub/"),
        (bed.url("set/big"), "file/big"),
        (bed.url("set/big"), "file/"),
    ] {
        bed.proxy.reset();
        let output = run(bed.parabyte().args(["cp", &source, destination]));
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{destination}: {text}");
        assert!(
            text.contains(&format!("'{}", destination.trim_end_matches('/')))
                && text.contains("a file where a directory is needed"),
            "names the user's path: {text}"
        );
        assert!(!text.contains(".parabyte-"), "no temporary name: {text}");
        assert_eq!(bed.proxy.counts().get, 0, "{destination}: no GET");
    }
    assert_eq!(std::fs::read(bed.path("file")).unwrap(), b"not a directory");
}

#[test]
fn a_file_system_that_refuses_files_fails_before_any_get_even_for_root() {
    // sysfs lets root pass access(W_OK) and still refuses every new file: only creating
    // one tells (before, one GET went out and the object failed with exit 1).
    let bed = bed_with_big("dest-sysfs");
    for destination in ["/sys/parabyte-test.bin", "/sys/kernel/parabyte-test/"] {
        bed.proxy.reset();
        let output = run(bed
            .parabyte()
            .args(["cp", &bed.url("set/big"), destination]));
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{destination}: {text}");
        assert!(text.contains("cannot write to"), "{destination}: {text}");
        assert!(!text.contains(".parabyte-"), "no probe's name: {text}");
        assert_eq!(bed.proxy.counts().get, 0, "{destination}: no GET");
    }
}

/// The temporary name parabyte uses for a file named `name` (and the one it used to).
fn temporary_names(name: &str) -> [String; 2] {
    [temporary_name(name), format!(".{name}.parabyte-part")]
}

#[test]
fn links_planted_where_parabyte_writes_are_never_followed() {
    let bed = bed_with_big("planted-links");
    bed.admin
        .put_object(&bed.bucket, "set/sub/small", payload(6, 100))
        .unwrap();
    bed.admin
        .put_generated(&bed.bucket, "set/final", 8, 3 * MIB)
        .unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let victim = elsewhere.path().join("victim");
    std::fs::write(&victim, b"keep me").unwrap();
    let out = bed.path("out");
    std::fs::create_dir(&out).unwrap();
    // At the temporary names of `big`, at the final name `final`, and at the directory `sub`.
    for temp in temporary_names("big") {
        std::os::unix::fs::symlink(&victim, out.join(temp)).unwrap();
    }
    std::os::unix::fs::symlink(&victim, out.join("final")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), out.join("sub")).unwrap();

    let output = run(bed
        .parabyte()
        .args(["cp", "--part-size", "1MiB", &bed.url("set/"), "out"]));
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    for key in ["set/big", "set/final", "set/sub/small"] {
        assert!(text.contains(&bed.url(key)), "{key} reported: {text}");
    }
    assert!(text.contains("symbolic link"), "{text}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    let outside: Vec<_> = files_under(elsewhere.path());
    assert_eq!(outside, vec!["victim"], "nothing written outside");
    for name in ["final", "sub"] {
        let kind = std::fs::symlink_metadata(out.join(name))
            .unwrap()
            .file_type();
        assert!(kind.is_symlink(), "{name} left as it was");
    }
}

/// Only the destination the user named is streamed into. A FIFO planted at a key's path
/// inside DEST (with no reader it would hang the run) and a hard link at a temporary name
/// to a file outside DEST (it would be written through) each fail their own object, by name.
#[test]
fn a_fifo_or_hard_link_planted_inside_the_destination_is_never_written() {
    let bed = bed_with_big("planted-fifo");
    for key in ["set/piped", "set/small"] {
        bed.admin
            .put_object(&bed.bucket, key, payload(7, 100))
            .unwrap();
    }
    let victim = bed.path("victim");
    std::fs::write(&victim, b"keep me").unwrap();
    let out = bed.path("out");
    std::fs::create_dir(&out).unwrap();
    mknod(&out.join("piped"), libc::S_IFIFO | 0o600, 0);
    std::fs::hard_link(&victim, out.join(temporary_name("big"))).unwrap();

    let output = run(bed.parabyte().timeout(Duration::from_secs(120)).args([
        "cp",
        "--part-size",
        "1MiB",
        &bed.url("set/"),
        "out",
    ]));
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    for key in ["set/big", "set/piped"] {
        assert!(text.contains(&bed.url(key)), "{key} reported: {text}");
    }
    assert!(
        text.contains("a FIFO") && text.contains("hard link"),
        "{text}"
    );
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    let kind = std::fs::symlink_metadata(out.join("piped"))
        .unwrap()
        .file_type();
    assert!(kind.is_fifo(), "still the FIFO: {kind:?}");
    assert_eq!(std::fs::read(out.join("small")).unwrap(), payload(7, 100));
}

#[test]
fn a_local_tree_copy_never_creates_directories_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let (source, destination) = (dir.path().join("src"), dir.path().join("dst"));
    std::fs::create_dir_all(source.join("sub/deeper")).unwrap();
    std::fs::write(source.join("sub/deeper/f"), payload(1, 1000)).unwrap();
    std::fs::write(source.join("top"), payload(2, 1000)).unwrap();
    std::fs::create_dir(&destination).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), destination.join("sub")).unwrap();

    let output = bare_parabyte(dir.path())
        .arg("cp")
        .arg(&source)
        .arg(&destination)
        .output()
        .unwrap();
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("symbolic link"), "{text}");
    assert!(
        std::fs::read_dir(elsewhere.path())
            .unwrap()
            .next()
            .is_none(),
        "nothing created through the link"
    );
    assert_eq!(
        std::fs::read(destination.join("top")).unwrap(),
        payload(2, 1000)
    );
}

#[test]
fn a_web_file_streams_into_a_fifo_or_stdout() {
    let server = WebServer::start().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(server.root().join("big.bin"), payload(4, SIZE as usize)).unwrap();
    let url = server.url(Serving::Ranges, "big.bin");
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    mknod(&fifo, libc::S_IFIFO | 0o600, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let cp = |destination: &str| {
        bare_parabyte(dir.path())
            .args(["cp", "--part-size", "1MiB", &url, destination])
            .output()
            .unwrap()
    };
    let output = cp("pipe");
    assert!(output.status.success(), "{}", stderr(&output));
    // Checked first: if the FIFO were replaced, the reader would wait forever.
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(kind.is_fifo(), "still the FIFO: {kind:?}");
    assert!(
        reader.join().unwrap() == payload(4, SIZE as usize),
        "FIFO: in order"
    );

    let output = cp("-");
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        output.stdout == payload(4, SIZE as usize),
        "stdout: in order"
    );
    assert_eq!(files_under(dir.path()), vec!["pipe"], "no other file");
}
