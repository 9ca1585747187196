//! Content checks: bytes that arrive whole but wrong never get a final name. Objects are
//! checked by the CRC the store keeps (sent with a GET of the whole object, or by one HEAD
//! beside the parts of a larger one; composite checksums of multipart uploads part by
//! part), objects without one by the MD5 their ETag stands for; a body that breaks and
//! resumes is still checked as one. A file is one version whole: a
//! later part of another version (or of none) is never stitched to the first, and a 200
//! that carries a part is never taken for the whole object.

mod common;

use common::{files_under, run, stderr, summary, Bed};
use parabyte_testkit::{payload, BlockingAdmin, Fault, RequestKind, Rule, ServerKind};

const MIB: u64 = 1 << 20;
const LARGE: u64 = 5 * MIB + 99;
const SMALL: u64 = 300_000;

fn bed(name: &str) -> Bed {
    let bed = Bed::new(ServerKind::Versitygw, name);
    bed.admin
        .put_generated(&bed.bucket, "large.bin", 7, LARGE)
        .unwrap();
    bed.admin
        .put_generated(&bed.bucket, "small.bin", 8, SMALL)
        .unwrap();
    bed
}

fn copy(bed: &Bed, key: &str, extra: &[&str]) -> std::process::Output {
    let source = bed.url(key);
    let mut args = vec!["cp", "--json", "--part-size", "1MiB"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[source.as_str(), "out.bin"]);
    run(bed.parabyte().args(args))
}

fn assert_failed_clean(bed: &Bed, output: &std::process::Output, method: &str) {
    assert_eq!(output.status.code(), Some(1), "{}", stderr(output));
    let message = stderr(output);
    assert!(message.contains("content check failed"), "{message}");
    assert!(message.contains(method), "{message}");
    let left: Vec<String> = files_under(bed.dir.path())
        .into_iter()
        .filter(|f| !f.starts_with(".aws"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn large_objects_are_checked_by_the_crc_one_head_brings() {
    let bed = bed("crc-head");
    let output = copy(&bed, "large.bin", &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report = summary(&output);
    assert_eq!(
        (
            report["verified"]["checksum"].as_u64(),
            report["verified"]["md5"].as_u64()
        ),
        (Some(1), Some(0)),
        "by the store's CRC64NVME, no MD5 read back"
    );
    assert_eq!(report["requests"]["head"], 1);
    let heads: Vec<_> = bed
        .proxy
        .requests()
        .into_iter()
        .filter(|request| request.kind == RequestKind::Head)
        .collect();
    assert_eq!(heads.len(), 1);
    assert!(
        heads[0].if_match.is_some(),
        "pinned to the version the GETs are of"
    );
    assert!(std::fs::read(bed.path("out.bin")).unwrap() == payload(7, LARGE as usize));
}

#[test]
fn the_head_goes_out_before_later_parts_under_a_tight_request_cap() {
    // Two requests at once: the first GET and one more. The HEAD must be that one: queued
    // behind the parts it would come last, and every byte would be run through all three
    // CRCs in 1 MiB pieces until it answered.
    let bed = bed("crc-head-first");
    let output = copy(
        &bed,
        "large.bin",
        &["--max-requests", "2", "--threads", "8"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(summary(&output)["verified"]["checksum"].as_u64(), Some(1));
    let kinds: Vec<RequestKind> = bed
        .proxy
        .requests()
        .into_iter()
        .map(|request| request.kind)
        .collect();
    assert!(kinds.len() > 3, "several parts: {kinds:?}");
    assert_eq!(
        kinds.iter().position(|kind| *kind == RequestKind::Head),
        Some(1),
        "the HEAD right after the first GET: {kinds:?}"
    );
}

#[test]
fn one_range_at_a_time_is_one_get_that_brings_the_crc() {
    // Nothing to split: the whole object in one GET without a Range, whose answer tells
    // the size and carries the stored CRC, so neither a second GET nor a HEAD goes out.
    let bed = bed("crc-one-get");
    let output = copy(&bed, "large.bin", &["--ranges-per-object", "1"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report = summary(&output);
    assert_eq!(report["verified"]["checksum"], 1, "{report}");
    let requests = bed.proxy.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].kind, RequestKind::Get);
    assert_eq!(
        requests[0].range, None,
        "no Range: S3 sends the CRC only then"
    );
    assert!(std::fs::read(bed.path("out.bin")).unwrap() == payload(7, LARGE as usize));
}

/// The store keeps no CRC for the object (an old upload): the HEAD answers without one.
fn without_a_stored_crc(bed: &Bed) {
    bed.proxy.inject(
        Rule::kind(RequestKind::Head),
        Fault::remove_header("x-amz-checksum-crc64nvme"),
    );
}

#[test]
fn objects_without_a_crc_are_checked_by_the_md5_in_their_etag() {
    let bed = bed("md5-clean");
    without_a_stored_crc(&bed);
    let output = copy(&bed, "large.bin", &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(summary(&output)["verified"]["md5"], 1);
    assert!(std::fs::read(bed.path("out.bin")).unwrap() == payload(7, LARGE as usize));
}

#[test]
fn a_flipped_byte_in_one_part_fails_the_object() {
    let bed = bed("crc-flip-part");
    let flip = bed.proxy.inject(
        Rule::get().range_start(3 * MIB).first(1),
        Fault::flip_byte(12_345),
    );
    let output = copy(&bed, "large.bin", &[]);
    assert_eq!(flip.fired(), 1);
    assert_failed_clean(&bed, &output, "CRC64NVME");
}

#[test]
fn a_flipped_byte_in_an_object_without_a_crc_fails_it_by_md5() {
    let bed = bed("md5-flip");
    without_a_stored_crc(&bed);
    let flip = bed.proxy.inject(
        Rule::get().range_start(3 * MIB).first(1),
        Fault::flip_byte(12_345),
    );
    let output = copy(&bed, "large.bin", &[]);
    assert_eq!(flip.fired(), 1);
    assert_failed_clean(&bed, &output, "MD5");
}

/// A CRC32 multipart upload of `part_sizes` (in MiB, the last plus 7 bytes): the store keeps
/// a COMPOSITE checksum, `CRC32(crc1 || crc2)-2`, and an ETag that is no MD5. On moto the
/// upload declares no checksum type, as boto3's do: moto then labels the checksum with
/// neither type nor part count.
fn composite_bed(kind: ServerKind, name: &str, part_sizes: [u64; 2]) -> (Bed, Vec<u8>) {
    composite_bed_declared(kind, name, part_sizes, kind != ServerKind::Moto)
}

fn composite_bed_declared(
    kind: ServerKind,
    name: &str,
    part_sizes: [u64; 2],
    declare_type: bool,
) -> (Bed, Vec<u8>) {
    let bed = Bed::new(kind, name);
    let size = part_sizes.iter().sum::<u64>() * MIB + 7;
    let data = payload(9, size as usize);
    let (first, second) = data.split_at((part_sizes[0] * MIB) as usize);
    bed.admin
        .put_crc32_parts(
            &bed.bucket,
            "composite.bin",
            &[first.to_vec().into(), second.to_vec().into()],
            declare_type,
        )
        .unwrap();
    (bed, data)
}

/// HEADs for where part 1 ends: one, or with moto two (pinned, it answers 412: each part
/// has an ETag of its own; so it is asked again unpinned).
fn part_heads(kind: ServerKind) -> u64 {
    if kind == ServerKind::Moto {
        2
    } else {
        1
    }
}

fn a_composite_checksum_is_checked_part_by_part(kind: ServerKind) {
    let (bed, data) = composite_bed(kind, "crc-composite", [5, 3]);
    let output = copy(&bed, "composite.bin", &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report = summary(&output);
    assert_eq!(report["verified"]["checksum"], 1, "{report}");
    assert_eq!(
        report["requests"]["head"].as_u64(),
        Some(1 + part_heads(kind)),
        "the object's checksum, then where its first part ends"
    );
    assert!(std::fs::read(bed.path("out.bin")).unwrap() == data);

    std::fs::remove_file(bed.path("out.bin")).unwrap();
    bed.proxy.inject(
        Rule::get().range_start(6 * MIB).first(1),
        Fault::flip_byte(777),
    );
    let output = copy(&bed, "composite.bin", &[]);
    assert_failed_clean(&bed, &output, "CRC32");
}

#[test]
fn a_composite_checksum_is_checked_part_by_part_versitygw() {
    a_composite_checksum_is_checked_part_by_part(ServerKind::Versitygw);
}

#[test]
fn a_composite_checksum_is_checked_part_by_part_moto() {
    a_composite_checksum_is_checked_part_by_part(ServerKind::Moto);
}

#[test]
fn a_composite_checksum_without_its_part_count_is_read_by_the_etags() {
    // Declared COMPOSITE, moto's HEAD says so but leaves out `-2`: the ETag's part count
    // stands in (before, the checksum read as none and the object failed).
    let (bed, data) =
        composite_bed_declared(ServerKind::Moto, "crc-composite-no-count", [5, 3], true);
    let output = copy(&bed, "composite.bin", &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(summary(&output)["verified"]["checksum"], 1);
    assert!(std::fs::read(bed.path("out.bin")).unwrap() == data);
}

#[test]
fn an_unlabeled_checksum_with_no_layout_to_be_found_fails_naming_why_and_the_option() {
    // moto labels the COMPOSITE checksum neither `-2` nor COMPOSITE, and here part 1's HEAD
    // is refused pinned (moto) and unpinned (the proxy), beside the parts and again once
    // they are in: no layout, so the object fails with the store's silence as the reason,
    // never "changed" and never a size check.
    let (bed, _) = composite_bed(ServerKind::Moto, "crc-unlabeled-no-layout", [5, 3]);
    let refused = [3, 5].map(|nth| {
        bed.proxy.inject(
            Rule::kind(RequestKind::Head).nth(nth),
            Fault::error(403, "AccessDenied"),
        )
    });
    let output = copy(&bed, "composite.bin", &[]);
    assert_eq!(refused.map(|fault| fault.fired()), [1, 1]);
    assert_uncheckable(&bed, &output);
    let message = stderr(&output);
    assert!(
        message.contains("neither its type nor its part count"),
        "{message}"
    );
    assert!(!message.contains("changed"), "{message}");
}

fn a_composite_checksum_that_came_with_the_whole_object_is_checked_too(kind: ServerKind) {
    // 5 MiB and 1 MiB parts: one GET of the default 8 MiB brings the object and its
    // composite checksum; a HEAD of part 1 says where the parts end.
    let (bed, data) = composite_bed(kind, "crc-composite-one-get", [5, 1]);
    let source = bed.url("composite.bin");
    let output = run(bed.parabyte().args(["cp", "--json", &source, "out.bin"]));
    assert!(output.status.success(), "{}", stderr(&output));
    let report = summary(&output);
    assert_eq!(report["verified"]["checksum"], 1, "{report}");
    assert_eq!(
        (
            report["requests"]["get"].as_u64(),
            report["requests"]["head"].as_u64()
        ),
        (Some(1), Some(part_heads(kind)))
    );
    assert!(std::fs::read(bed.path("out.bin")).unwrap() == data);

    std::fs::remove_file(bed.path("out.bin")).unwrap();
    bed.proxy
        .inject(Rule::get().first(1), Fault::flip_byte(5 * MIB + 1));
    let output = run(bed.parabyte().args(["cp", "--json", &source, "out.bin"]));
    assert_failed_clean(&bed, &output, "CRC32");
}

#[test]
fn a_composite_checksum_that_came_with_the_whole_object_is_checked_too_versitygw() {
    a_composite_checksum_that_came_with_the_whole_object_is_checked_too(ServerKind::Versitygw);
}

#[test]
fn a_composite_checksum_that_came_with_the_whole_object_is_checked_too_moto() {
    a_composite_checksum_that_came_with_the_whole_object_is_checked_too(ServerKind::Moto);
}

#[test]
fn small_objects_are_checked_by_the_stores_crc() {
    let bed = bed("crc-flip");
    let clean = copy(&bed, "small.bin", &[]);
    assert!(clean.status.success(), "{}", stderr(&clean));
    assert_eq!(summary(&clean)["verified"]["checksum"], 1);
    std::fs::remove_file(bed.path("out.bin")).unwrap();

    bed.proxy
        .inject(Rule::get().first(1), Fault::flip_byte(SMALL - 1));
    let output = copy(&bed, "small.bin", &[]);
    assert_failed_clean(&bed, &output, "CRC");
}

#[test]
fn a_resumed_body_is_checked_by_combining_the_crcs_of_its_pieces() {
    let bed = bed("crc-resume");
    let reset = bed
        .proxy
        .inject(Rule::get().first(1), Fault::reset_after(100_000));
    let output = copy(&bed, "small.bin", &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(reset.fired(), 1);
    let report = summary(&output);
    assert_eq!(
        (
            report["retries"].as_u64(),
            report["verified"]["checksum"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert!(std::fs::read(bed.path("out.bin")).unwrap() == payload(8, SMALL as usize));
}

#[test]
fn a_later_part_without_an_etag_is_never_stitched_to_the_first() {
    // Two parts: the probe's first MiB and 100 bytes more (two ranges allowed: with one at
    // a time the object would be one GET).
    const SIZE: u64 = MIB + 100;
    let bed = Bed::new(ServerKind::Versitygw, "mix-no-etag");
    bed.admin
        .put_generated(&bed.bucket, "v.bin", 1, SIZE)
        .unwrap();
    // The first answer's ETag looks like a multipart upload's, so no MD5 check can catch a
    // mix, and with --no-verify no store CRC is asked for: only the validators can (a HEAD
    // refused would now fail the object by itself).
    let multipart_etag = bed.proxy.inject(
        Rule::get().range_start(0).first(1),
        Fault::rewrite_header("etag", |etag| etag.replace("\"", "") + "-2"),
    );
    let admin = BlockingAdmin::for_server(bed.server);
    let bucket = bed.bucket.clone();
    let replaced = bed.proxy.inject(
        Rule::get().range_start(MIB).first(1),
        Fault::hook(move |_, _| admin.put_generated(&bucket, "v.bin", 2, SIZE).unwrap()),
    );
    // Meanwhile a server that ignores If-Match serves the new version's bytes, without an ETag.
    let new = payload(2, SIZE as usize);
    let stale = bed.proxy.inject(
        Rule::get().range_start(MIB).first(1),
        Fault::serve_range(new.clone()),
    );
    let source = bed.url("v.bin");
    let output = run(bed.parabyte().args([
        "cp",
        "--json",
        "--no-verify",
        "--part-size",
        "1MiB",
        "--threads",
        "2",
        &source,
        "out.bin",
    ]));
    assert_eq!(
        (multipart_etag.fired(), replaced.fired(), stale.fired()),
        (1, 1, 1)
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        std::fs::read(bed.path("out.bin")).unwrap() == new,
        "the new version whole, never the first part of the old one with the rest of the new"
    );
}

/// `rclone serve s3`: every ranged GET answered 200, with the Content-Range of the part and
/// only that part in the body; with or without an ETag.
fn ranges_answered_200(name: &str, etag: bool) {
    let bed = bed(name);
    let status = bed.proxy.inject(Rule::get(), Fault::status(200));
    if !etag {
        bed.proxy.inject(Rule::get(), Fault::remove_header("etag"));
    }
    let output = copy(&bed, "large.bin", &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let written = std::fs::read(bed.path("out.bin")).unwrap();
    assert_eq!(
        written.len() as u64,
        LARGE,
        "never the first part saved as the whole"
    );
    assert!(written == payload(7, LARGE as usize));
    assert!(status.fired() >= 6, "every part answered 200");
}

#[test]
fn a_200_with_a_partial_content_range_is_that_part() {
    ranges_answered_200("rclone-200", true);
}

#[test]
fn a_200_with_a_partial_content_range_and_no_etag_is_that_part() {
    ranges_answered_200("rclone-200-no-etag", false);
}

/// Fails with the message that says the store's checksum cannot vouch for the bytes, and
/// leaves nothing behind.
fn assert_uncheckable(bed: &Bed, output: &std::process::Output) {
    assert_eq!(output.status.code(), Some(1), "{}", stderr(output));
    let message = stderr(output);
    assert!(message.contains("cannot be checked by"), "{message}");
    assert!(message.contains("--no-verify"), "{message}");
    let left: Vec<String> = files_under(bed.dir.path())
        .into_iter()
        .filter(|f| !f.starts_with(".aws"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_declared_checksum_that_is_none_never_becomes_a_size_check() {
    // The HEAD declares a CRC64NVME that is no base64 of 8 bytes, and a part arrives with
    // one byte flipped: before, the object was checked by its size alone and saved, exit 0.
    let bed = bed("crc-malformed");
    bed.proxy.inject(
        Rule::kind(RequestKind::Head),
        Fault::set_header("x-amz-checksum-crc64nvme", "%%not-a-checksum%%"),
    );
    let flip = bed.proxy.inject(
        Rule::get().range_start(3 * MIB).first(1),
        Fault::flip_byte(12_345),
    );
    let output = copy(&bed, "large.bin", &[]);
    assert_eq!(flip.fired(), 1);
    assert_uncheckable(&bed, &output);
    // Asked for by name, the size alone is enough.
    let output = copy(&bed, "large.bin", &["--no-verify"]);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn a_composite_checksum_whose_parts_do_not_add_up_fails_the_object() {
    // The store says 3 parts; part 1 is 5 MiB of 8 MiB + 7 bytes: two parts. Before, the
    // layout that did not fit left the size alone to decide, and a flipped byte was saved.
    let (bed, _) = composite_bed(ServerKind::Versitygw, "crc-composite-lies", [5, 3]);
    bed.proxy.inject(
        Rule::kind(RequestKind::Head).first(1),
        Fault::set_header("x-amz-checksum-crc32", "AAAAAA==-3"),
    );
    bed.proxy.inject(
        Rule::get().range_start(6 * MIB).first(1),
        Fault::flip_byte(777),
    );
    let output = copy(&bed, "composite.bin", &[]);
    assert_uncheckable(&bed, &output);
    assert!(
        stderr(&output).contains("3 upload parts"),
        "{}",
        stderr(&output)
    );
}
