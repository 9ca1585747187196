//! The upload path through the in-memory store: what is sent, what is kept, and that
//! nothing is left behind or stored wrong when a request, the store or the file misbehaves.

use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::checksum::{Crc, FullChecksum, StoreChecksum};
use crate::property_cases::property_cases;
use crate::report::Silent;
use crate::retry::RetryPolicy;
use crate::source::{Answer, MemoryStore, Request, When};
use crate::transfer::upload::server_copy::CopyJob;
use crate::validator::Validator;

const MIB: u64 = 1024 * 1024;
const URL: &str = "s3://bucket/dir/file.bin";

fn data(seed: u8, size: u64) -> Vec<u8> {
    (0..size)
        .map(|i| {
            (i as u8)
                .wrapping_mul(31)
                .wrapping_add(seed ^ (i >> 16) as u8)
        })
        .collect()
}

fn config() -> TransferConfig {
    TransferConfig {
        part_size: 5 * MIB,
        ranges_per_object: 2,
        retry: RetryPolicy {
            max_retries: 3,
            base_delay: Duration::ZERO,
            max_delay: Duration::ZERO,
            max_elapsed: None,
        },
        ..TransferConfig::default()
    }
}

fn uploader(store: &Arc<MemoryStore>) -> Uploader<MemoryStore> {
    let transfer = config();
    Uploader::new(
        store.clone(),
        transfer.clone(),
        RequestLimit::new(transfer.max_requests),
        Arc::new(Counters::default()),
    )
}

fn file_of(dir: &Path, bytes: &[u8]) -> UploadJob {
    let from = dir.join("file.bin");
    std::fs::write(&from, bytes).unwrap();
    UploadJob {
        from,
        to: S3Url::parse(URL).unwrap(),
        size: bytes.len() as u64,
        modified: None,
        options: Arc::default(),
    }
}

async fn upload(store: &Arc<MemoryStore>, job: &UploadJob) -> Result<Finished> {
    uploader(store).upload(job, &Silent).await
}

fn kept_crc(bytes: &[u8]) -> StoreChecksum {
    StoreChecksum::Full(FullChecksum {
        algorithm: Crc::Crc64Nvme,
        value: crc64nvme(bytes),
    })
}

#[tokio::test]
async fn a_file_up_to_a_part_is_one_put_carrying_its_crc() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = data(1, 5 * MIB);
    let store = Arc::new(MemoryStore::new());
    let job = file_of(dir.path(), &bytes);
    assert_eq!(
        upload(&store, &job).await.unwrap(),
        Finished::Downloaded(5 * MIB)
    );
    assert_eq!(store.writes(), [Request::Put]);
    assert_eq!(store.data_of(URL).unwrap(), bytes);
    assert_eq!(store.checksum_of(URL), Some(kept_crc(&bytes)));
}

#[tokio::test]
async fn a_larger_file_goes_in_parts_and_keeps_its_whole_crc() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = data(2, 12 * MIB + 7);
    let store = Arc::new(MemoryStore::new());
    let job = file_of(dir.path(), &bytes);
    assert_eq!(
        upload(&store, &job).await.unwrap(),
        Finished::Downloaded(bytes.len() as u64)
    );
    let parts = [Request::Part; 3];
    let writes = store.writes();
    assert_eq!(writes.first(), Some(&Request::Create));
    assert_eq!(&writes[1..4], parts);
    assert_eq!(writes.last(), Some(&Request::Complete));
    assert_eq!(store.data_of(URL).unwrap(), bytes);
    assert_eq!(store.checksum_of(URL), Some(kept_crc(&bytes)));
    assert_eq!(store.open_uploads(), 0);
}

#[tokio::test]
async fn bytes_in_memory_go_up_as_they_are() {
    let store = Arc::new(MemoryStore::new());
    let to = S3Url::parse(URL).unwrap();
    for size in [3, 12 * MIB] {
        let bytes = Bytes::from(data(7, size));
        let options = WriteOptions::default();
        let finished = uploader(&store)
            .put_bytes(bytes.clone(), &to, &options, &Silent)
            .await
            .unwrap();
        assert_eq!(finished, Finished::Downloaded(size));
        assert_eq!(store.data_of(URL).unwrap(), bytes, "{size}");
        assert_eq!(store.checksum_of(URL), Some(kept_crc(&bytes)), "{size}");
    }
    assert_eq!(store.open_uploads(), 0);
}

#[tokio::test]
async fn a_stream_goes_up_as_it_is_read_or_is_aborted() {
    let to = S3Url::parse(URL).unwrap();
    let options = WriteOptions::default();
    for size in [0, 100, 5 * MIB, 12 * MIB + 1] {
        let store = Arc::new(MemoryStore::new());
        let bytes = data(8, size);
        let finished = uploader(&store)
            .put_stream(pieces::Reader::stdin(&bytes[..]), &to, &options, &Silent)
            .await
            .unwrap();
        assert_eq!(finished, Finished::Downloaded(size), "{size}");
        assert_eq!(store.data_of(URL).unwrap(), bytes, "{size}");
        assert_eq!(store.checksum_of(URL), Some(kept_crc(&bytes)), "{size}");
    }
    let store = Arc::new(MemoryStore::new());
    store.script(
        When::write_nth(Request::Part, 2),
        Answer::default().fail(denied),
    );
    let bytes = data(9, 12 * MIB);
    let failed = uploader(&store)
        .put_stream(pieces::Reader::stdin(&bytes[..]), &to, &options, &Silent)
        .await;
    assert!(
        matches!(failed, Err(Error::PermissionDenied { .. })),
        "{failed:?}"
    );
    assert_eq!(store.open_uploads(), 0);
    assert!(store.data_of(URL).is_none());
}

/// Chunks of `sizes` bytes of `bytes` sent over a channel, ended with `Chunk::End` when
/// `ended`, else the channel dropped (a writer that failed).
fn writer_chunks(bytes: &[u8], sizes: &[usize], ended: bool) -> pieces::WriterChunks {
    let (sender, receiver) = tokio::sync::mpsc::channel(sizes.len() + 1);
    let mut offset = 0;
    for &size in sizes {
        let chunk = Bytes::copy_from_slice(&bytes[offset..offset + size]);
        sender.try_send(pieces::Chunk::Data(chunk)).unwrap();
        offset += size;
    }
    if ended {
        sender.try_send(pieces::Chunk::End).unwrap();
    }
    pieces::WriterChunks::new(receiver, "(writer)".into())
}

#[tokio::test]
async fn a_writers_chunks_go_up_whole_only_once_it_ends() {
    let to = S3Url::parse(URL).unwrap();
    let options = WriteOptions::default();
    let bytes = data(10, 12 * MIB + 7);
    // Chunks of any sizes, smaller and larger than a part, make the object they add up to.
    let mib = MIB as usize;
    let sizes = [1, 3 * mib, 7 * mib, 2 * mib + 5, 1];
    for (sizes, ended) in [(&sizes[..], true), (&sizes[..4], false)] {
        let store = Arc::new(MemoryStore::new());
        let sent = &bytes[..sizes.iter().sum::<usize>()];
        let outcome = uploader(&store)
            .put_stream(writer_chunks(sent, sizes, ended), &to, &options, &Silent)
            .await;
        if ended {
            assert_eq!(outcome.unwrap(), Finished::Downloaded(bytes.len() as u64));
            assert_eq!(store.data_of(URL).unwrap(), bytes);
        } else {
            // The writer stopped unclosed: the upload is aborted and nothing is stored.
            assert!(matches!(outcome, Err(Error::Io { .. })), "{outcome:?}");
            assert!(store.data_of(URL).is_none());
        }
        assert_eq!(store.open_uploads(), 0);
    }
}

fn server_error() -> Error {
    Error::Http {
        what: "UploadPart".into(),
        status: 500,
        detail: "500 InternalError".into(),
    }
}

fn denied() -> Error {
    Error::PermissionDenied {
        what: "UploadPart".into(),
        detail: "403 AccessDenied".into(),
        anonymous: false,
    }
}

#[tokio::test]
async fn a_failed_part_or_complete_is_sent_again() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = data(3, 11 * MIB);
    let store = Arc::new(MemoryStore::new());
    store.script(
        When::write_nth(Request::Part, 2),
        Answer::default().fail(server_error),
    );
    // What a CompleteMultipartUpload's 200 carrying InternalError becomes.
    store.script(
        When::write_nth(Request::Complete, 1),
        Answer::default().fail(server_error),
    );
    let job = file_of(dir.path(), &bytes);
    upload(&store, &job).await.unwrap();
    let count = |kind| store.writes().iter().filter(|w| **w == kind).count();
    assert_eq!((count(Request::Part), count(Request::Complete)), (4, 2));
    assert_eq!(store.data_of(URL).unwrap(), bytes);
    assert_eq!(store.open_uploads(), 0);
}

/// The store commits, the answer is lost, and the retry finds no such upload: the key is
/// looked at, and the object under it is this file's.
#[tokio::test]
async fn a_complete_whose_answer_is_lost_is_found_committed() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = data(6, 11 * MIB);
    let store = Arc::new(MemoryStore::new());
    store.script(
        When::write_nth(Request::Complete, 1),
        Answer::default().break_after(0),
    );
    let job = file_of(dir.path(), &bytes);
    let finished = upload(&store, &job).await.unwrap();
    assert_eq!(finished, Finished::Downloaded(bytes.len() as u64));
    assert_eq!(store.data_of(URL).unwrap(), bytes);
    assert_eq!(store.open_uploads(), 0);
    // Another object under the key (another writer's) is not taken for this upload's.
    let store = Arc::new(MemoryStore::new());
    store.script(
        When::write(Request::Complete),
        Answer::default().fail(server_error),
    );
    store.put(URL, b"theirs", None);
    assert!(upload(&store, &job).await.is_err());
}

#[tokio::test]
async fn an_upload_that_fails_is_aborted_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = data(4, 11 * MIB);
    let store = Arc::new(MemoryStore::new());
    store.script(
        When::write(Request::Part).key(URL),
        Answer::default().fail(denied),
    );
    let job = file_of(dir.path(), &bytes);
    let error = upload(&store, &job).await.unwrap_err();
    assert!(matches!(error, Error::PermissionDenied { .. }), "{error:?}");
    assert_eq!(store.writes().last(), Some(&Request::Abort));
    assert_eq!(store.open_uploads(), 0);
    assert!(store.data_of(URL).is_none());
}

#[tokio::test]
async fn no_clobber_keeps_an_object_that_is_there() {
    let dir = tempfile::tempdir().unwrap();
    for size in [10, 11 * MIB] {
        let store = Arc::new(MemoryStore::new());
        store.put(URL, b"theirs", Some("\"e\""));
        let job = UploadJob {
            options: Arc::new(WriteOptions {
                no_clobber: true,
                ..WriteOptions::default()
            }),
            ..file_of(dir.path(), &data(5, size))
        };
        let finished = uploader(&store).upload(&job, &Silent).await.unwrap();
        assert_eq!(finished, Finished::AlreadyThere(size), "{size}");
        assert_eq!(store.data_of(URL).unwrap(), &b"theirs"[..], "{size}");
        assert_eq!(store.open_uploads(), 0, "{size}");
        // Looked at first: a store that ignores If-None-Match would have replaced it.
        assert!(store.writes().is_empty(), "{size}: {:?}", store.writes());
    }
}

/// Appends to the file after the first part is sent: the file changed while read.
struct Appender {
    path: std::path::PathBuf,
    done: AtomicBool,
}

impl Reporter for Appender {
    fn bytes_transferred(&self, _bytes: u64) {
        if !self.done.swap(true, Relaxed) {
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(&self.path)
                .unwrap();
            file.write_all(b"more").unwrap();
        }
    }
}

#[tokio::test]
async fn a_file_that_changes_while_it_is_read_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new());
    let job = file_of(dir.path(), &data(6, 16 * MIB));
    let appender = Appender {
        path: job.from.clone(),
        done: AtomicBool::new(false),
    };
    let error = uploader(&store).upload(&job, &appender).await.unwrap_err();
    assert!(matches!(error, Error::FileChanged { .. }), "{error:?}");
    assert!(error.to_string().contains("file.bin"), "{error}");
    assert!(store.data_of(URL).is_none());
    assert_eq!(store.open_uploads(), 0);
    assert!(!store.writes().contains(&Request::Complete));
}

#[tokio::test]
async fn a_link_is_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("secret");
    std::fs::write(&target, b"secret").unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let store = Arc::new(MemoryStore::new());
    let job = UploadJob {
        from: link,
        to: S3Url::parse(URL).unwrap(),
        size: 6,
        modified: None,
        options: Arc::default(),
    };
    let error = upload(&store, &job).await.unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    assert!(store.writes().is_empty());
}

proptest! {
    /// Every file size S3 can hold is cut into at most 10,000 parts of 5 MiB to 5 GiB that
    /// cover it exactly; a file up to the part size is one PUT.
    #[test]
    fn parts_cover_any_file_within_s3s_limits(
        size in 0u64..=MAX_PART * MAX_PARTS,
        configured in 1u64..=8 * 1024 * MIB,
    ) {
        match cut(size, configured) {
            None => prop_assert!(size <= configured.clamp(MIN_PART, MAX_PART)),
            Some(cut) => {
                prop_assert!(cut.parts <= MAX_PARTS && cut.parts >= 2);
                prop_assert!((MIN_PART..=MAX_PART).contains(&cut.part_size));
                prop_assert!(cut.part_size * (cut.parts - 1) < size);
                prop_assert!(cut.part_size * cut.parts >= size);
            }
        }
    }
}

/// How a fault answers: retryably, for good, or (a complete) done with its answer lost.
#[derive(Debug, Clone, Copy)]
enum Fails {
    Retryably,
    ForGood,
    AnswerLost,
}

/// One scripted fault: the `nth` request of a kind fails as `Fails` says.
fn fault() -> impl Strategy<Value = (Request, usize, Fails)> {
    let kinds = prop_oneof![
        Just(Request::Put),
        Just(Request::Create),
        Just(Request::Part),
        Just(Request::Complete),
    ];
    let fails = prop_oneof![
        Just(Fails::Retryably),
        Just(Fails::ForGood),
        Just(Fails::AnswerLost)
    ];
    (kinds, 1usize..4, fails)
}

/// The multipart writers: a file, a stream of unknown length, a copy streamed between
/// stores, and a copy inside the store.
#[derive(Debug, Clone, Copy)]
enum Writer {
    File,
    Stream,
    StreamedCopy,
    CopyInParts,
}

fn writer() -> impl Strategy<Value = Writer> {
    prop_oneof![
        Just(Writer::File),
        Just(Writer::Stream),
        Just(Writer::StreamedCopy),
        Just(Writer::CopyInParts)
    ]
}

/// Write `bytes` to [`URL`] the way `writer` does.
async fn write_by(writer: Writer, store: &Arc<MemoryStore>, bytes: &[u8]) -> Result<Finished> {
    let dir = tempfile::tempdir().unwrap();
    let to = S3Url::parse(URL).unwrap();
    let from = "s3://bucket/source.bin";
    match writer {
        Writer::File => upload(store, &file_of(dir.path(), bytes)).await,
        Writer::Stream => {
            let options = WriteOptions::default();
            uploader(store)
                .put_stream(pieces::Reader::stdin(bytes), &to, &options, &Silent)
                .await
        }
        Writer::StreamedCopy | Writer::CopyInParts => {
            store.put(from, bytes, Some("\"v1\""));
            let mut copier = uploader(store);
            match writer {
                Writer::StreamedCopy => store.as_two_endpoints(),
                _ => copier.copy_in_parts_over(0, 5 * MIB),
            }
            copier.copy(&copy_job(from, None), &Silent).await
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(property_cases(24)))]

    /// Whatever fails when (a request refused, one that fails and is retried, a complete
    /// done whose answer is lost), every multipart writer ends one of two ways: the key
    /// holds exactly the source's bytes (with their CRC64NVME where the writer sent it),
    /// or it holds what it held before; and no multipart upload is left open in the store.
    /// A lost answer never turns a stored object into a reported failure either.
    #[test]
    fn every_writer_stores_the_whole_source_or_nothing_and_leaves_no_upload_open(
        writer in writer(),
        size in prop_oneof![0u64..64, 5 * MIB - 2..5 * MIB + 2, 10 * MIB..11 * MIB],
        faults in proptest::collection::vec(fault(), 0..4),
        seed in any::<u8>(),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let bytes = data(seed, size);
        let store = Arc::new(MemoryStore::new());
        store.put(URL, b"before", Some("\"b\""));
        for (kind, nth, fails) in faults {
            let answer = match fails {
                Fails::Retryably => Answer::default().fail(server_error),
                Fails::ForGood => Answer::default().fail(denied),
                Fails::AnswerLost => Answer::default().break_after(0),
            };
            store.script(When::write_nth(kind, nth), answer);
        }
        let result = runtime.block_on(write_by(writer, &store, &bytes));
        let stored = store.data_of(URL).unwrap();
        let whole = stored == bytes;
        match &result {
            Ok(finished) => {
                prop_assert_eq!(finished, &Finished::Downloaded(size));
                prop_assert!(whole, "stored {} bytes, not the source", stored.len());
                if !matches!(writer, Writer::CopyInParts) {
                    prop_assert_eq!(store.checksum_of(URL), Some(kept_crc(&bytes)));
                }
            }
            // Stored whole although reported failed: only where no CRC could tell (a copy
            // in parts sends none).
            Err(_) if whole => prop_assert!(matches!(writer, Writer::CopyInParts)),
            Err(_) => prop_assert_eq!(&stored[..], b"before"),
        }
        prop_assert_eq!(store.open_uploads(), 0);
    }
}

/// A copy in parts gives its copy what the source is stored with, as a one-request copy
/// does (`mv` of a large object used to lose them for good).
#[tokio::test]
async fn a_copy_in_parts_keeps_the_sources_headers_and_metadata() {
    let from = S3Url::parse("s3://bucket/big.bin").unwrap();
    let store = Arc::new(MemoryStore::new());
    let stored_with = WriteOptions {
        content_type: Some("application/x-tar".into()),
        cache_control: Some("no-cache".into()),
        content_disposition: Some("attachment".into()),
        content_language: Some("de".into()),
        metadata: vec![("origin".into(), "render-7".into())],
        ..WriteOptions::default()
    };
    let bytes = Bytes::from(data(12, 11 * MIB));
    let mut copier = uploader(&store);
    copier
        .put_bytes(bytes.clone(), &from, &stored_with, &Silent)
        .await
        .unwrap();
    copier.copy_in_parts_over(MIB, 5 * MIB);
    let job = copy_job(&from.to_string(), None);
    copier.copy(&job, &Silent).await.unwrap();
    assert_eq!(store.data_of(URL).unwrap(), bytes);
    assert!(store.writes().contains(&Request::PartCopy));
    assert_eq!(
        store.headers_of(URL).unwrap(),
        store.headers_of(&from.to_string()).unwrap()
    );
    assert_eq!(
        store
            .headers_of(URL)
            .unwrap()
            .content_disposition
            .as_deref(),
        Some("attachment")
    );
}

/// A one-request copy is pinned to the listed version as a copy in parts is: a source
/// replaced since it was listed fails the copy, and nothing is stored.
#[tokio::test]
async fn a_copy_of_a_source_replaced_since_it_was_listed_fails() {
    let from = "s3://bucket/small.bin";
    let store = Arc::new(MemoryStore::new());
    store.put(from, &data(13, 1000), Some("\"v2\""));
    let listed = copy_job(from, Some((1000, Some(Validator::ETag("\"v1\"".into())))));
    let failed = uploader(&store).copy(&listed, &Silent).await.unwrap_err();
    assert!(matches!(failed, Error::Changed { .. }), "{failed:?}");
    assert!(store.data_of(URL).is_none());
}

#[tokio::test]
async fn a_large_copy_goes_in_part_copies_of_one_version_and_keeps_its_crc() {
    let from = "s3://bucket/big.bin";
    let bytes = data(10, 12 * MIB + 3);
    let store = Arc::new(MemoryStore::new());
    store.put(from, &bytes, Some("\"v1\""));
    let mut copier = uploader(&store);
    copier.copy_in_parts_over(MIB, 5 * MIB);
    let job = copy_job(from, None);
    let finished = copier.copy(&job, &Silent).await.unwrap();
    assert_eq!(finished, Finished::Downloaded(bytes.len() as u64));
    assert_eq!(store.data_of(URL).unwrap(), bytes);
    assert_eq!(store.checksum_of(URL), Some(kept_crc(&bytes)));
    let copies = store
        .writes()
        .iter()
        .filter(|w| **w == Request::PartCopy)
        .count();
    assert_eq!(copies, 3);
    // The source replaced since it was listed: every part is pinned to the listed version,
    // so the copy fails whole, and nothing stays.
    let store = Arc::new(MemoryStore::new());
    store.put(from, &data(11, 12 * MIB + 3), Some("\"v2\""));
    let mut copier = uploader(&store);
    copier.copy_in_parts_over(MIB, 5 * MIB);
    let listed = CopyJob {
        known: Some((bytes.len() as u64, Some(Validator::ETag("\"v1\"".into())))),
        modified: None,
        ..job
    };
    let failed = copier.copy(&listed, &Silent).await.unwrap_err();
    assert!(matches!(failed, Error::Changed { .. }), "{failed:?}");
    assert!(store.data_of(URL).is_none());
    assert_eq!(store.open_uploads(), 0);
}

/// A copy between endpoints: ranged GETs of one version feed the part uploads, and no
/// CopyObject or UploadPartCopy is sent.
#[tokio::test]
async fn a_copy_between_endpoints_streams_ranges_into_parts_of_one_version() {
    let from = "s3://bucket/big.bin";
    let bytes = data(12, 12 * MIB + 3);
    for known in [false, true] {
        let store = Arc::new(MemoryStore::new());
        store.as_two_endpoints();
        store.put(from, &bytes, Some("\"v1\""));
        let job = copy_job(
            from,
            known.then(|| (bytes.len() as u64, Some(Validator::ETag("\"v1\"".into())))),
        );
        let finished = uploader(&store).copy(&job, &Silent).await.unwrap();
        assert_eq!(finished, Finished::Downloaded(bytes.len() as u64));
        assert_eq!(store.data_of(URL).unwrap(), bytes);
        assert_eq!(store.checksum_of(URL), Some(kept_crc(&bytes)));
        let writes = store.writes();
        assert!(!writes.contains(&Request::Copy) && !writes.contains(&Request::PartCopy));
        assert_eq!(writes.iter().filter(|w| **w == Request::Part).count(), 3);
        // One GET a part: without a listed size, the first part's tells it.
        let seen = store.seen();
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(seen[1..]
            .iter()
            .all(|get| get.pinned == Some(Validator::ETag("\"v1\"".into()))));
    }
    // Small objects are one GET and one PUT; an empty one too.
    for size in [0, 1000] {
        let store = Arc::new(MemoryStore::new());
        store.as_two_endpoints();
        store.put(from, &data(13, size), Some("\"v1\""));
        let job = copy_job(from, None);
        uploader(&store).copy(&job, &Silent).await.unwrap();
        assert_eq!(store.data_of(URL).unwrap(), data(13, size));
        assert_eq!(
            (store.seen().len(), store.writes()),
            (1, vec![Request::Put])
        );
    }
}

#[tokio::test]
async fn a_copy_between_endpoints_of_a_source_replaced_meanwhile_stores_nothing() {
    let from = "s3://bucket/big.bin";
    let store = Arc::new(MemoryStore::new());
    store.as_two_endpoints();
    store.put(from, &data(14, 12 * MIB), Some("\"v2\""));
    let job = copy_job(
        from,
        Some((12 * MIB, Some(Validator::ETag("\"v1\"".into())))),
    );
    let failed = uploader(&store).copy(&job, &Silent).await.unwrap_err();
    assert!(matches!(failed, Error::Changed { .. }), "{failed:?}");
    assert!(store.data_of(URL).is_none());
    assert_eq!(store.open_uploads(), 0);
}

/// A copy of `from` to [`URL`], with what a listing knew of it.
fn copy_job(from: &str, known: Option<(u64, Option<Validator>)>) -> CopyJob {
    CopyJob {
        from: S3Url::parse(from).unwrap(),
        to: S3Url::parse(URL).unwrap(),
        known,
        modified: None,
        options: Arc::default(),
    }
}
