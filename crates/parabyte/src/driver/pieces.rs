//! One large object spread over several tasks that share a file system (Dask): each task
//! fetches a piece of it into a piece file of its own, pinned to the object's ETag, and the
//! last adopts the pieces as an interrupted download's parts.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::Driver;
use crate::disk::sink::{adopt_pieces, FilePath, Target};
use crate::error::{Error, Result};
use crate::location::ObjectUrl;
use crate::manifest::Item;
use crate::plan::{item_target, Landing};
use crate::ranges::ByteRange;
use crate::report::{Reporter, Summary};
use crate::source::Store;
use crate::transfer_scope;

impl<S: Store<Object = ObjectUrl>> Driver<S> {
    /// One piece of a large object, its bytes `range` (`start..end`, end excluded), fetched
    /// into a piece file of its own beside where `item` lands under `destination`, pinned to
    /// the item's ETag (`If-Match`): for a job that spreads one object over several hosts
    /// that share a file system. `adopt_pieces` then makes the object of its pieces. The
    /// summary counts the bytes and requests, and no object; `reporter` hears of the bytes.
    pub(crate) async fn download_piece(
        &self,
        item: &Item,
        destination: &Path,
        range: std::ops::Range<u64>,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        let started = Instant::now();
        let before = self.counters.snapshot();
        let (path, size, etag) = piece_target(item, destination)?;
        let span = match range.end.min(size).checked_sub(1) {
            Some(end) if range.start <= end => ByteRange {
                start: range.start,
                end,
            },
            _ => {
                return Err(Error::InvalidInput(format!(
                    "{}: the piece {}..{} holds no byte of its {} bytes",
                    item.source, range.start, range.end, size
                )))
            }
        };
        reporter.size_discovered(span.end + 1 - span.start);
        let engine = self.engine(reporter.clone());
        let bytes = transfer_scope::enter(
            reporter,
            engine.fetch_piece(&item.source, &path, size, &etag, span),
        )
        .await?;
        Ok(Summary::new(
            0,
            0,
            bytes,
            started.elapsed(),
            None,
            self.counters.snapshot().since(&before),
            Vec::new(),
        ))
    }

    /// Move the pieces `download_piece` left for `item` (named by their first bytes,
    /// `starts`) into its temporary file, as if an interrupted run had written them, and
    /// remove them. A download of the item then fetches only what no piece brought, checks
    /// the whole object (the store's checksum, or its MD5) and gives it its name. Returns
    /// the bytes the pieces held.
    pub(crate) async fn adopt_pieces(
        &self,
        item: &Item,
        destination: &Path,
        starts: &[u64],
    ) -> Result<u64> {
        let (path, size, etag) = piece_target(item, destination)?;
        let starts = starts.to_vec();
        tokio::task::spawn_blocking(move || adopt_pieces(&path, size, &etag, &starts))
            .await
            .map_err(|join| Error::InvalidInput(format!("adopting pieces crashed: {join}")))?
    }
}

/// Where the pieces of `item` go under `destination`, and the version they are of: an item
/// split into pieces needs its size and ETag (a listing's or a manifest's) and a file.
fn piece_target(item: &Item, destination: &Path) -> Result<(FilePath, u64, String)> {
    let (Some(size), Some(etag)) = (item.size, item.etag.clone()) else {
        return Err(Error::InvalidInput(format!(
            "{}: an object fetched in pieces needs its size and ETag; give both",
            item.source
        )));
    };
    match item_target(item, &Landing::Path(destination.to_owned()))? {
        Target::File(path) => Ok((path, size, etag)),
        _ => Err(Error::InvalidInput(format!(
            "{}: its destination is not a regular file; pieces need one",
            item.source
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::TransferConfig;
    use crate::counters::Counters;
    use crate::plan::CopyRequest;
    use crate::report::Silent;
    use crate::retry::RetryPolicy;
    use crate::source::{Answer, MemoryStore, When};

    /// Past the size that is buffered in memory instead of resumed from a temporary file.
    const SIZE: u64 = 600_000;
    const URL: &str = "s3://b/big.bin";

    fn object() -> Vec<u8> {
        (0..SIZE).map(|i| (i * 7 % 251) as u8).collect()
    }

    fn driver(store: &Arc<MemoryStore>) -> Driver<MemoryStore> {
        let transfer = TransferConfig {
            part_size: 64 * 1024,
            retry: RetryPolicy {
                max_retries: 0,
                base_delay: Duration::ZERO,
                max_delay: Duration::ZERO,
                max_elapsed: None,
            },
            ..TransferConfig::default()
        };
        Driver::new(store.clone(), transfer, Arc::new(Counters::default()))
    }

    fn item(etag: &str) -> Item {
        Item {
            source: ObjectUrl::S3(crate::location::S3Url::parse(URL).unwrap()),
            destination: None,
            size: Some(SIZE),
            etag: Some(etag.to_owned()),
        }
    }

    fn store() -> Arc<MemoryStore> {
        let store = Arc::new(MemoryStore::new());
        store.put(URL, &object(), Some("\"v1\""));
        store
    }

    #[tokio::test]
    async fn pieces_adopted_leave_only_the_gaps_to_fetch() {
        let store = store();
        let driver = driver(&store);
        let dir = tempfile::tempdir().unwrap();
        let item = item("\"v1\"");
        for range in [0..250_000, 350_000..SIZE] {
            let summary = driver
                .download_piece(&item, dir.path(), range.clone(), Arc::new(Silent))
                .await
                .unwrap();
            assert_eq!(summary.bytes, range.end - range.start);
        }
        assert!(
            store.seen().iter().all(|seen| seen.pinned.is_some()),
            "pinned"
        );
        let adopted = driver
            .adopt_pieces(&item, dir.path(), &[0, 350_000])
            .await
            .unwrap();
        assert_eq!(adopted, 500_000);
        let gets_before = store.seen().len();
        let request = CopyRequest {
            source: crate::plan::Source::Items(vec![item.clone()]),
            ..CopyRequest::parse(
                URL,
                crate::plan::Destination::Path(dir.path().to_owned()),
                false,
            )
            .unwrap()
        };
        let summary = driver.copy(&request, Arc::new(Silent)).await.unwrap();
        assert!(summary.failures.is_empty(), "{:?}", summary.failures);
        assert_eq!(std::fs::read(dir.path().join("big.bin")).unwrap(), object());
        let fetched: u64 = store.seen()[gets_before..]
            .iter()
            .map(|seen| seen.range.map_or(SIZE, |r| r.end - r.start + 1))
            .sum();
        assert_eq!(fetched, 100_000, "only the gap between the pieces");
    }

    #[tokio::test]
    async fn a_piece_of_another_version_fails_and_keeps_nothing() {
        let store = store();
        let driver = driver(&store);
        let dir = tempfile::tempdir().unwrap();
        let error = driver
            .download_piece(&item("\"v0\""), dir.path(), 0..4000, Arc::new(Silent))
            .await
            .unwrap_err();
        assert!(matches!(error, Error::Changed { .. }), "{error}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[tokio::test]
    async fn a_piece_needs_a_size_an_etag_and_a_byte() {
        let store = store();
        let driver = driver(&store);
        let dir = tempfile::tempdir().unwrap();
        let unsized_item = Item {
            size: None,
            ..item("\"v1\"")
        };
        let pieces = [
            (unsized_item, 0..10),
            (item("\"v1\""), SIZE..SIZE + 10),
            (item("\"v1\""), 5..5),
        ];
        for (item, range) in pieces {
            let error = driver
                .download_piece(&item, dir.path(), range, Arc::new(Silent))
                .await
                .unwrap_err();
            assert!(matches!(error, Error::InvalidInput(_)), "{error}");
        }
        assert!(store.seen().is_empty(), "refused before any request");
    }

    #[tokio::test]
    async fn a_broken_piece_resumes_from_the_byte_it_reached() {
        let store = store();
        store.script(When::nth(1), Answer::default().break_after(700));
        let transfer = TransferConfig {
            part_size: 1024,
            ..TransferConfig::default()
        };
        let driver = Driver::new(store.clone(), transfer, Arc::new(Counters::default()));
        let dir = tempfile::tempdir().unwrap();
        driver
            .download_piece(&item("\"v1\""), dir.path(), 0..1000, Arc::new(Silent))
            .await
            .unwrap();
        let starts: Vec<u64> = store
            .seen()
            .iter()
            .filter_map(|seen| seen.range.map(|r| r.start))
            .collect();
        assert_eq!(starts, [0, 700]);
    }

    #[tokio::test]
    async fn adopting_pieces_that_are_not_there_moves_nothing() {
        let store = store();
        let driver = driver(&store);
        let dir = tempfile::tempdir().unwrap();
        let moved = driver
            .adopt_pieces(&item("\"v1\""), dir.path(), &[0, 350_000])
            .await
            .unwrap();
        assert_eq!(moved, 0);
        assert!(store.seen().is_empty());
    }
}
