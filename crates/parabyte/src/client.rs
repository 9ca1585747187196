//! The public front door: a [`Client`] connects to a store and the web, and hands each
//! copy to the one driver (`driver.rs`); the calls that fetch one object's bytes, pieces
//! of one object, or a listing are here.

mod shared_uploads;
mod tree_walk;

pub use tree_walk::UploadEntry;

use std::path::Path;
use std::sync::Arc;

use futures::{Stream, StreamExt, TryStreamExt};

use crate::config::{StoreConfig, TransferConfig};
use crate::counters::Counters;
use crate::disk::sink::Target;
use crate::driver::Driver;
use crate::error::{Error, Result};
use crate::location::{ObjectUrl, S3Url};
use crate::manifest::Item;
use crate::plan::item_job;
use crate::plan::{CopyRequest, PartVerdict, RemoveRequest, SyncOptions, SyncPart, UploadOptions};
use crate::ranges::ByteRange;
use crate::report::{Reporter, Silent, Summary};
use crate::source::listing::{list, split_key_space, KeyBounds, ListSpec, Listed};
use crate::source::s3::{BucketEntry, ObjectInfo, S3Store, UnfinishedUpload};
use crate::source::web::WebSource;
use crate::source::Sources;
use crate::transfer::engine::Engine;
use crate::transfer::upload::Chunk;
use crate::validator::Validator;

/// A connection to a store with transfer settings; cheap to share between calls and
/// threads, which all draw on its one request limit.
#[derive(Debug)]
pub struct Client {
    /// The store and the web, with what every call shares.
    driver: Driver<Sources>,
    /// S3 objects are read from another store than the one written to.
    across: bool,
}

impl Client {
    /// Resolve credentials, region and endpoint; no request is sent yet.
    pub async fn connect(store: &StoreConfig, transfer: TransferConfig) -> Result<Client> {
        Client::connect_reading_from(store, None, transfer).await
    }

    /// As [`Client::connect`], but S3 objects are listed and read from the store `source`
    /// names (another endpoint, region or account: `--source-endpoint-url`) and written to
    /// the one `store` names. A copy between them streams through parabyte: ranged GETs
    /// feed the part uploads, a few parts in memory, nothing on disk.
    pub async fn connect_reading_from(
        store: &StoreConfig,
        source: Option<&StoreConfig>,
        transfer: TransferConfig,
    ) -> Result<Client> {
        transfer.validate()?;
        let counters = Arc::new(Counters::for_connections_per_object(
            transfer.connections_per_object(),
        ));
        let read_from = match source {
            Some(source) => Some(Arc::new(S3Store::connect(source, counters.clone()).await?)),
            None => None,
        };
        let sources = Arc::new(Sources {
            s3: Arc::new(S3Store::connect(store, counters.clone()).await?),
            web: WebSource::new(store, counters.clone())?,
            read_from,
        });
        Ok(Client {
            across: source.is_some(),
            driver: Driver::new(sources, transfer, counters),
        })
    }

    /// Refuses what would read one store and delete or list in the other as if they were
    /// one: `mv`, `sync` and `rm` with a source store of their own.
    fn one_store(&self, what: &str) -> Result<()> {
        match self.across {
            true => Err(Error::InvalidInput(format!(
                "{what} works within one store: give the source's endpoint, region or profile only to cp"
            ))),
            false => Ok(()),
        }
    }

    /// Copy what `request` names: an S3 object or prefix, a URL, a batch, a manifest or a
    /// local tree. Per-object failures are in the summary; an `Err` means nothing more
    /// could be done (bad bucket, bad credentials, unusable request).
    pub async fn copy(
        &self,
        request: &CopyRequest,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        self.driver.copy(request, reporter).await
    }

    /// Copy what `request` names, then delete each source that arrived whole (what `mv`
    /// does): S3 keys 1,000 a request, local files by name while still regular files. A
    /// source whose copy failed stays. Web and manifest sources are refused.
    pub async fn move_objects(
        &self,
        request: &CopyRequest,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        self.one_store("mv")?;
        self.driver.move_objects(request, reporter).await
    }

    /// Make the destination (an S3 prefix or a local directory) hold what the source (a
    /// local directory or an S3 prefix) holds: each key missing or changed there is sent
    /// (changed as `options.compare` judges), and with `options.delete` each key the source
    /// lacks is removed, but only once both sides were listed to the end. Per-object
    /// failures are in the summary.
    pub async fn sync(
        &self,
        request: &CopyRequest,
        options: &SyncOptions,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        self.one_store("sync")?;
        self.driver.sync(request, options, None, reporter).await
    }

    /// One part of a sync spread over several machines: as [`Client::sync`], but only the
    /// names below both sides within `bounds` (paths below the source and the destination,
    /// `/` between names), and with `options.delete` nothing is deleted: what the part
    /// would delete comes back as its [`PartVerdict`] (none when a listing broke off), for
    /// [`crate::deletes_of_parts`] to judge over every part and [`Client::sync_deletes`]
    /// to delete.
    pub async fn sync_part(
        &self,
        request: &CopyRequest,
        options: &SyncOptions,
        bounds: KeyBounds,
        reporter: Arc<dyn Reporter>,
    ) -> Result<(Summary, Option<PartVerdict>)> {
        self.one_store("sync")?;
        let part = SyncPart::new(bounds);
        let summary = self
            .driver
            .sync(request, options, Some(part.clone()), reporter)
            .await?;
        Ok((summary, part.verdict()))
    }

    /// Delete `names` below the destination of the sync `request` describes (keys 1,000
    /// a request, files by name while still regular files): the deletes of parts that
    /// [`crate::deletes_of_parts`] allowed. A dry run deletes nothing and previews each.
    pub async fn sync_deletes(
        &self,
        request: &CopyRequest,
        names: Vec<String>,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        self.one_store("sync")?;
        self.driver.sync_deletes(request, names, reporter).await
    }

    /// Delete the one key named (`dir/` is the key `dir/`, not the tree under it), or with
    /// `recursive` (or a wildcard pattern) every key under it the filters keep, up to 1,000
    /// a request (DeleteObjects). One named key is first looked for (a LIST of one key): a
    /// key that is not there fails, as does one with keys under it (that takes `recursive`).
    /// A dry run lists and deletes nothing. Per-key failures are in the summary.
    pub async fn remove(
        &self,
        request: &RemoveRequest,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        self.one_store("rm")?;
        self.driver.remove(request, reporter).await
    }

    /// Delete each of `keys`, of any buckets, up to 1,000 of a bucket a request
    /// (DeleteObjects). Per-key failures are in the summary.
    pub async fn delete_many(
        &self,
        keys: Vec<S3Url>,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        self.one_store("delete")?;
        self.driver.delete_many(keys, reporter).await
    }

    /// Upload each `(file, destination)` (a key, or a prefix ending in `/` to keep the
    /// file's name), many at once; each failure is in the summary, the others go on.
    pub async fn upload_many(
        &self,
        items: Vec<(std::path::PathBuf, S3Url)>,
        options: &UploadOptions,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        self.driver.upload_many(items, options, reporter).await
    }

    /// Store `data` as the object `to`: one PUT, or a multipart upload whose parts are
    /// slices of it (never copied), each with its CRC64NVME. With `no_clobber` an object
    /// already there is kept and counted as skipped. An `Err` is this object's failure.
    pub async fn put_bytes(
        &self,
        data: impl Into<bytes::Bytes>,
        to: &S3Url,
        options: &UploadOptions,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        self.driver
            .put_bytes(data.into(), to, options, reporter)
            .await
    }

    /// Store what a writer sends over `receiver` as the object `to`, as it arrives: one PUT
    /// when it ends within a part, else a multipart upload whose parts (each with its
    /// CRC64NVME) go up while the writer goes on, `ranges_per_object` in flight, so memory
    /// stays bounded. The object is stored only once [`Chunk::End`] arrives: a channel
    /// closed before it (the writer failed, or was dropped) aborts the upload, and nothing
    /// is stored. With `no_clobber` an object already there is kept and counted as skipped.
    pub async fn put_written(
        &self,
        receiver: tokio::sync::mpsc::Receiver<Chunk>,
        to: &S3Url,
        options: &UploadOptions,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        self.driver
            .put_written(receiver, to, options, reporter)
            .await
    }

    /// One object's bytes in memory, fetched as parallel ranges into a single buffer.
    pub async fn get_bytes(&self, source: impl Into<ObjectUrl>) -> Result<Vec<u8>> {
        let item = Item {
            source: source.into(),
            destination: None,
            size: None,
            etag: None,
        };
        into_memory(&self.driver.engine(Arc::new(Silent)), &item).await
    }

    /// Many objects' bytes in memory, each as [`Client::get_bytes`] fetches one, `workers`
    /// objects at a time, in the order given. An item's size (and ETag) spares its probe, as
    /// in a batch download; its destination is not used. Each result is its own object's:
    /// a failure stops none of the others.
    pub fn get_bytes_many(
        &self,
        items: Vec<Item>,
    ) -> impl Stream<Item = Result<Vec<u8>>> + Send + 'static {
        let engine = Arc::new(self.driver.engine(Arc::new(Silent)));
        futures::stream::iter(items)
            .map(move |item| {
                let engine = engine.clone();
                async move { into_memory(&engine, &item).await }
            })
            .buffered(self.driver.transfer.workers.max(1))
    }

    /// Byte ranges of one object (`start..end`, end excluded), one ranged GET each, all of
    /// the same version. A range may end past the object (it is cut at the end) but must
    /// start inside it and hold at least one byte.
    pub async fn get_ranges(
        &self,
        source: impl Into<ObjectUrl>,
        ranges: &[std::ops::Range<u64>],
    ) -> Result<Vec<Vec<u8>>> {
        let source = source.into();
        let ranges = byte_ranges(&source, ranges)?;
        self.driver
            .engine(Arc::new(Silent))
            .fetch_slices(&source, &ranges)
            .await
    }

    /// [`Client::get_ranges`] pinned to the version whose ETag is `etag` (`If-Match` on
    /// every GET): an object replaced since that ETag was seen fails with
    /// [`Error::Changed`], so bytes of two versions are never mixed.
    pub async fn get_ranges_of_version(
        &self,
        source: impl Into<ObjectUrl>,
        ranges: &[std::ops::Range<u64>],
        etag: &str,
    ) -> Result<Vec<Vec<u8>>> {
        let source = source.into();
        let ranges = byte_ranges(&source, ranges)?;
        self.driver
            .engine(Arc::new(Silent))
            .fetch_slices_pinned(&source, &ranges, Some(Validator::ETag(etag.to_owned())))
            .await
    }

    /// One piece of a large object, its bytes `range` (`start..end`, end excluded), fetched
    /// into a piece file of its own beside where `item` lands under `destination`, pinned to
    /// the item's ETag (`If-Match`): for a job that spreads one object over several hosts
    /// that share a file system. `adopt_pieces` then makes the object of its pieces. The
    /// summary counts the bytes and requests, and no object; `reporter` hears of the bytes.
    pub async fn download_piece(
        &self,
        item: &Item,
        destination: &Path,
        range: std::ops::Range<u64>,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        self.driver
            .download_piece(item, destination, range, reporter)
            .await
    }

    /// Move the pieces `download_piece` left for `item` (named by their first bytes,
    /// `starts`) into its temporary file, as if an interrupted run had written them, and
    /// remove them. A download of the item then fetches only what no piece brought, checks
    /// the whole object (the store's checksum, or its MD5) and gives it its name. Returns
    /// the bytes the pieces held.
    pub async fn adopt_pieces(
        &self,
        item: &Item,
        destination: &Path,
        starts: &[u64],
    ) -> Result<u64> {
        self.driver.adopt_pieces(item, destination, starts).await
    }

    /// What the store keeps about one object: size, ETag, time, type, storage class, stored
    /// checksum and metadata (one HEAD).
    pub async fn stat(&self, url: &S3Url) -> Result<ObjectInfo> {
        self.driver.store.s3.stat_object(url).await
    }

    /// The multipart uploads begun under `url` (a prefix, or one key and what starts with
    /// it) and neither completed nor aborted: an interrupted upload kept for its next run,
    /// or one another tool left. Their parts stay stored, and on AWS billed, until aborted.
    pub async fn unfinished_uploads(&self, url: &S3Url) -> Result<Vec<UnfinishedUpload>> {
        self.driver
            .store
            .s3
            .list_uploads(&url.bucket, &url.key)
            .await
    }

    /// Abort one unfinished upload: the store throws its parts away.
    pub async fn abort_upload(&self, upload: &UnfinishedUpload) -> Result<()> {
        use crate::source::Store as _;
        self.driver
            .store
            .s3
            .abort_upload(&upload.url, &upload.upload_id)
            .await
    }

    /// Every bucket the credentials can see, with its creation date (ListBuckets).
    pub async fn list_buckets(&self) -> Result<Vec<BucketEntry>> {
        self.driver.store.s3.list_buckets().await
    }

    /// Create the bucket `bucket` (CreateBucket), in the region requests are signed for.
    /// One that exists is [`Error::BucketExists`], which says whether it is the caller's.
    pub async fn create_bucket(&self, bucket: &str) -> Result<()> {
        self.one_store("mb")?;
        self.driver.store.s3.create_bucket(bucket).await
    }

    /// Remove the bucket `bucket` (DeleteBucket). One that holds objects is kept, as
    /// [`Error::BucketNotEmpty`]; [`Client::empty_bucket`] deletes them first.
    pub async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        self.one_store("rb")?;
        self.driver.store.s3.delete_bucket(bucket).await
    }

    /// Delete every object of `bucket`, 1,000 a request (DeleteObjects), as `rb --force`
    /// does before it removes the bucket. The whole bucket is listed first and nothing is
    /// deleted unless the listing reached its end: a listing that fails or breaks off is an
    /// `Err` and every object stays. The keys are held meanwhile (about 100 bytes each).
    /// Per-key failures are in the summary.
    pub async fn empty_bucket(&self, bucket: &str, reporter: Arc<dyn Reporter>) -> Result<Summary> {
        self.one_store("rb")?;
        let everything = S3Url {
            bucket: bucket.to_owned(),
            key: String::new(),
        };
        let lists_before = self.driver.counters.snapshot().requests.list;
        let keys: Vec<S3Url> = self
            .list_pages(&everything, true)
            .map_ok(|page| {
                let keys = page.into_iter().filter_map(|entry| match entry {
                    Listed::Object(object) => Some(S3Url {
                        bucket: bucket.to_owned(),
                        key: object.key,
                    }),
                    Listed::Prefix(_) => None,
                });
                futures::stream::iter(keys.map(Ok))
            })
            .try_flatten()
            .try_collect()
            .await?;
        let listed = self.driver.counters.snapshot().requests.list - lists_before;
        let mut summary = self.driver.delete_many(keys, reporter).await?;
        summary.requests.list += listed;
        Ok(summary)
    }

    /// Stream the entries under `url`: every key when `recursive`, else one level with
    /// "folders" as [`Listed::Prefix`].
    pub fn list(
        &self,
        url: &S3Url,
        recursive: bool,
    ) -> impl Stream<Item = Result<Listed>> + Send + use<> {
        one_at_a_time(self.list_pages(url, recursive))
    }

    /// [`Client::list`] in the pieces the listing arrives in, each in key order: one level
    /// comes a store page at a time (what `aws s3 ls` prints folders-first), every key in
    /// batches of up to 1000.
    pub fn list_pages(
        &self,
        url: &S3Url,
        recursive: bool,
    ) -> impl Stream<Item = Result<Vec<Listed>>> + Send + use<> {
        let delimiter = (!recursive).then(|| "/".to_owned());
        self.list_within(url, delimiter, KeyBounds::default())
    }

    /// Stream every key under `url` within one range of its key space (see [`KeyBounds`]):
    /// the ranges [`Client::split_key_space`] gives, listed one after another, list exactly
    /// what [`Client::list`] does.
    pub fn list_range(
        &self,
        url: &S3Url,
        bounds: KeyBounds,
    ) -> impl Stream<Item = Result<Listed>> + Send + use<> {
        one_at_a_time(self.list_within(url, None, bounds))
    }
    /// Boundaries that cut the key space under `url` into up to `parts` ranges, found with
    /// about one small request each, without listing the keys between; none when the prefix
    /// fits in one listing page. Ranges are even in key space, not in key count.
    pub async fn split_key_space(&self, url: &S3Url, parts: usize) -> Result<Vec<String>> {
        let spec = self.list_spec(url, None, KeyBounds::default());
        split_key_space(
            self.driver.store.s3.clone(),
            self.driver.counters.clone(),
            self.driver.transfer.retry.clone(),
            spec,
            parts,
        )
        .await
    }

    fn list_spec(&self, url: &S3Url, delimiter: Option<String>, bounds: KeyBounds) -> ListSpec {
        ListSpec {
            bucket: url.bucket.clone(),
            prefix: url.key.clone(),
            delimiter,
            parallelism: self.driver.transfer.list_parallelism,
            page_size: self.driver.transfer.list_page_size,
            bounds,
        }
    }

    fn list_within(
        &self,
        url: &S3Url,
        delimiter: Option<String>,
        bounds: KeyBounds,
    ) -> impl Stream<Item = Result<Vec<Listed>>> + Send + use<> {
        let spec = self.list_spec(url, delimiter, bounds);
        list(
            self.driver.store.s3.clone(),
            self.driver.counters.clone(),
            self.driver.transfer.retry.clone(),
            spec,
        )
    }
}

/// `start..end` ranges (end excluded) as the engine's inclusive ones; an empty one is
/// refused.
fn byte_ranges(source: &ObjectUrl, ranges: &[std::ops::Range<u64>]) -> Result<Vec<ByteRange>> {
    ranges
        .iter()
        .map(|range| match range.end.checked_sub(1) {
            Some(end) if range.start <= end => Ok(ByteRange {
                start: range.start,
                end,
            }),
            _ => Err(Error::InvalidInput(format!(
                "{source}: the range {}..{} holds no byte; give start < end",
                range.start, range.end
            ))),
        })
        .collect()
}

/// A listing's pages as one entry after another.
fn one_at_a_time(
    pages: impl Stream<Item = Result<Vec<Listed>>> + Send,
) -> impl Stream<Item = Result<Listed>> + Send {
    pages
        .map_ok(|page| futures::stream::iter(page.into_iter().map(Ok)))
        .try_flatten()
}

/// One item's bytes, fetched by `engine` into a buffer of their own.
async fn into_memory(engine: &Engine<Sources>, item: &Item) -> Result<Vec<u8>> {
    let buffer = Arc::new(std::sync::Mutex::new(Vec::new()));
    engine
        .download(&item_job(item, Target::Memory(buffer.clone())))
        .await?;
    let mut buffer = buffer.lock().expect("memory sink poisoned");
    Ok(std::mem::take(&mut *buffer))
}
