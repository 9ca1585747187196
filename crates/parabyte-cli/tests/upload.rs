//! Uploads through the real binary against the real servers: every key's bytes read back
//! and compared, the CRC64NVME each object keeps checked by a download, requests counted by
//! the proxy, faults injected by it, and nothing left behind (no object, no unfinished
//! multipart upload) when an upload fails.

mod common;

use std::os::unix::ffi::OsStrExt;

use std::process::Stdio;
use std::time::Duration;

use common::{
    files_under, run, stderr, summary, tree, upload_tree, wait_for, wait_for_exit, write_tree, Bed,
};
use parabyte_testkit::{
    payload, CountingProxy, Fault, RequestKind, Rule, ServerKind, Serving, WebServer,
    MINIO_KMS_KEY_ID,
};

const MIB: usize = 1024 * 1024;

fn tree_round_trip(kind: ServerKind) {
    let bed = Bed::new(kind, "upload");
    let output = upload_tree(&bed);
    for (path, bytes) in tree() {
        let stored = bed
            .admin
            .get_object(&bed.bucket, &format!("up/{path}"))
            .unwrap();
        assert!(
            stored == bytes,
            "{path}: {} vs {} bytes",
            stored.len(),
            bytes.len()
        );
    }
    // One PUT per file up to a part, one per part above it, and a create and a complete
    // for each of the two multipart files. moto's complete names no CRC: one HEAD each
    // checks the one it keeps.
    let seen = bed.proxy.counts();
    let heads = if kind == ServerKind::Moto { 2 } else { 0 };
    assert_eq!(
        (seen.put, seen.other, seen.get, seen.head),
        (3 + 2 + 3, 4, 0, heads)
    );
    assert_eq!(
        summary(&output)["verified"]["checksum"],
        tree().len(),
        "every upload"
    );
    let json = summary(&output);
    assert_eq!(json["requests"]["put"], seen.put);
    assert_eq!(json["requests"]["multipart"], seen.other);
    assert_eq!(json["objects"], tree().len());
    assert_eq!(bed.admin.open_uploads(&bed.bucket).unwrap(), 0);

    // Each object keeps the CRC64NVME sent, which the download checks at no extra cost.
    let back = run(bed
        .parabyte()
        .args(["cp", "--json", &bed.url("up/"), "back"]));
    assert!(back.status.success(), "{}", stderr(&back));
    let downloaded = summary(&back);
    assert_eq!(
        downloaded["verified"]["checksum"],
        tree().len() - 1,
        "all but the empty one"
    );
    for (path, bytes) in tree() {
        assert_eq!(
            std::fs::read(bed.path("back").join(path)).unwrap(),
            bytes,
            "{path}"
        );
    }
}

#[test]
fn a_tree_goes_up_and_comes_back_checked_versitygw() {
    tree_round_trip(ServerKind::Versitygw);
}

#[test]
fn a_tree_goes_up_and_comes_back_checked_minio() {
    tree_round_trip(ServerKind::Minio);
}

#[test]
fn a_tree_goes_up_and_comes_back_checked_seaweedfs() {
    tree_round_trip(ServerKind::SeaweedFs);
}

#[test]
fn a_tree_goes_up_and_comes_back_checked_moto() {
    tree_round_trip(ServerKind::Moto);
}

/// A source on another server and account (`--source-endpoint-url`, `--source-profile`):
/// ranged GETs there feed the part uploads here, nothing copied inside either store and
/// nothing written to the disk; what deletes or lists the destination as the source is
/// refused.
#[test]
fn a_copy_from_another_endpoint_and_account_streams_through_parabyte() {
    let from = Bed::new(ServerKind::Versitygw, "across-from");
    let to = Bed::new(ServerKind::Minio, "across-to");
    let objects = [
        ("p/small.txt", payload(21, 1000)),
        ("p/empty", Vec::new()),
        ("p/big.bin", payload(22, 11 * MIB + 7)),
    ];
    for (key, bytes) in &objects {
        from.admin
            .put_object(&from.bucket, key, bytes.clone())
            .unwrap();
    }
    // The source's account is a profile of its own; the destination's is the environment's.
    let aws = to.path(".aws");
    std::fs::create_dir_all(&aws).unwrap();
    std::fs::write(
        aws.join("credentials"),
        format!(
            "[source]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            from.server.access_key(),
            from.server.secret_key()
        ),
    )
    .unwrap();
    let endpoint = from.proxy.endpoint();
    let source_flags = [
        "--source-endpoint-url",
        &endpoint,
        "--source-profile",
        "source",
        "--source-region",
        from.server.region(),
    ];
    let output = run(to
        .parabyte()
        .args(["cp", "-r", "--json", "--part-size", "5MiB"])
        .args(source_flags)
        .args([&from.url("p/"), &to.url("q/")]));
    assert!(output.status.success(), "{}", stderr(&output));
    for (key, bytes) in &objects {
        let copied = key.replacen("p/", "q/", 1);
        assert!(
            to.admin.get_object(&to.bucket, &copied).unwrap() == *bytes,
            "{copied}"
        );
    }
    // Reads there (a LIST and a GET per part: the listing gave the sizes), writes here.
    let (there, here) = (from.proxy.counts(), to.proxy.counts());
    assert_eq!((there.put, there.other), (0, 0));
    assert_eq!(
        there.get,
        1 + 3,
        "a GET per part, none for the object listed empty"
    );
    assert_eq!((here.get, here.list), (0, 0));
    assert_eq!(here.put, 2 + 3, "two PUTs and three parts");
    assert_eq!(to.admin.open_uploads(&to.bucket).unwrap(), 0);
    assert!(files_under(to.dir.path())
        .iter()
        .all(|file| file.starts_with(".aws/")));

    // A single key, size unknown: its first part's GET tells it, no probe.
    let output = run(to
        .parabyte()
        .args(["cp", "--json", "--part-size", "5MiB"])
        .args(source_flags)
        .args([&from.url("p/big.bin"), &to.url("one.bin")]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(to.admin.get_object(&to.bucket, "one.bin").unwrap() == objects[2].1);
    assert_eq!(from.proxy.counts().get - there.get, 3);

    // mv would delete the source's keys in the destination's store: refused, as neither
    // mv's nor sync's flags take a source store at all.
    for (command, said) in [
        (["mv", "-r"], "--source-endpoint-url"),
        (["sync", "--delete"], "--source-endpoint-url"),
    ] {
        let output = run(to
            .parabyte()
            .args(command)
            .args(source_flags)
            .args([&from.url("p/"), &to.url("r/")]));
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(stderr(&output).contains(said), "{}", stderr(&output));
    }
    assert_eq!(
        from.admin.get_object(&from.bucket, "p/small.txt").unwrap(),
        objects[0].1
    );
}

#[test]
fn a_file_goes_to_the_key_named_or_under_the_prefix_named() {
    let bed = Bed::new(ServerKind::Versitygw, "upload-one");
    std::fs::write(bed.path("f.txt"), b"one file\n").unwrap();
    for (destination, key) in [("s3://{b}/k.txt", "k.txt"), ("s3://{b}/p/", "p/f.txt")] {
        let destination = destination.replace("{b}", &bed.bucket);
        let output = run(bed.parabyte().args(["cp", "f.txt", &destination]));
        assert!(output.status.success(), "{}", stderr(&output));
        assert_eq!(
            &bed.admin.get_object(&bed.bucket, key).unwrap()[..],
            b"one file\n"
        );
    }
}

/// Runs an upload of one 11 MiB file (three parts of 5 MiB) with `fault` on the requests
/// `rule` picks; returns the run's output.
fn upload_with(bed: &Bed, rule: Rule, fault: Fault) -> std::process::Output {
    std::fs::write(bed.path("big.bin"), payload(9, 11 * MIB)).unwrap();
    bed.proxy.inject(rule, fault);
    run(bed.parabyte().args([
        "cp",
        "--json",
        "--part-size",
        "5MiB",
        "--timeout",
        "2",
        "big.bin",
        &bed.url("big.bin"),
    ]))
}

#[test]
fn a_part_refused_or_unanswered_is_sent_again() {
    // The second: the store took the part, but its answer never came.
    let lost = Fault::delay_headers(Duration::from_secs(30));
    for fault in [Fault::error(503, "SlowDown"), lost] {
        let bed = Bed::new(ServerKind::Minio, "upload-retry");
        let output = upload_with(&bed, Rule::kind(RequestKind::Put).nth(2), fault);
        assert!(output.status.success(), "{}", stderr(&output));
        let json = summary(&output);
        assert_eq!(json["requests"]["put"], 4, "three parts and one sent again");
        assert_eq!(json["retries"], 1);
        let stored = bed.admin.get_object(&bed.bucket, "big.bin").unwrap();
        assert!(stored == payload(9, 11 * MIB));
    }
}

#[test]
fn a_complete_answered_200_with_an_error_is_a_failure_sent_again() {
    let bed = Bed::new(ServerKind::Minio, "upload-200");
    // The second POST is the complete (the first created the upload).
    let rule = Rule::kind(RequestKind::Other)
        .key_contains("big.bin")
        .nth(2);
    let output = upload_with(&bed, rule, Fault::error_in_200("InternalError"));
    assert!(output.status.success(), "{}", stderr(&output));
    let json = summary(&output);
    assert_eq!(
        json["requests"]["multipart"], 3,
        "create, the complete, and it again"
    );
    assert_eq!(json["retries"], 1);
    let stored = bed.admin.get_object(&bed.bucket, "big.bin").unwrap();
    assert!(stored == payload(9, 11 * MIB));
    assert_eq!(bed.admin.open_uploads(&bed.bucket).unwrap(), 0);
}

/// The store commits, and the complete's answer is cut off before its body: the retry finds
/// no such upload. The key is looked at before a failure is reported, and the object there
/// is this upload's (its CRC64NVME), so the run ends well.
fn a_complete_whose_answer_is_lost_ends_well(kind: ServerKind) {
    let bed = Bed::new(kind, "upload-lost");
    let rule = Rule::kind(RequestKind::Other)
        .key_contains("big.bin")
        .nth(2);
    let output = upload_with(&bed, rule, Fault::reset_after(0));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        summary(&output)["verified"]["checksum"],
        1,
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let stored = bed.admin.get_object(&bed.bucket, "big.bin").unwrap();
    assert!(stored == payload(9, 11 * MIB));
    assert_eq!(bed.admin.open_uploads(&bed.bucket).unwrap(), 0);
}

#[test]
fn a_complete_whose_answer_is_lost_ends_well_minio() {
    a_complete_whose_answer_is_lost_ends_well(ServerKind::Minio);
}

#[test]
fn a_complete_whose_answer_is_lost_ends_well_versitygw() {
    a_complete_whose_answer_is_lost_ends_well(ServerKind::Versitygw);
}

#[test]
fn a_failed_upload_is_aborted_and_leaves_nothing() {
    let bed = Bed::new(ServerKind::Minio, "upload-abort");
    let output = upload_with(
        &bed,
        Rule::kind(RequestKind::Put).nth(2),
        Fault::error(403, "AccessDenied"),
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("big.bin"), "{}", stderr(&output));
    assert_eq!(bed.admin.open_uploads(&bed.bucket).unwrap(), 0, "aborted");
    assert!(bed.admin.get_object(&bed.bucket, "big.bin").is_err());
}

fn no_clobber_keeps_what_is_there(kind: ServerKind) {
    let bed = Bed::new(kind, "upload-noclobber");
    bed.admin
        .put_object(&bed.bucket, "small.txt", "theirs")
        .unwrap();
    bed.admin
        .put_object(&bed.bucket, "big.bin", "theirs too")
        .unwrap();
    std::fs::write(bed.path("small.txt"), b"mine").unwrap();
    std::fs::write(bed.path("big.bin"), payload(5, 6 * MIB)).unwrap();
    for name in ["small.txt", "big.bin"] {
        let output = run(bed.parabyte().args([
            "cp",
            "--json",
            "--no-clobber",
            "--part-size",
            "5MiB",
            name,
            &bed.url(name),
        ]));
        assert!(output.status.success(), "{name}: {}", stderr(&output));
        assert_eq!(summary(&output)["skipped"], 1, "{name}");
    }
    // Looked at first (one HEAD each), nothing written: a store that ignores
    // If-None-Match would have replaced them.
    let seen = bed.proxy.counts();
    assert_eq!((seen.head, seen.put, seen.other), (2, 0, 0), "{seen:?}");
    assert_eq!(
        &bed.admin.get_object(&bed.bucket, "small.txt").unwrap()[..],
        b"theirs"
    );
    assert_eq!(
        &bed.admin.get_object(&bed.bucket, "big.bin").unwrap()[..],
        b"theirs too"
    );
    assert_eq!(bed.admin.open_uploads(&bed.bucket).unwrap(), 0);
}

#[test]
fn no_clobber_keeps_what_is_there_minio() {
    no_clobber_keeps_what_is_there(ServerKind::Minio);
}

#[test]
fn no_clobber_keeps_what_is_there_moto() {
    no_clobber_keeps_what_is_there(ServerKind::Moto);
}

#[test]
fn links_fifos_and_names_that_cannot_be_keys_are_reported_and_the_rest_go_on() {
    let bed = Bed::new(ServerKind::Versitygw, "upload-odd");
    let src = bed.path("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("plain.txt"), b"plain").unwrap();
    std::fs::write(bed.path("outside.txt"), b"secret").unwrap();
    std::os::unix::fs::symlink(bed.path("outside.txt"), src.join("link.txt")).unwrap();
    let fifo = std::ffi::CString::new(src.join("fifo").as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only reads it.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let odd = std::ffi::OsStr::from_bytes(b"not-utf8-\xff.txt");
    std::fs::write(src.join(odd), b"odd").unwrap();
    let output = run(bed.parabyte().args(["cp", "-r", "src", &bed.url("t/")]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    for reported in ["link.txt", "fifo", "not UTF-8"] {
        assert!(message.contains(reported), "{reported}: {message}");
    }
    assert_eq!(
        &bed.admin.get_object(&bed.bucket, "t/plain.txt").unwrap()[..],
        b"plain"
    );
    assert!(bed.admin.get_object(&bed.bucket, "t/link.txt").is_err());
}

/// Starts an upload of big.bin (three parts of 5 MiB, one at a time) whose second part's
/// answer is held, stops it with `signal` once that part is sent, and returns what it said.
fn stop_mid_upload(bed: &Bed, signal: i32) -> (Option<i32>, String) {
    std::fs::write(bed.path("big.bin"), payload(7, 11 * MIB)).unwrap();
    let held = bed.proxy.inject(
        Rule::kind(RequestKind::Put).nth(2),
        Fault::delay_headers(Duration::from_secs(60)),
    );
    let mut child = bed
        .parabyte_process(bed.server.secret_key())
        .args(["cp", "--part-size", "5MiB", "--ranges-per-object", "1"])
        .args(["big.bin", &bed.url("big.bin")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let limit = Duration::from_secs(20);
    wait_for("the second part to be sent", limit, || {
        bed.proxy.counts().put >= 2
    });
    // SAFETY: kill only sends a signal to the child we spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let status = wait_for_exit(&mut child, limit);
    let mut said = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut said).unwrap();
    drop(held);
    bed.proxy.clear_faults();
    (status.code(), said)
}

/// The same command again: only the parts the store does not hold are sent.
fn resume(bed: &Bed) {
    let before = bed.proxy.counts().put;
    let output = run(bed.parabyte().args([
        "cp",
        "--json",
        "--part-size",
        "5MiB",
        "big.bin",
        &bed.url("big.bin"),
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    let sent = bed.proxy.counts().put - before;
    assert!(
        sent < 3,
        "{sent} parts sent again: the first (at least) was kept"
    );
    assert_eq!(
        summary(&output)["requests"]["multipart"],
        2,
        "list parts, complete"
    );
    // Reported as a resumed download is: resumed, and only the bytes sent now counted.
    let summary = summary(&output);
    let kept = summary["resumed_bytes"].as_u64().unwrap();
    assert_eq!(summary["resumed"], 1, "{summary}");
    assert!(kept >= 5 * MIB as u64, "{summary}");
    assert_eq!(summary["bytes"].as_u64(), Some(11 * MIB as u64 - kept));
    let stored = bed.admin.get_object(&bed.bucket, "big.bin").unwrap();
    assert!(stored == payload(7, 11 * MIB));
    assert_eq!(bed.admin.open_uploads(&bed.bucket).unwrap(), 0);
}

#[test]
fn ctrl_c_keeps_an_upload_that_the_same_command_resumes() {
    let bed = Bed::new(ServerKind::Minio, "upload-interrupt");
    let (status, said) = stop_mid_upload(&bed, libc::SIGINT);
    assert_eq!(status, Some(130), "{said}");
    assert!(said.contains("1 unfinished upload(s) are kept"), "{said}");
    assert!(!said.contains("nothing unfinished was kept"), "{said}");
    assert_eq!(
        bed.admin.open_uploads(&bed.bucket).unwrap(),
        1,
        "kept to resume"
    );
    assert!(bed.admin.get_object(&bed.bucket, "big.bin").is_err());
    resume(&bed);
}

/// What an interrupted upload kept can be seen and dropped: `uploads ls` lists it, `uploads
/// abort --dryrun` names it and keeps it, `uploads abort` drops it, and the same command
/// then starts afresh.
#[test]
fn a_kept_upload_is_listed_and_aborted_by_name() {
    let bed = Bed::new(ServerKind::Versitygw, "upload-kept");
    let (status, said) = stop_mid_upload(&bed, libc::SIGINT);
    assert_eq!(status, Some(130), "{said}");
    assert!(said.contains("parabyte uploads abort"), "{said}");
    let listed = run(bed
        .parabyte()
        .args(["uploads", "ls", "--json", &bed.url("")]));
    assert!(listed.status.success(), "{}", stderr(&listed));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["url"], bed.url("big.bin"));
    let id = lines[0]["upload_id"].as_str().unwrap().to_owned();
    let dry = run(bed
        .parabyte()
        .args(["uploads", "abort", "--dryrun", &bed.url("big")]));
    assert!(String::from_utf8_lossy(&dry.stdout).contains(&id));
    assert_eq!(bed.admin.open_uploads(&bed.bucket).unwrap(), 1);
    let other = run(bed.parabyte().args([
        "uploads",
        "abort",
        "--upload-id",
        "no-such-id",
        &bed.url(""),
    ]));
    assert_eq!(other.status.code(), Some(1), "{}", stderr(&other));
    assert_eq!(bed.admin.open_uploads(&bed.bucket).unwrap(), 1);
    let aborted = run(bed.parabyte().args(["uploads", "abort", &bed.url("big")]));
    assert!(aborted.status.success(), "{}", stderr(&aborted));
    assert!(stderr(&aborted).contains(&format!("abort: {}", bed.url("big.bin"))));
    assert_eq!(bed.admin.open_uploads(&bed.bucket).unwrap(), 0);
    let again = run(bed.parabyte().args(["cp", "big.bin", &bed.url("big.bin")]));
    assert!(again.status.success(), "{}", stderr(&again));
    let stored = bed.admin.get_object(&bed.bucket, "big.bin").unwrap();
    assert!(stored == payload(7, 11 * MIB));
}

#[test]
fn sigkill_in_the_middle_of_an_upload_then_the_same_command_resumes() {
    let bed = Bed::new(ServerKind::Versitygw, "upload-kill");
    let (status, _) = stop_mid_upload(&bed, libc::SIGKILL);
    assert_eq!(status, None, "killed");
    assert!(bed.admin.get_object(&bed.bucket, "big.bin").is_err());
    resume(&bed);
}

#[test]
fn a_changed_file_is_never_resumed_from_the_parts_of_its_old_bytes() {
    let bed = Bed::new(ServerKind::Minio, "upload-changed");
    stop_mid_upload(&bed, libc::SIGINT);
    // Same size, other bytes, another modification time: another upload altogether.
    std::fs::write(bed.path("big.bin"), payload(70, 11 * MIB)).unwrap();
    let output =
        run(bed
            .parabyte()
            .args(["cp", "--part-size", "5MiB", "big.bin", &bed.url("big.bin")]));
    assert!(output.status.success(), "{}", stderr(&output));
    let stored = bed.admin.get_object(&bed.bucket, "big.bin").unwrap();
    assert!(
        stored == payload(70, 11 * MIB),
        "the new bytes, none of the old"
    );
    assert_eq!(
        bed.admin.open_uploads(&bed.bucket).unwrap(),
        0,
        "the old one aborted"
    );
}

#[test]
fn objects_keep_what_the_upload_flags_say_encrypted_by_minios_kms() {
    let bed = Bed::new(ServerKind::Minio, "upload-headers");
    std::fs::write(bed.path("small.json"), b"{\"a\": 1}").unwrap();
    std::fs::write(bed.path("big.json"), payload(8, 6 * MIB)).unwrap();
    for name in ["small.json", "big.json"] {
        let output = run(bed.parabyte().args([
            "cp",
            "--part-size",
            "5MiB",
            "--cache-control",
            "max-age=60",
            "--content-encoding",
            "identity",
            "--storage-class",
            "REDUCED_REDUNDANCY",
            "--sse",
            "aws:kms",
            "--sse-kms-key-id",
            MINIO_KMS_KEY_ID,
            "--metadata",
            "Team=render",
            name,
            &bed.url(name),
        ]));
        assert!(output.status.success(), "{name}: {}", stderr(&output));
        let head = bed
            .admin
            .block_on(
                bed.admin
                    .client()
                    .request(http::Method::HEAD, &bed.bucket, name)
                    .send(),
            )
            .unwrap();
        let header = |wanted: &str| {
            head.headers
                .get(wanted)
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        assert_eq!(
            header("content-type"),
            "application/json",
            "guessed, as aws does"
        );
        assert_eq!(header("cache-control"), "max-age=60");
        assert_eq!(header("content-encoding"), "identity");
        assert_eq!(header("x-amz-storage-class"), "REDUCED_REDUNDANCY");
        assert_eq!(header("x-amz-server-side-encryption"), "aws:kms", "{name}");
        assert!(header("x-amz-server-side-encryption-aws-kms-key-id").contains(MINIO_KMS_KEY_ID));
        assert_eq!(header("x-amz-meta-team"), "render");
        assert!(
            !header("x-amz-meta-mtime").is_empty(),
            "the file's time is kept"
        );
    }
    // Encrypted with a KMS key, the ETag is no MD5: the CRC64NVME still checks the way back.
    let back = run(bed.parabyte().args(["cp", "--json", &bed.url(""), "back"]));
    assert!(back.status.success(), "{}", stderr(&back));
    assert_eq!(summary(&back)["verified"]["checksum"], 2);
    assert_eq!(
        std::fs::read(bed.path("back/big.json")).unwrap(),
        payload(8, 6 * MIB)
    );
}

#[test]
fn standard_input_goes_up_as_it_is_read() {
    let bed = Bed::new(ServerKind::Versitygw, "upload-stdin");
    for (key, size, puts, multipart) in [("small", 1000, 1, 0), ("big", 12 * MIB + 5, 3, 2)] {
        let data = payload(11, size);
        let mut child = bed
            .parabyte_process(bed.server.secret_key())
            .args(["cp", "--json", "--part-size", "5MiB", "-", &bed.url(key)])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        let feeder = std::thread::spawn(move || std::io::Write::write_all(&mut input, &data));
        let output = child.wait_with_output().unwrap();
        feeder.join().unwrap().unwrap();
        assert!(output.status.success(), "{key}: {}", stderr(&output));
        let json = summary(&output);
        assert_eq!(json["requests"]["put"], puts, "{key}");
        assert_eq!(json["requests"]["multipart"], multipart, "{key}");
        let stored = bed.admin.get_object(&bed.bucket, key).unwrap();
        assert!(stored == payload(11, size), "{key}: {} bytes", stored.len());
    }
    assert_eq!(bed.admin.open_uploads(&bed.bucket).unwrap(), 0);
}

/// A dry run of standard input or a web file into S3 says what it would send, and neither
/// reads its source nor sends a request.
#[test]
fn a_dry_run_of_standard_input_or_a_web_file_sends_nothing() {
    let bed = Bed::new(ServerKind::Versitygw, "upload-dry");
    let web = WebServer::start().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(web.root().join("w.bin"), payload(3, 1000)).unwrap();
    let web_proxy = CountingProxy::start(&web.endpoint());
    let web_url = web
        .url(Serving::Ranges, "w.bin")
        .replace(&web.endpoint(), &web_proxy.endpoint());
    bed.proxy.reset();
    for (source, key) in [("-", "dry/stdin"), (web_url.as_str(), "dry/web")] {
        let output = bed
            .parabyte_process(bed.server.secret_key())
            .args(["cp", "--dryrun", source, &bed.url(key)])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{source}: {}", stderr(&output));
        let said = String::from_utf8_lossy(&output.stdout);
        let line = format!("(dryrun) upload: {source} to {}", bed.url(key));
        let line = line.replace("upload: http", "copy: http");
        assert!(said.contains(&line), "{line} not in {said}");
    }
    let sent = bed.proxy.counts();
    assert_eq!((sent.put, sent.other, sent.get), (0, 0, 0), "{sent:?}");
    let read = web_proxy.counts();
    assert_eq!(
        (read.get, read.other),
        (0, 0),
        "the web file was read: {read:?}"
    );
}

#[test]
fn a_copy_between_keys_moves_no_byte_through_parabyte() {
    for kind in [ServerKind::Minio, ServerKind::Versitygw] {
        let bed = Bed::new(kind, "copy");
        write_tree(&bed, "src");
        let up = run(bed.parabyte().args(["cp", "-r", "src", &bed.url("a/")]));
        assert!(up.status.success(), "{}", stderr(&up));
        bed.proxy.reset();
        let output = run(bed
            .parabyte()
            .args(["cp", "-r", "--json", &bed.url("a"), &bed.url("b")]));
        assert!(output.status.success(), "{}", stderr(&output));
        let json = summary(&output);
        let seen = bed.proxy.counts();
        // One LIST, then one CopyObject per key: no GET, no PUT of bytes.
        assert_eq!(
            (seen.get, seen.list, json["requests"]["copy"].as_u64()),
            (0, 1, Some(5))
        );
        for (path, bytes) in tree() {
            let copied = bed
                .admin
                .get_object(&bed.bucket, &format!("b/{path}"))
                .unwrap();
            assert!(copied == bytes, "{path}");
        }
        // One key, into a prefix under its name, and its dry run says "copy".
        let one = run(bed
            .parabyte()
            .args(["cp", &bed.url("a/small.txt"), &bed.url("c/")]));
        assert!(one.status.success(), "{}", stderr(&one));
        assert_eq!(
            bed.admin.get_object(&bed.bucket, "c/small.txt").unwrap(),
            payload(1, 1000)
        );
        let dry =
            run(bed
                .parabyte()
                .args(["cp", "--dryrun", &bed.url("a/small.txt"), &bed.url("d")]));
        let said = String::from_utf8_lossy(&dry.stdout).into_owned() + &stderr(&dry);
        assert!(said.contains("(dryrun) copy: s3://"), "{said}");
    }
}

/// Objects above the copy cutoff (5 GiB by default, S3's largest CopyObject) are copied in
/// parallel UploadPartCopy parts of the listed version, and keep a CRC64NVME the way back
/// checks: proven on every server with the cutoff brought down to 5 MiB.
fn a_copy_above_the_cutoff_goes_in_part_copies(kind: ServerKind) {
    let bed = Bed::new(kind, "copy-parts");
    let bytes = payload(31, 11 * MIB + 7);
    std::fs::write(bed.path("big.bin"), &bytes).unwrap();
    // Stored with a type and metadata, which the copy in parts must keep.
    let up = run(bed.parabyte().args([
        "cp",
        "--content-type",
        "application/x-test",
        "--metadata",
        "origin=render-7",
        "big.bin",
        &bed.url("a/big.bin"),
    ]));
    assert!(up.status.success(), "{}", stderr(&up));
    let puts_before = bed.proxy.counts().put;
    let output = run(bed.parabyte().args([
        "cp",
        "--json",
        "--copy-cutoff",
        "5MiB",
        "--part-size",
        "5MiB",
        &bed.url("a/big.bin"),
        &bed.url("b/big.bin"),
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    let json = summary(&output);
    // A GET of one byte for the size and version, three part copies, no byte carried.
    assert_eq!(json["requests"]["copy"], 3);
    assert_eq!(bed.proxy.counts().put - puts_before, 3);
    assert!(bed.admin.get_object(&bed.bucket, "b/big.bin").unwrap() == bytes);
    let stat = run(bed
        .parabyte()
        .args(["stat", "--json", &bed.url("b/big.bin")]));
    let info: serde_json::Value = serde_json::from_slice(&stat.stdout).unwrap();
    assert_eq!(info["content_type"], "application/x-test", "{info}");
    assert_eq!(info["metadata"]["origin"], "render-7", "{info}");
    assert_eq!(bed.admin.open_uploads(&bed.bucket).unwrap(), 0);
    let back = run(bed
        .parabyte()
        .args(["cp", "--json", &bed.url("b/big.bin"), "back.bin"]));
    assert!(back.status.success(), "{}", stderr(&back));
    assert!(std::fs::read(bed.path("back.bin")).unwrap() == bytes);
    // Out of S3's range: refused before any request.
    let refused = run(bed.parabyte().args([
        "cp",
        "--copy-cutoff",
        "1MiB",
        &bed.url("a/big.bin"),
        &bed.url("c"),
    ]));
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("--copy-cutoff"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn a_copy_above_the_cutoff_goes_in_part_copies_versitygw() {
    a_copy_above_the_cutoff_goes_in_part_copies(ServerKind::Versitygw);
}

#[test]
fn a_copy_above_the_cutoff_goes_in_part_copies_minio() {
    a_copy_above_the_cutoff_goes_in_part_copies(ServerKind::Minio);
}

#[test]
fn a_copy_above_the_cutoff_goes_in_part_copies_seaweedfs() {
    a_copy_above_the_cutoff_goes_in_part_copies(ServerKind::SeaweedFs);
}

#[test]
fn a_copy_above_the_cutoff_goes_in_part_copies_moto() {
    a_copy_above_the_cutoff_goes_in_part_copies(ServerKind::Moto);
}

#[test]
fn a_web_file_streams_into_a_key_without_touching_the_disk() {
    let bed = Bed::new(ServerKind::Minio, "upload-web");
    let web = parabyte_testkit::WebServer::start().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(web.root().join("disk.iso"), payload(12, 12 * MIB + 9)).unwrap();
    // With and without a length: chunked answers stream the same way.
    for serving in [
        parabyte_testkit::Serving::Ranges,
        parabyte_testkit::Serving::Chunked,
    ] {
        let url = web.url(serving, "disk.iso");
        let output = run(bed.parabyte().args([
            "cp",
            "--json",
            "--part-size",
            "5MiB",
            &url,
            &bed.url("web/"),
        ]));
        assert!(output.status.success(), "{serving:?}: {}", stderr(&output));
        let json = summary(&output);
        assert_eq!(json["requests"]["get"], 1, "one GET, streamed");
        assert_eq!(json["requests"]["put"], 3, "three parts as it arrived");
        let stored = bed.admin.get_object(&bed.bucket, "web/disk.iso").unwrap();
        assert!(stored == payload(12, 12 * MIB + 9), "{serving:?}");
        assert_eq!(
            files_under(bed.dir.path()),
            Vec::<String>::new(),
            "nothing on disk"
        );
    }
}

/// What the user names is read as what it is: a FIFO, a process substitution's
/// `/dev/fd/N` (a link to a pipe) and `/dev/null` are streams read as `-` is, and a link
/// to a file is that file, under the link's name. Inside a tree none of them is followed.
#[test]
fn streams_and_links_named_as_sources_are_read_as_what_they_point_to() {
    let bed = Bed::new(ServerKind::Versitygw, "upload-streams");
    let empty = run(bed.parabyte().args(["cp", "/dev/null", &bed.url("empty")]));
    assert!(empty.status.success(), "{}", stderr(&empty));
    assert!(bed
        .admin
        .get_object(&bed.bucket, "empty")
        .unwrap()
        .is_empty());

    let fifo = bed.path("pipe");
    let path = std::ffi::CString::new(fifo.clone().into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path that lives across the call.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let streamed = payload(21, 6 * MIB + 5);
    let writer = {
        let (fifo, bytes) = (fifo.clone(), streamed.clone());
        std::thread::spawn(move || std::fs::write(fifo, bytes).unwrap())
    };
    let piped = run(bed
        .parabyte()
        .args(["cp", "--part-size", "5MiB", "pipe", &bed.url("in/")]));
    writer.join().unwrap();
    assert!(piped.status.success(), "{}", stderr(&piped));
    assert!(bed.admin.get_object(&bed.bucket, "in/pipe").unwrap() == streamed);

    // A process substitution, as the shell hands it over.
    let mut shell = std::process::Command::new("bash");
    let command = bed.parabyte_process(bed.server.secret_key());
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => shell.env(name, value),
            None => shell.env_remove(name),
        };
    }
    let substituted = shell
        .current_dir(bed.path(""))
        .args(["-c", r#""$0" cp <(printf 'from a pipe') "$1""#])
        .arg(command.get_program())
        .arg(bed.url("substituted"))
        .output()
        .unwrap();
    assert!(substituted.status.success(), "{}", stderr(&substituted));
    assert_eq!(
        &bed.admin.get_object(&bed.bucket, "substituted").unwrap()[..],
        b"from a pipe"
    );

    std::fs::write(bed.path("real.txt"), b"the target").unwrap();
    std::os::unix::fs::symlink("real.txt", bed.path("link.txt")).unwrap();
    let linked = run(bed.parabyte().args(["cp", "link.txt", &bed.url("l/")]));
    assert!(linked.status.success(), "{}", stderr(&linked));
    assert_eq!(
        &bed.admin.get_object(&bed.bucket, "l/link.txt").unwrap()[..],
        b"the target"
    );
}

/// A Hugging Face cache snapshot: every file a link into `../../blobs/`. By default each
/// link is passed over (said, exit 0); `--follow-symlinks` uploads the files they point to
/// under the links' names, and a link that leads back to a folder above it is refused,
/// not walked forever.
#[test]
fn follow_symlinks_uploads_a_cache_snapshot_and_refuses_a_loop() {
    let bed = Bed::new(ServerKind::Versitygw, "upload-follow");
    let cache = bed.path("hub/models--org--model");
    let snapshot = cache.join("snapshots/abc123");
    std::fs::create_dir_all(cache.join("blobs")).unwrap();
    std::fs::create_dir_all(snapshot.join("sub")).unwrap();
    let files = [
        ("config.json", "blob1", "{}"),
        ("sub/weights.bin", "blob2", "weights"),
    ];
    for (name, blob, text) in files {
        std::fs::write(cache.join("blobs").join(blob), text).unwrap();
        let up = if name.contains('/') {
            "../../../blobs"
        } else {
            "../../blobs"
        };
        std::os::unix::fs::symlink(format!("{up}/{blob}"), snapshot.join(name)).unwrap();
    }
    let snapshot_text = snapshot.to_str().unwrap();
    let passed =
        run(bed
            .parabyte()
            .args(["cp", "-r", "--json", snapshot_text, &bed.url("plain/")]));
    assert!(passed.status.success(), "{}", stderr(&passed));
    assert_eq!(summary(&passed)["skipped"], 2);
    assert!(stderr(&passed).contains("skip: "), "{}", stderr(&passed));
    let followed = run(bed
        .parabyte()
        .args(["cp", "-r", "-L", snapshot_text, &bed.url("model/")]));
    assert!(followed.status.success(), "{}", stderr(&followed));
    for (name, _, text) in files {
        let stored = bed
            .admin
            .get_object(&bed.bucket, &format!("model/{name}"))
            .unwrap();
        assert_eq!(&stored[..], text.as_bytes(), "{name}");
    }
    // A loop: a link to the snapshot inside itself.
    std::os::unix::fs::symlink("..", snapshot.join("sub/up")).unwrap();
    let looped = run(bed.parabyte().args([
        "cp",
        "-r",
        "--follow-symlinks",
        snapshot_text,
        &bed.url("loop/"),
    ]));
    assert_eq!(looped.status.code(), Some(1), "{}", stderr(&looped));
    assert!(
        stderr(&looped).contains("a link loop"),
        "{}",
        stderr(&looped)
    );
    assert!(bed
        .admin
        .get_object(&bed.bucket, "loop/config.json")
        .is_ok());
}

/// `--request-payer requester`: every kind of request says who pays (PUT, the multipart
/// calls, LIST, GET, HEAD, the copy, DeleteObjects), as a requester-pays bucket requires;
/// without it none does.
#[test]
fn request_payer_goes_with_every_request() {
    let bed = Bed::new(ServerKind::Minio, "upload-payer");
    std::fs::write(bed.path("big.bin"), payload(3, 6 * MIB)).unwrap();
    let payer = ["--request-payer", "requester"];
    let commands: [&[&str]; 6] = [
        &[
            "cp",
            "--part-size",
            "5MiB",
            "big.bin",
            &bed.url("a/big.bin"),
        ],
        &["ls", "-r", &bed.url("a/")],
        &["cp", &bed.url("a/big.bin"), "back.bin"],
        &["stat", &bed.url("a/big.bin")],
        &["cp", &bed.url("a/big.bin"), &bed.url("b/big.bin")],
        &["rm", "-r", &bed.url("b/")],
    ];
    for command in commands {
        let output = run(bed.parabyte().args(command).args(payer));
        assert!(output.status.success(), "{command:?}: {}", stderr(&output));
    }
    let seen = bed.proxy.requests();
    let kinds: std::collections::BTreeSet<String> = seen
        .iter()
        .map(|request| request.method.to_string())
        .collect();
    // DeleteObjects and the multipart calls are POSTs.
    assert_eq!(kinds.len(), 4, "GET, HEAD, PUT, POST: {kinds:?}");
    let unpaid: Vec<_> = seen
        .iter()
        .filter(|request| {
            !request
                .header_names
                .iter()
                .any(|name| name == "x-amz-request-payer")
        })
        .map(|request| format!("{} {}?{}", request.method, request.path, request.query))
        .collect();
    assert!(unpaid.is_empty(), "{unpaid:?}");
    let before = seen.len();
    let plain = run(bed.parabyte().args(["ls", &bed.url("a/")]));
    assert!(plain.status.success(), "{}", stderr(&plain));
    let after = bed.proxy.requests();
    assert!(after[before..].iter().all(|request| !request
        .header_names
        .iter()
        .any(|name| name == "x-amz-request-payer")));
}
