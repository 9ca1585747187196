//! `mv` through the in-memory store: a source is deleted only when its copy was compared
//! equal to it, whatever the store answers, and never when it is its own destination.

use md5::{Digest as _, Md5};
use proptest::prelude::*;

use super::*;
use crate::checksum::{crc64nvme, Crc, FullChecksum, StoreChecksum};
use crate::source::memory::Request;

/// Each source keeps either the MD5 its ETag is, or a CRC64NVME and an ETag that is no MD5.
fn put_source(store: &MemoryStore, key: &str, data: &[u8], with_crc: bool) {
    let url = format!("s3://b/src/{key}");
    if with_crc {
        store.put(&url, data, Some("\"not-an-md5-1\""));
        let checksum = StoreChecksum::Full(FullChecksum {
            algorithm: Crc::Crc64Nvme,
            value: crc64nvme(data),
        });
        store.keep_checksum(&url, checksum, data.len().max(1) as u64);
    } else {
        let etag = format!("\"{}\"", hex::encode(Md5::digest(data)));
        store.put(&url, data, Some(&etag));
    }
}

async fn move_tree(store: &Arc<MemoryStore>) -> Summary {
    let driver = Driver::new(store.clone(), transfer(), Arc::new(Counters::default()));
    let to = Destination::Store(S3Url::parse("s3://b/dst/").unwrap());
    let request = CopyRequest::parse("s3://b/src/", to, true).unwrap();
    driver
        .move_objects(&request, Arc::new(Recorded::default()))
        .await
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(property_cases(32)))]

    /// Whatever a store's copies hold, a source goes only when its copy holds its bytes
    /// and that was compared; an honest copy always moves.
    #[test]
    fn a_move_deletes_exactly_the_sources_whose_copies_were_compared_equal(
        objects in prop::collection::btree_map("[a-d]", (0usize..64, any::<bool>(), any::<bool>()), 1..5),
    ) {
        let runtime = two_thread_runtime();
        let store = Arc::new(MemoryStore::new());
        for (key, (size, with_crc, lies)) in &objects {
            put_source(&store, key, &content(key, *size), *with_crc);
            if *lies {
                let url = format!("s3://b/dst/{key}");
                let other = content("other", *size + 1);
                store.script(When::write(Request::Copy).key(&url), Answer::default().replace(&other, None));
            }
        }
        let summary = runtime.block_on(move_tree(&store));
        for (key, (size, _, lies)) in &objects {
            let source = store.data_of(&format!("s3://b/src/{key}"));
            prop_assert_eq!(source.is_none(), !lies, "{}: {:?}", key, summary.failures);
            if *lies {
                prop_assert_eq!(source.unwrap(), &content(key, *size)[..]);
            }
        }
        let lying = objects.values().filter(|(_, _, lies)| *lies).count() as u64;
        prop_assert_eq!(summary.failed, lying, "{:?}", summary.failures);
    }
}

#[tokio::test]
async fn a_copy_nothing_can_compare_keeps_its_source_and_says_why() {
    let store = Arc::new(MemoryStore::new());
    // An ETag that is no MD5 and no stored checksum: the copy cannot be compared.
    store.put("s3://b/src/a", b"alpha", Some("\"opaque-2\""));
    let summary = move_tree(&store).await;
    assert!(store.data_of("s3://b/src/a").is_some());
    assert_eq!(
        store.data_of("s3://b/dst/a").as_deref(),
        Some(&b"alpha"[..])
    );
    assert_eq!(summary.failed, 1);
    let said = summary.failures[0].error.to_string();
    assert!(said.contains("the source was kept"), "{said}");
}

#[tokio::test]
async fn a_move_onto_itself_is_refused_before_any_request() {
    let store = store_with(&["d/k"]);
    let driver = Driver::new(store.clone(), transfer(), Arc::new(Counters::default()));
    for (from, to, recursive) in [
        ("s3://b/d/k", "s3://b/d/k", false),
        ("s3://b/d/k", "s3://b/d/", false),
        ("s3://b/d/", "s3://b/d", true),
    ] {
        let destination = Destination::Store(S3Url::parse(to).unwrap());
        let request = CopyRequest::parse(from, destination, recursive).unwrap();
        let refused = driver
            .move_objects(&request, Arc::new(Recorded::default()))
            .await;
        assert!(
            matches!(&refused, Err(Error::InvalidInput(message)) if message.contains("onto itself")),
            "{from} {to}: {refused:?}"
        );
    }
    assert!(store.seen().is_empty() && store.writes().is_empty());
    assert!(store.data_of("s3://b/d/k").is_some());
}

/// Swaps the source's folder `sub` for a link to `outside` once its file has arrived: the
/// moment between a move's copy and its delete.
struct SwapsFolder {
    source: PathBuf,
    outside: PathBuf,
}

impl Reporter for SwapsFolder {
    fn object_reported(&self, report: &ObjectReport<'_>) {
        let folder = self.source.join("sub");
        let real_folder = folder.symlink_metadata().is_ok_and(|m| m.is_dir());
        if report.source.ends_with("sub/f") && real_folder {
            std::fs::rename(&folder, self.source.join("sub-moved")).unwrap();
            std::os::unix::fs::symlink(&self.outside, &folder).unwrap();
        }
    }
}

#[tokio::test]
async fn a_local_move_never_deletes_through_a_link_planted_in_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let (source, outside) = (dir.path().join("src"), dir.path().join("outside"));
    std::fs::create_dir_all(source.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(source.join("sub/f"), b"moved").unwrap();
    std::fs::write(outside.join("f"), b"must stay").unwrap();
    let store = Arc::new(MemoryStore::new());
    let driver = Driver::new(store, transfer(), Arc::new(Counters::default()));
    let request = CopyRequest::parse(
        source.to_str().unwrap(),
        Destination::Path(dir.path().join("dst")),
        true,
    )
    .unwrap();
    let reporter = Arc::new(SwapsFolder {
        source: source.clone(),
        outside: outside.clone(),
    });
    let summary = driver.move_objects(&request, reporter).await.unwrap();
    assert_eq!(std::fs::read(outside.join("f")).unwrap(), b"must stay");
    assert_eq!(
        std::fs::read(dir.path().join("dst/sub/f")).unwrap(),
        b"moved"
    );
    assert_eq!(summary.failed, 1, "{:?}", summary.failures);
    let said = summary.failures[0].error.to_string();
    assert!(said.contains("symbolic link"), "{said}");
}
