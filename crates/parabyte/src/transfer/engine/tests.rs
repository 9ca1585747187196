//! The engine's decisions, through the scripted fake source: every test names a behaviour
//! and fails when it breaks.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use md5::{Digest as _, Md5};

use super::*;
use crate::checksum::{Crc, FullChecksum, StoreChecksum};
use crate::disk::sink::{FilePath, StreamTarget};
use crate::location::S3Url;
use crate::report::{Reporter, Silent};
use crate::retry::RetryPolicy;
use crate::source::{Answer, MemoryStore, Seen, When};

/// The part size, and the largest object fetched in one request: tiny, so that the tests
/// run in milliseconds.
const PART: u64 = 1024;
/// Four parts, the last one 5 bytes.
const SIZE: u64 = 3 * PART + 5;

fn data(seed: u8, size: u64) -> Vec<u8> {
    (0..size)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn range(start: u64, end: u64) -> ByteRange {
    ByteRange { start, end }
}

fn etag(tag: &str) -> Validator {
    Validator::ETag(tag.to_owned())
}

fn md5_etag(data: &[u8]) -> String {
    format!("\"{}\"", hex::encode(Md5::digest(data)))
}

fn config(max_retries: u32) -> TransferConfig {
    TransferConfig {
        ranges_per_object: 1,
        part_size: PART,
        max_requests: 8,
        retry: RetryPolicy {
            max_retries,
            base_delay: Duration::ZERO,
            max_delay: Duration::ZERO,
            max_elapsed: None,
        },
        ..TransferConfig::default()
    }
}

struct Run {
    engine: Engine<MemoryStore>,
    source: Arc<MemoryStore>,
    counters: Arc<Counters>,
}

fn run_with(source: MemoryStore, config: TransferConfig) -> Run {
    run_reporting(source, config, Arc::new(Silent))
}

/// Bytes a run reported as resumed and as skipped.
#[derive(Debug, Default)]
struct Kept {
    resumed: AtomicU64,
    skipped: AtomicU64,
}

impl Reporter for Kept {
    fn bytes_skipped(&self, bytes: u64) {
        self.skipped.fetch_add(bytes, Relaxed);
    }

    fn bytes_resumed(&self, bytes: u64) {
        self.resumed.fetch_add(bytes, Relaxed);
    }
}

fn run_reporting(source: MemoryStore, config: TransferConfig, reporter: Arc<dyn Reporter>) -> Run {
    let source = Arc::new(source);
    let counters = Arc::new(Counters::default());
    let single_stream = config.part_size;
    let request_limit = RequestLimit::new(config.max_requests);
    let mut engine = Engine::new(
        source.clone(),
        config,
        request_limit,
        counters.clone(),
        reporter,
    );
    engine.single_stream = single_stream;
    engine.max_part = single_stream;
    engine.part_grid = single_stream;
    engine.one_request_each = false;
    Run {
        engine,
        source,
        counters,
    }
}

/// The one object these tests fetch.
const OBJECT: &str = "s3://b/k";

/// A store holding just [`OBJECT`].
fn one_object(data: &[u8], etag: Option<&str>) -> MemoryStore {
    let store = MemoryStore::new();
    store.put(OBJECT, data, etag);
    store
}

fn job(known: Option<Known>, target: Target) -> Job {
    Job {
        source: ObjectUrl::S3(S3Url {
            bucket: "b".into(),
            key: "k".into(),
        }),
        known,
        target,
    }
}

/// Downloads into memory; the outcome and the bytes.
async fn download(run: &Run, known: Option<Known>) -> (Result<Finished>, Vec<u8>) {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let outcome = run
        .engine
        .download(&job(known, Target::Memory(buffer.clone())))
        .await;
    let bytes = std::mem::take(&mut *buffer.lock().unwrap());
    (outcome, bytes)
}

fn seen(range: ByteRange, pinned: Option<&str>) -> Seen {
    Seen {
        range: Some(range),
        pinned: pinned.map(etag),
    }
}

fn denied() -> Error {
    Error::PermissionDenied {
        what: "HEAD".into(),
        detail: "403 AccessDenied".into(),
        anonymous: false,
    }
}

fn server_error() -> Error {
    Error::Http {
        what: "HEAD".into(),
        status: 500,
        detail: "500 InternalError".into(),
    }
}

fn throttled() -> Error {
    Error::Throttled {
        what: "GET fake".into(),
        detail: "503 SlowDown".into(),
    }
}

#[tokio::test]
async fn a_first_206_gives_size_and_version_and_the_rest_is_pinned_to_it() {
    let object = data(1, SIZE);
    let run = run_with(one_object(&object, Some("\"e1\"")), config(0));
    let (outcome, bytes) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(bytes == object);
    assert_eq!(
        run.source.seen(),
        [
            seen(range(0, PART - 1), None),
            seen(range(PART, 2 * PART - 1), Some("\"e1\"")),
            seen(range(2 * PART, 3 * PART - 1), Some("\"e1\"")),
            seen(range(3 * PART, SIZE - 1), Some("\"e1\"")),
        ],
        "the probe is the first part; the rest is pinned to its version"
    );
}

#[tokio::test]
async fn a_first_200_is_the_whole_object_in_one_request() {
    let object = data(2, SIZE);
    let run = run_with(one_object(&object, Some("\"e1\"")), config(0));
    run.source.script(When::nth(1), Answer::default().whole());
    let (outcome, bytes) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(bytes == object);
    assert_eq!(run.source.seen().len(), 1);
}

#[tokio::test]
async fn a_first_200_that_breaks_resumes_as_a_range_of_its_length() {
    let object = data(17, SIZE);
    let run = run_with(one_object(&object, Some("\"e1\"")), config(1));
    run.source
        .script(When::nth(1), Answer::default().whole().break_after(1500));
    let (outcome, bytes) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(bytes == object);
    assert_eq!(
        run.source.seen()[1],
        seen(range(1500, SIZE - 1), Some("\"e1\""))
    );
}

#[tokio::test]
async fn a_first_200_without_a_length_is_as_long_as_its_body() {
    let object = data(18, SIZE);
    let run = run_with(one_object(&object, None), config(0));
    let chunked = Answer::default()
        .whole()
        .shape(Shape::Whole { length: None });
    run.source.script(When::nth(1), chunked);
    let (outcome, bytes) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(bytes == object);
    assert_eq!(run.source.seen().len(), 1);
}

/// A size of 0 given with the ETag of other bytes (a manifest line) is not trusted: the
/// object is probed and fetched whole, not made an empty file without a request.
#[tokio::test]
async fn a_known_empty_size_that_its_etag_contradicts_is_probed() {
    let bytes = data(3, 100);
    let tag = md5_etag(&bytes);
    let run = run_with(one_object(&bytes, Some(&tag)), config(0));
    let said_empty = Known {
        size: 0,
        validator: Some(etag(&tag)),
        modified: None,
    };
    let (outcome, fetched) = download(&run, Some(said_empty)).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(100));
    assert_eq!(fetched, bytes);
    // The empty object's own ETag agrees with its size: no request at all.
    let run = run_with(one_object(b"", Some(&md5_etag(b""))), config(0));
    let empty = Known {
        size: 0,
        validator: Some(etag(&md5_etag(b""))),
        modified: None,
    };
    let (outcome, _) = download(&run, Some(empty)).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(0));
    assert!(run.source.seen().is_empty());
}

#[tokio::test]
async fn a_first_416_is_an_empty_object() {
    let run = run_with(one_object(b"", Some("\"e0\"")), config(0));
    let (outcome, bytes) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(0));
    assert!(bytes.is_empty());
    assert_eq!(run.source.seen(), [seen(range(0, PART - 1), None)]);
}

#[tokio::test]
async fn a_broken_body_resumes_at_the_exact_byte_with_the_same_pin() {
    let object = data(3, SIZE);
    let run = run_with(one_object(&object, Some("\"e1\"")), config(1));
    run.source
        .script(When::at_nth(PART, 1), Answer::default().break_after(1000));
    let (outcome, bytes) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(bytes == object);
    let requests = run.source.seen();
    assert_eq!(
        requests[1..3],
        [
            seen(range(PART, 2 * PART - 1), Some("\"e1\"")),
            seen(range(PART + 1000, 2 * PART - 1), Some("\"e1\"")),
        ]
    );
    assert_eq!(run.counters.retries.load(Relaxed), 1);
}

#[tokio::test]
async fn an_object_changed_between_parts_is_fetched_again_on_its_new_version() {
    let (old, new) = (data(4, SIZE), data(5, SIZE + 7));
    let run = run_with(one_object(&old, Some("\"e1\"")), config(0));
    run.source.script(
        When::at_nth(PART, 1),
        Answer::default().replace(&new, Some("\"e2\"")),
    );
    let (outcome, bytes) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE + 7));
    assert!(bytes == new, "the new version whole, nothing of the old");
    let requests = run.source.seen();
    assert_eq!(
        requests[..3],
        [
            seen(range(0, PART - 1), None),
            seen(range(PART, 2 * PART - 1), Some("\"e1\"")),
            seen(range(0, PART - 1), None),
        ],
        "a 412 on a later part starts again with a probe"
    );
    assert_eq!(requests[3], seen(range(PART, 2 * PART - 1), Some("\"e2\"")));
}

#[tokio::test]
async fn an_object_that_changes_twice_fails() {
    let object = data(6, SIZE);
    let run = run_with(one_object(&object, Some("\"e1\"")), config(0));
    run.source.script(
        When::at_nth(PART, 1),
        Answer::default().replace(&object, Some("\"e2\"")),
    );
    run.source.script(
        When::at_nth(PART, 2),
        Answer::default().replace(&object, Some("\"e3\"")),
    );
    let (outcome, _) = download(&run, None).await;
    assert!(matches!(outcome, Err(Error::Changed { .. })), "{outcome:?}");
    assert_eq!(run.source.seen().len(), 4, "two attempts of two requests");
}

/// A server that ignores If-Match and serves another version of a later part.
async fn mixed_versions(later_validator: Option<&str>) -> (Run, Result<Finished>, Vec<u8>) {
    let (old, new) = (data(7, SIZE), data(8, SIZE));
    let run = run_with(one_object(&old, Some("\"e1\"")), config(0));
    run.source.script(
        When::at_nth(PART, 1),
        Answer::default()
            .replace(&new, later_validator)
            .ignore_pin(),
    );
    let (outcome, bytes) = download(&run, None).await;
    (run, outcome, bytes)
}

#[tokio::test]
async fn a_later_part_without_a_validator_is_another_version() {
    let (run, outcome, bytes) = mixed_versions(None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(bytes == data(8, SIZE), "never a file of two versions");
    assert_eq!(run.source.seen()[2], seen(range(0, PART - 1), None));
}

#[tokio::test]
async fn a_later_part_with_another_validator_is_another_version() {
    let (_, outcome, bytes) = mixed_versions(Some("\"e2\"")).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(bytes == data(8, SIZE), "never a file of two versions");
}

#[tokio::test]
async fn a_first_part_that_is_not_the_range_asked_for_fails() {
    let run = run_with(one_object(&data(9, SIZE), Some("\"e1\"")), config(0));
    let shifted = Shape::Partial {
        range: range(5, PART + 4),
        total: SIZE,
    };
    run.source
        .script(When::nth(1), Answer::default().shape(shifted));
    let (outcome, _) = download(&run, None).await;
    let error = outcome.unwrap_err();
    assert!(error.to_string().contains("asked for bytes=0-"), "{error}");
}

#[tokio::test]
async fn later_parts_must_agree_on_range_total_and_whole_answers() {
    let known = Known {
        size: SIZE,
        validator: Some(etag("\"e1\"")),
        modified: None,
    };
    let shape = |shape| Answer::default().shape(shape);
    let disagree = [
        (
            shape(Shape::Partial {
                range: range(PART, 2 * PART - 2),
                total: SIZE,
            }),
            "asked for bytes=1024-2047, got bytes=1024-2046",
        ),
        (
            shape(Shape::Partial {
                range: range(PART, 2 * PART - 1),
                total: SIZE + 1,
            }),
            "size went from",
        ),
        (
            shape(Shape::Whole { length: Some(SIZE) }),
            "ignored the Range header",
        ),
        (
            Answer::default().validator(None),
            "a later part came without a validator",
        ),
        (
            Answer::default().validator(Some("\"e2\"")),
            "ETag \"e1\" became ETag \"e2\"",
        ),
    ];
    for (answer, message) in disagree {
        let run = run_with(one_object(&data(10, SIZE), Some("\"e1\"")), config(0));
        run.source.script(When::at(PART), answer.clone());
        let (outcome, _) = download(&run, Some(known.clone())).await;
        let error = outcome.unwrap_err();
        assert!(error.to_string().contains(message), "{answer:?}: {error}");
    }
}

#[tokio::test]
async fn a_whole_answer_to_a_request_for_the_whole_object_is_taken() {
    let object = data(11, SIZE);
    let run = run_with(one_object(&object, Some("\"e1\"")), config(0));
    run.source.script(When::every(), Answer::default().whole());
    let small = &object[..1000];
    let run_small = run_with(one_object(small, Some("\"e1\"")), config(0));
    run_small
        .source
        .script(When::every(), Answer::default().whole());
    let known = Known {
        size: 1000,
        validator: Some(etag("\"e1\"")),
        modified: None,
    };
    let (outcome, bytes) = download(&run_small, Some(known)).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(1000));
    assert!(bytes == small);
    // A whole answer of another length is another version: started again with a probe.
    let wrong = Known {
        size: 999,
        validator: Some(etag("\"e1\"")),
        modified: None,
    };
    let (outcome, bytes) = download(&run, Some(wrong)).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(bytes == object);
    assert_eq!(
        run.source.seen(),
        [
            // The whole object, so no Range.
            Seen {
                range: None,
                pinned: Some(etag("\"e1\""))
            },
            seen(range(0, PART - 1), None)
        ]
    );
}

#[tokio::test]
async fn the_content_check_sees_bytes_of_the_same_validator_that_differ() {
    let object = data(12, SIZE);
    let tag = md5_etag(&object);
    let run = run_with(one_object(&object, Some(&tag)), config(0));
    let (outcome, bytes) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(bytes == object);
    assert_eq!(run.counters.snapshot().verified.md5, 1);

    let run = run_with(one_object(&object, Some(&tag)), config(0));
    run.source.script(
        When::at_nth(2 * PART, 1),
        Answer::default().replace(&data(13, SIZE), Some(&tag)),
    );
    let (outcome, _) = download(&run, None).await;
    assert!(matches!(outcome, Err(Error::Corrupt { .. })), "{outcome:?}");
}

/// A web server may not enforce the pin: bytes of one ETag that fail their content check
/// (a file rewritten in place between two parts) are fetched again whole once. From S3,
/// which enforces `If-Match`, they fail the object.
#[tokio::test]
async fn a_web_file_that_fails_its_check_is_fetched_again_whole_once() {
    const URL: &str = "https://h/f";
    let object = data(12, SIZE);
    let tag = md5_etag(&object);
    let store = MemoryStore::new();
    store.put(URL, &object, Some(&tag));
    // The third part comes from other bytes under the same ETag; by the second attempt's
    // first request the file is whole again.
    store.script(
        When::at_nth(2 * PART, 1).key(URL),
        Answer::default().replace(&data(13, SIZE), Some(&tag)),
    );
    store.script(
        When::at_nth(0, 2).key(URL),
        Answer::default().replace(&object, Some(&tag)),
    );
    let run = run_with(store, config(0));
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let web = Job {
        source: ObjectUrl::Http(crate::location::HttpUrl::parse(URL).unwrap()),
        known: None,
        target: Target::Memory(buffer.clone()),
    };
    let outcome = run.engine.download(&web).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(*buffer.lock().unwrap() == object);
    let probes = run
        .source
        .seen()
        .iter()
        .filter(|seen| seen.range.is_some_and(|r| r.start == 0))
        .count();
    assert_eq!(probes, 2, "fetched again once: {:?}", run.source.seen());
}

/// Large enough to stream into a temporary file (small ones are written whole).
const FILE_PART: u64 = 128 * 1024;

/// An object of four parts of [`FILE_PART`] (the last one 5 bytes), and a config to fetch it.
fn large_file_object(seed: u8) -> (Vec<u8>, TransferConfig) {
    let config = TransferConfig {
        part_size: FILE_PART,
        ..config(0)
    };
    (data(seed, 3 * FILE_PART + 5), config)
}

#[tokio::test]
async fn after_a_failure_the_finished_parts_are_kept_and_only_the_rest_is_fetched_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("object.bin");
    let (object, config) = large_file_object(14);
    let size = object.len() as u64;
    let retry_once = TransferConfig {
        retry: RetryPolicy {
            max_retries: 1,
            ..config.retry.clone()
        },
        ..config.clone()
    };
    let known = Known {
        size,
        validator: Some(etag("\"e1\"")),
        modified: None,
    };
    let target = Target::File(FilePath::at(&path));
    let run = run_with(one_object(&object, Some("\"e1\"")), retry_once);
    run.source
        .script(When::at(2 * FILE_PART), Answer::default().fail(throttled));
    let outcome = run
        .engine
        .download(&job(Some(known.clone()), target.clone()))
        .await;
    assert!(matches!(outcome, Err(Error::GaveUp { .. })), "{outcome:?}");
    assert_eq!(
        sink::interrupted_version(&path),
        Some((size, "\"e1\"".to_owned())),
        "the temporary file stays, marked with its version"
    );

    let run = run_with(one_object(&object, Some("\"e1\"")), config);
    let outcome = run.engine.download(&job(None, target)).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(size - 2 * FILE_PART));
    assert_eq!(
        run.source.seen(),
        [
            seen(range(2 * FILE_PART, 3 * FILE_PART - 1), Some("\"e1\"")),
            seen(range(3 * FILE_PART, size - 1), Some("\"e1\"")),
        ],
        "only the parts not recorded, pinned to the recorded version, no probe"
    );
    assert!(std::fs::read(&path).unwrap() == object);
}

/// Small chunks are gathered before a write and larger ones written as they came: a large
/// chunk after a few small ones must land after them, not over them.
#[tokio::test]
async fn uneven_chunks_land_at_their_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("object.bin");
    let (object, config) = large_file_object(23);
    let run = run_with(one_object(&object, Some("\"e1\"")), config);
    run.source.script(
        When::every(),
        Answer::default().chunk_sizes(&[1000, 20_000, 3, 40_000, 7_000, 70_000]),
    );
    let target = Target::File(FilePath::at(&path));
    let outcome = run.engine.download(&job(None, target)).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(object.len() as u64));
    assert!(std::fs::read(&path).unwrap() == object);
}

#[tokio::test]
async fn a_failure_that_no_later_run_can_get_past_keeps_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("object.bin");
    let (object, config) = large_file_object(15);
    let size = object.len() as u64;
    let run = run_with(one_object(&object, Some("\"e1\"")), config);
    let shifted = Shape::Partial {
        range: range(2 * FILE_PART, 3 * FILE_PART - 1),
        total: size + 1,
    };
    run.source
        .script(When::at(2 * FILE_PART), Answer::default().shape(shifted));
    let outcome = run
        .engine
        .download(&job(None, Target::File(FilePath::at(&path))))
        .await;
    assert!(matches!(outcome, Err(Error::Changed { .. })), "{outcome:?}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn throttling_cuts_the_request_limit_and_successes_grow_it_back() {
    // 40 parts of 64 bytes.
    let object = data(16, 40 * 64);
    let config = TransferConfig {
        part_size: 64,
        ranges_per_object: 8,
        ..config(0)
    };
    let run = run_with(one_object(&object, Some("\"e1\"")), config);
    run.source
        .script(When::nth(2), Answer::default().fail(throttled));
    let known = Known {
        size: object.len() as u64,
        validator: Some(etag("\"e1\"")),
        modified: None,
    };
    let (outcome, _) = download(&run, Some(known.clone())).await;
    assert!(
        matches!(outcome, Err(Error::Throttled { .. })),
        "{outcome:?}"
    );
    let cut = run.engine.request_limit.limit();
    assert!(cut < 8, "cut to {cut}");
    let (outcome, bytes) = download(&run, Some(known)).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(object.len() as u64));
    assert!(bytes == object);
    assert_eq!(run.engine.request_limit.limit(), 8, "grown back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_never_waits_behind_the_parts_that_wait_for_it() {
    // Parts 2-4 take every request slot and wait to write behind part 1. Part 1 breaks, and
    // its retry is throttled, which cuts the limit below the slots they hold: its next try
    // must still go out, or nothing ever moves again.
    let object = data(19, SIZE);
    let config = TransferConfig {
        ranges_per_object: 4,
        max_requests: 4,
        ..config(3)
    };
    let run = run_with(one_object(&object, Some("\"e1\"")), config);
    run.source
        .script(When::at_nth(0, 1), Answer::default().break_after(100));
    run.source
        .script(When::at_nth(100, 1), Answer::default().fail(throttled));
    let (mut reader, writer) = std::io::pipe().unwrap();
    let drained = std::thread::spawn(move || {
        let mut received = Vec::new();
        std::io::Read::read_to_end(&mut reader, &mut received).unwrap();
        received
    });
    let pipe = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&writer));
    let stream = StreamTarget::device(std::path::Path::new(&pipe), true).unwrap();
    let known = Known {
        size: SIZE,
        validator: Some(etag("\"e1\"")),
        modified: None,
    };
    let outcome = tokio::time::timeout(
        Duration::from_secs(20),
        run.engine
            .download(&job(Some(known), Target::Stream(stream))),
    )
    .await
    .expect("the stream waited behind the parts that wait for it");
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(run.engine.request_limit.limit() < 4, "the limit was cut");
    drop(writer);
    assert!(drained.join().unwrap() == object);
}

#[tokio::test]
async fn slices_are_ranged_gets_pinned_to_the_first_answers_version() {
    let object = data(20, SIZE);
    let run = run_with(one_object(&object, Some("\"e1\"")), config(0));
    let source = job(None, Target::Discard).source;
    let asked = [
        range(10, 19),
        range(2 * PART, 2 * PART + 99),
        range(SIZE - 3, SIZE + 50),
    ];
    let slices = run.engine.fetch_slices(&source, &asked).await.unwrap();
    let expected = [
        &object[10..20],
        &object[2048..2148],
        &object[SIZE as usize - 3..],
    ];
    assert_eq!(
        slices, expected,
        "the end past the object is cut at its end"
    );
    assert_eq!(
        run.source.seen(),
        [
            seen(range(10, 19), None),
            seen(range(2 * PART, 2 * PART + 99), Some("\"e1\"")),
            seen(range(SIZE - 3, SIZE - 1), Some("\"e1\"")),
        ]
    );
    let past = run
        .engine
        .fetch_slices(&source, &[range(0, 0), range(SIZE, SIZE)])
        .await;
    assert!(past
        .unwrap_err()
        .to_string()
        .contains("starts past its end"));
}

#[tokio::test]
async fn a_slice_of_another_version_fails_as_changed() {
    let run = run_with(one_object(&data(21, SIZE), Some("\"e1\"")), config(0));
    run.source.script(
        When::nth(2),
        Answer::default().ignore_pin().validator(Some("\"e2\"")),
    );
    let source = job(None, Target::Discard).source;
    let outcome = run
        .engine
        .fetch_slices(&source, &[range(0, 9), range(PART, PART + 9)])
        .await;
    let error = outcome.unwrap_err();
    assert!(matches!(error, Error::Changed { .. }), "{error}");
}

#[tokio::test]
async fn slices_of_a_whole_answer_are_cut_from_it() {
    let object = data(22, SIZE);
    let run = run_with(one_object(&object, Some("\"e1\"")), config(0));
    run.source.script(When::every(), Answer::default().whole());
    let source = job(None, Target::Discard).source;
    let slices = run
        .engine
        .fetch_slices(&source, &[range(5, 9), range(PART, 2 * PART - 1)])
        .await
        .unwrap();
    assert_eq!(slices, [&object[5..10], &object[1024..2048]]);
    assert_eq!(
        run.source.seen().len(),
        1,
        "one request brought the whole object"
    );
}

fn crc64(data: &[u8]) -> u64 {
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc64Nvme, data)
}

fn full(algorithm: Crc, value: u64) -> StoreChecksum {
    StoreChecksum::Full(FullChecksum { algorithm, value })
}

#[tokio::test]
async fn an_object_of_several_parts_is_checked_by_the_crc_a_head_brings() {
    let object = data(20, SIZE);
    // Not an MD5: without the HEAD only the size could be checked.
    let run = run_with(one_object(&object, Some("\"e1-2\"")), config(0));
    run.source
        .keep_checksum(OBJECT, full(Crc::Crc64Nvme, crc64(&object)), SIZE);
    let (outcome, bytes) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(bytes == object);
    let counted = run.counters.snapshot();
    assert_eq!(
        (counted.verified.checksum, counted.verified.size_only),
        (1, 0)
    );
    assert_eq!(run.source.heads(), [None], "one HEAD, beside the parts");
    assert_eq!(run.source.seen().len(), 4, "no GET more than the parts");

    // Another algorithm than S3's default is known only when the HEAD answers: every CRC
    // was computed until then.
    let crc32 = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32IsoHdlc, &object);
    let run = run_with(one_object(&object, Some("\"e1-2\"")), config(0));
    run.source
        .keep_checksum(OBJECT, full(Crc::Crc32, crc32), SIZE);
    let (outcome, _) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert_eq!(run.counters.snapshot().verified.checksum, 1);

    let run = run_with(one_object(&object, Some("\"e1-2\"")), config(0));
    run.source
        .keep_checksum(OBJECT, full(Crc::Crc64Nvme, crc64(&object) ^ 1), SIZE);
    let (outcome, _) = download(&run, None).await;
    assert!(matches!(outcome, Err(Error::Corrupt { .. })), "{outcome:?}");
}

/// The HEAD that brings the stored checksum fails while every GET succeeds: the object is
/// not saved on the MD5 of its ETag (or its size) instead; with verification off (the
/// user's choice) no HEAD is sent and it is.
#[tokio::test]
async fn a_checksum_that_cannot_be_read_fails_the_object_not_the_check() {
    let object = data(23, SIZE);
    let tag = md5_etag(&object);
    for fails in [denied as fn() -> Error, server_error] {
        let run = run_with(one_object(&object, Some(&tag)), config(1));
        run.source
            .keep_checksum(OBJECT, full(Crc::Crc64Nvme, crc64(&object)), SIZE);
        run.source
            .script(When::head(), Answer::default().fail(fails));
        let (outcome, _) = download(&run, None).await;
        assert!(
            matches!(&outcome, Err(Error::ChecksumUnavailable { .. })),
            "{outcome:?}"
        );
    }
    let unchecked = TransferConfig {
        verify_content: false,
        ..config(0)
    };
    let run = run_with(one_object(&object, Some(&tag)), unchecked);
    run.source
        .script(When::head(), Answer::default().fail(denied));
    let (outcome, bytes) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(bytes == object);
    assert!(run.source.heads().is_empty());
}

#[tokio::test]
async fn what_the_head_tells_decides_the_check() {
    let object = data(22, SIZE);
    let tag = md5_etag(&object);
    // The HEAD tells of no CRC: the MD5 of the ETag decides.
    let run = run_with(one_object(&object, Some(&tag)), config(0));
    run.source
        .keep_checksum(OBJECT, full(Crc::Crc64Nvme, crc64(&object)), SIZE);
    run.source
        .script(When::head(), Answer::default().described(None, None));
    let (outcome, _) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    let counted = run.counters.snapshot().verified;
    assert_eq!((counted.checksum, counted.md5), (0, 1));

    // A CRC the bytes do not have fails the object, whatever the MD5 says.
    let run = run_with(one_object(&object, Some(&tag)), config(0));
    let wrong = full(Crc::Crc64Nvme, crc64(&object) ^ 1);
    run.source
        .script(When::head(), Answer::default().described(Some(wrong), None));
    let (outcome, _) = download(&run, None).await;
    assert!(matches!(outcome, Err(Error::Corrupt { .. })), "{outcome:?}");
}

/// An object of one GET whose ETag is its MD5 is checked by that MD5, with no HEAD. One
/// whose ETag is no MD5 (a multipart or encrypted upload) would be checked by its size
/// alone: a HEAD asks for the CRC the store keeps, and a CRC the bytes do not have fails
/// it. It used to be saved unchecked.
#[tokio::test]
async fn an_object_of_one_get_is_checked_by_its_md5_or_else_the_crc_a_head_brings() {
    let object = data(21, PART);
    let run = run_with(one_object(&object, Some(&md5_etag(&object))), config(0));
    run.source
        .keep_checksum(OBJECT, full(Crc::Crc64Nvme, crc64(&object)), PART);
    let (outcome, _) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(PART));
    assert!(run.source.heads().is_empty());
    assert_eq!(run.counters.snapshot().verified.md5, 1);

    let run = run_with(one_object(&object, Some("\"e1-1\"")), config(0));
    run.source
        .keep_checksum(OBJECT, full(Crc::Crc64Nvme, crc64(&object) ^ 1), PART);
    let (outcome, _) = download(&run, None).await;
    assert!(matches!(outcome, Err(Error::Corrupt { .. })), "{outcome:?}");
    assert_eq!(run.source.heads().len(), 1);
}

/// The CRC32C composite checksum of `object` uploaded in parts of `part_size`.
fn composite_of(object: &[u8], part_size: usize) -> StoreChecksum {
    let mut concatenated = Vec::new();
    for part in object.chunks(part_size) {
        let crc = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, part) as u32;
        concatenated.extend(crc.to_be_bytes());
    }
    StoreChecksum::Composite {
        crc: FullChecksum {
            algorithm: Crc::Crc32c,
            value: crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, &concatenated),
        },
        parts: object.len().div_ceil(part_size) as u32,
    }
}

#[tokio::test]
async fn a_declared_checksum_that_is_none_fails_the_object_never_a_size_check() {
    let object = data(30, SIZE);
    let run = run_with(one_object(&object, Some("\"e1-2\"")), config(0));
    run.source
        .keep_checksum(OBJECT, StoreChecksum::Malformed(Crc::Crc64Nvme), SIZE);
    let (outcome, _) = download(&run, None).await;
    let Err(Error::Uncheckable { detail, .. }) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(detail.contains("CRC64NVME"), "{detail}");
    assert_eq!(run.counters.snapshot().verified.size_only, 0);
    // Asked for explicitly, the size alone is accepted.
    let unchecked = TransferConfig {
        verify_content: false,
        ..config(0)
    };
    let run = run_with(one_object(&object, Some("\"e1-2\"")), unchecked);
    run.source
        .keep_checksum(OBJECT, StoreChecksum::Malformed(Crc::Crc64Nvme), SIZE);
    let (outcome, bytes) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(bytes == object);
}

#[tokio::test]
async fn a_part_layout_that_does_not_add_up_fails_the_object() {
    let object = data(31, SIZE);
    let composite = composite_of(&object, 2 * PART as usize);
    // The HEAD of part 1 says it is one byte long: 3077 parts, not 2.
    let run = run_with(one_object(&object, Some("\"e1-2\"")), config(0));
    run.source.keep_checksum(OBJECT, composite, 2 * PART);
    run.source.script(
        When::head(),
        Answer::default().described(Some(composite), Some(range(0, 0))),
    );
    let (outcome, _) = download(&run, None).await;
    let Err(Error::Uncheckable { detail, .. }) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(detail.contains("2 upload parts"), "{detail}");
}

#[tokio::test]
async fn parts_that_do_not_break_on_the_grid_are_checked_by_reading_back() {
    // Parts of 1000 bytes: the pieces CRC'd as they streamed break every 1024.
    let object = data(32, SIZE);
    let composite = composite_of(&object, 1000);
    let run = run_with(one_object(&object, Some("\"e1-4\"")), config(0));
    run.source.keep_checksum(OBJECT, composite, 1000);
    let (outcome, bytes) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(bytes == object);
    assert_eq!(run.counters.snapshot().verified.checksum, 1);

    let mut flipped = object.clone();
    flipped[1500] ^= 1;
    let run = run_with(one_object(&flipped, Some("\"e1-4\"")), config(0));
    run.source.keep_checksum(OBJECT, composite, 1000);
    let (outcome, _) = download(&run, None).await;
    assert!(matches!(outcome, Err(Error::Corrupt { .. })), "{outcome:?}");
}

#[tokio::test]
async fn a_composite_checksum_is_checked_part_by_part() {
    // Uploaded in parts of two of ours: 2 KiB, then 1029 bytes.
    let object = data(22, SIZE);
    let upload_part = 2 * PART as usize;
    let mut concatenated = Vec::new();
    for part in object.chunks(upload_part) {
        let crc = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, part) as u32;
        concatenated.extend(crc.to_be_bytes());
    }
    let value = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, &concatenated);
    let composite = |value| StoreChecksum::Composite {
        crc: FullChecksum {
            algorithm: Crc::Crc32c,
            value,
        },
        parts: 2,
    };
    let run = run_with(one_object(&object, Some("\"e1-2\"")), config(0));
    run.source
        .keep_checksum(OBJECT, composite(value), upload_part as u64);
    let (outcome, bytes) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(bytes == object);
    assert_eq!(run.counters.snapshot().verified.checksum, 1);
    assert_eq!(
        run.source.heads(),
        [None, Some(1)],
        "the object, then where part 1 ends"
    );

    let run = run_with(one_object(&object, Some("\"e1-2\"")), config(0));
    run.source
        .keep_checksum(OBJECT, composite(value ^ 1), upload_part as u64);
    let (outcome, _) = download(&run, None).await;
    assert!(matches!(outcome, Err(Error::Corrupt { .. })), "{outcome:?}");
}

/// `checksum`'s value with neither its type nor its part count, as moto's HEAD tells it.
fn unlabeled(checksum: StoreChecksum) -> StoreChecksum {
    let StoreChecksum::Composite { crc, parts } = checksum else {
        panic!("{checksum:?}");
    };
    StoreChecksum::Unlabeled { crc, parts }
}

#[tokio::test]
async fn a_store_that_labels_nothing_and_refuses_pinned_part_heads_is_checked_by_parts() {
    // moto: the COMPOSITE checksum comes without `-N` or a type, and part 1's HEAD pinned
    // to the object's ETag answers 412 (each part has its own ETag). Nothing changed.
    let object = data(33, SIZE);
    let upload_part = 2 * PART;
    let checksum = unlabeled(composite_of(&object, upload_part as usize));
    let moto = |bytes: &[u8]| {
        let run = run_with(one_object(bytes, Some("\"e1-2\"")), config(0));
        run.source.keep_checksum(OBJECT, checksum, upload_part);
        run.source.give_parts_own_etags(OBJECT);
        run
    };
    let run = moto(&object);
    let (outcome, bytes) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(bytes == object);
    assert_eq!(run.counters.snapshot().verified.checksum, 1);
    assert_eq!(
        run.source.heads(),
        [None, Some(1), Some(1)],
        "the object, part 1 pinned (refused), part 1 unpinned"
    );
    // Other bytes fail under either reading.
    let mut flipped = object.clone();
    flipped[10] ^= 1;
    let (outcome, _) = download(&moto(&flipped), None).await;
    assert!(matches!(outcome, Err(Error::Corrupt { .. })), "{outcome:?}");
    // A part HEAD that lies about where part 1 ends (a size that still makes two parts)
    // reads the bytes by the wrong parts: that fails, it never passes.
    let run = moto(&object);
    run.source.script(
        When::head(),
        Answer::default().described(Some(checksum), Some(range(0, upload_part))),
    );
    let (outcome, _) = download(&run, None).await;
    assert!(matches!(outcome, Err(Error::Corrupt { .. })), "{outcome:?}");
}

#[tokio::test]
async fn an_unlabeled_whole_object_checksum_passes_without_a_layout() {
    let object = data(34, SIZE);
    let checksum = StoreChecksum::Unlabeled {
        crc: FullChecksum {
            algorithm: Crc::Crc32c,
            value: crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, &object),
        },
        parts: 2,
    };
    let run = run_with(one_object(&object, Some("\"e1-2\"")), config(0));
    run.source.keep_checksum(OBJECT, checksum, 2 * PART);
    // No part HEAD answers at all: the whole-object reading needs none.
    run.source.script(
        When::head(),
        Answer::default().described(Some(checksum), None),
    );
    let (outcome, bytes) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(SIZE));
    assert!(bytes == object);
    assert_eq!(run.counters.snapshot().verified.checksum, 1);
    // Not the whole object's CRC, and no layout to read it by parts: the store's silence
    // fails the object, and the message says so.
    let run = run_with(one_object(&object, Some("\"e1-2\"")), config(0));
    run.source.keep_checksum(
        OBJECT,
        unlabeled(composite_of(&object, 2 * PART as usize)),
        2 * PART,
    );
    run.source.script(
        When::head(),
        Answer::default().described(
            Some(unlabeled(composite_of(&object, 2 * PART as usize))),
            None,
        ),
    );
    let (outcome, _) = download(&run, None).await;
    let Err(Error::Uncheckable { detail, .. }) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        detail.contains("neither its type nor its part count"),
        "{detail}"
    );
}

#[tokio::test]
async fn a_resumed_object_is_checked_with_what_the_earlier_run_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("object.bin");
    let (object, config) = large_file_object(23);
    let size = object.len() as u64;
    let checksum = full(Crc::Crc64Nvme, crc64(&object));
    let target = Target::File(FilePath::at(&path));
    let interrupted = || async {
        let run = run_with(one_object(&object, Some("\"e1-4\"")), config.clone());
        run.source.keep_checksum(OBJECT, checksum, size);
        run.source
            .script(When::at(2 * FILE_PART), Answer::default().fail(throttled));
        // Known, so no probe races the parts: they go one after the other, the first two
        // are kept.
        let known = Known {
            size,
            validator: Some(etag("\"e1-4\"")),
            modified: None,
        };
        let outcome = run.engine.download(&job(Some(known), target.clone())).await;
        assert!(
            matches!(outcome, Err(Error::Throttled { .. })),
            "{outcome:?}"
        );
        assert_eq!(
            sink::interrupted_version(&path),
            Some((size, "\"e1-4\"".to_owned()))
        );
    };
    let kept = Arc::new(Kept::default());
    let resume = || async {
        let run = run_reporting(
            one_object(&object, Some("\"e1-4\"")),
            config.clone(),
            kept.clone(),
        );
        run.source.keep_checksum(OBJECT, checksum, size);
        let outcome = run.engine.download(&job(None, target.clone())).await;
        (outcome, run)
    };

    interrupted().await;
    let (outcome, run) = resume().await;
    // The parts kept are reported as resumed (the bar counts them done), not skipped.
    assert_eq!(
        (kept.resumed.load(Relaxed), kept.skipped.load(Relaxed)),
        (2 * FILE_PART, 0)
    );
    assert_eq!(outcome.unwrap(), Finished::Downloaded(size - 2 * FILE_PART));
    assert_eq!(run.counters.snapshot().verified.checksum, 1);
    assert!(std::fs::read(&path).unwrap() == object);
    std::fs::remove_file(&path).unwrap();

    // A byte of the earlier run's that went bad on disk is caught too.
    interrupted().await;
    let temporary = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(temporary.path())
        .unwrap();
    std::os::unix::fs::FileExt::write_at(&file, &[!object[1000]], 1000).unwrap();
    let (outcome, _) = resume().await;
    assert!(matches!(outcome, Err(Error::Corrupt { .. })), "{outcome:?}");
    assert!(!path.exists());
}

#[tokio::test]
async fn parts_grow_after_the_first_and_a_known_small_object_is_one_request() {
    let object = data(24, 20 * PART + 5);
    let size = object.len() as u64;
    let known = |size| Known {
        size,
        validator: Some(etag("\"e1\"")),
        modified: None,
    };
    let sized = |source| {
        let mut run = run_with(
            source,
            TransferConfig {
                ranges_per_object: 2,
                ..config(0)
            },
        );
        run.engine.max_part = 8 * PART;
        run
    };
    let run = sized(one_object(&object, Some("\"e1\"")));
    let (outcome, bytes) = download(&run, Some(known(size))).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(size));
    assert!(bytes == object);
    let mut asked: Vec<_> = run
        .source
        .seen()
        .into_iter()
        .filter_map(|s| s.range)
        .collect();
    asked.sort_by_key(|r| r.start);
    assert_eq!(
        asked,
        [
            range(0, PART - 1),
            range(PART, 9 * PART - 1),
            range(9 * PART, 17 * PART - 1),
            range(17 * PART, size - 1),
        ],
        "a small first part, then parts as large as allowed for two at a time"
    );

    let small = &object[..2 * PART as usize];
    let run = sized(one_object(small, Some("\"e1\"")));
    let (outcome, _) = download(&run, Some(known(2 * PART))).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(2 * PART));
    assert_eq!(
        run.source.seen(),
        [Seen {
            range: None,
            pinned: Some(etag("\"e1\""))
        }],
        "the whole object in one GET, without a Range, so S3 sends its checksum"
    );
}

/// With one range at a time nothing is split: an object comes in one GET without a Range,
/// whose answer tells its size and version and brings the store's checksum, so no HEAD
/// follows; a break resumes from the byte it reached, to the end, pinned.
#[tokio::test]
async fn one_range_at_a_time_fetches_an_object_in_one_get_without_a_range() {
    let engine = |ranges_per_object| {
        let config = TransferConfig {
            ranges_per_object,
            ..config(1)
        };
        let run = Engine::new(
            Arc::new(MemoryStore::new()),
            config,
            RequestLimit::new(8),
            Arc::new(Counters::default()),
            Arc::new(Silent),
        );
        run.one_request_each
    };
    assert!(
        engine(1) && !engine(2),
        "only one range at a time is one request each"
    );

    let size = 40 * PART;
    let object = data(23, size);
    let store = || {
        // Not an MD5: only the store's checksum can check it.
        let store = one_object(&object, Some("\"e1-2\""));
        store.keep_checksum(OBJECT, full(Crc::Crc64Nvme, crc64(&object)), size);
        store
    };
    let mut run = run_with(store(), config(1));
    run.engine.one_request_each = true;
    let (outcome, bytes) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(size));
    assert!(bytes == object);
    let unranged = |pinned: Option<&str>| Seen {
        range: None,
        pinned: pinned.map(etag),
    };
    assert_eq!(run.source.seen(), [unranged(None)]);
    assert_eq!(run.source.heads(), [], "the GET brought the checksum");
    assert_eq!(run.counters.snapshot().verified.checksum, 1);

    let mut run = run_with(store(), config(1));
    run.engine.one_request_each = true;
    let known = Known {
        size,
        validator: Some(etag("\"e1-2\"")),
        modified: None,
    };
    let (outcome, _) = download(&run, Some(known)).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(size));
    assert_eq!(run.source.seen(), [unranged(Some("\"e1-2\""))]);

    let mut run = run_with(store(), config(1));
    run.engine.one_request_each = true;
    run.source
        .script(When::nth(1), Answer::default().break_after(1500));
    let (outcome, bytes) = download(&run, None).await;
    assert_eq!(outcome.unwrap(), Finished::Downloaded(size));
    assert!(bytes == object);
    assert_eq!(
        run.source.seen(),
        [
            unranged(None),
            seen(range(1500, size - 1), Some("\"e1-2\""))
        ]
    );
}

mod strongest_check;
