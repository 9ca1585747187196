//! How one attempt checks its object's content. The first response decides (by what the
//! store sent), before any byte is written; every range is then streamed the same way. The
//! check keeps all its state: CRC pieces, and the MD5 computed in order behind the writes,
//! reading back through the sink.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};

use crate::checksum::{check_crc, check_md5, Check, Crc, FullChecksum, OrderedMd5, Piece};
use crate::disk::sink::Sink;
use crate::error::Result;
use crate::source::Fetched;

#[derive(Debug)]
pub(super) struct ContentCheck {
    enabled: bool,
    plan: OnceLock<Expectation>,
    pieces: Mutex<Vec<Piece>>,
    md5: Arc<OrderedMd5>,
    /// The sink hands the MD5 each write in order itself (a stream, which cannot be read
    /// back).
    fed_by_sink: AtomicBool,
}

#[derive(Debug, Clone, Copy)]
enum Expectation {
    Crc(FullChecksum),
    Md5([u8; 16]),
    SizeOnly,
}

impl ContentCheck {
    /// `enabled`: check content where the store gives the means; off, sizes alone count.
    pub(super) fn new(enabled: bool) -> ContentCheck {
        ContentCheck {
            enabled,
            plan: OnceLock::new(),
            pieces: Mutex::default(),
            md5: Arc::default(),
            fed_by_sink: AtomicBool::new(false),
        }
    }

    /// Decide from the first response, before `sink` is written. What an earlier run wrote
    /// is read back by the MD5 rather than waited for.
    pub(super) fn observe(&self, fetched: &Fetched, sink: &Sink) {
        self.plan
            .get_or_init(|| match (fetched.checksum, fetched.content_md5) {
                _ if !self.enabled => Expectation::SizeOnly,
                // A CRC costs next to nothing per byte; MD5 is the fallback.
                (Some(checksum), _) => Expectation::Crc(checksum),
                (None, Some(md5)) => {
                    for (start, end) in sink.restored().stretches() {
                        self.md5.written(start, end - start);
                    }
                    if sink.hash_in_write_order(&self.md5) {
                        self.fed_by_sink.store(true, Relaxed);
                    }
                    Expectation::Md5(md5)
                }
                (None, None) => Expectation::SizeOnly,
            });
    }

    /// The CRC each response's bytes are run through while they stream, if any.
    pub(super) fn crc(&self) -> Option<Crc> {
        match self.plan.get() {
            Some(Expectation::Crc(checksum)) => Some(checksum.algorithm),
            _ => None,
        }
    }

    pub(super) fn add_piece(&self, piece: Piece) {
        self.pieces.lock().expect("pieces poisoned").push(piece);
    }

    /// `data` was written at `start`: the MD5 hashes whatever became contiguous, straight
    /// from `data` when it is next in line, else by reading back.
    pub(super) async fn written(&self, sink: &Sink, start: u64, data: &[u8]) -> Result<()> {
        if !matches!(self.plan.get(), Some(Expectation::Md5(_))) || self.fed_by_sink.load(Relaxed) {
            return Ok(());
        }
        self.md5.written(start, data.len() as u64);
        self.md5.hash_in_order(start, data);
        // A write behind a gap extends nothing contiguous: no reason to read back.
        if self.md5.caught_up() {
            return Ok(());
        }
        let md5 = self.md5.clone();
        sink.read_back(move |read| md5.catch_up(read))
            .await
            .unwrap_or(Ok(()))
    }

    /// The verdict on the `total` bytes written.
    pub(super) async fn finish(&self, sink: &Sink, total: u64) -> Result<Check> {
        Ok(match self.plan.get() {
            None | Some(Expectation::SizeOnly) => Check::Unchecked,
            Some(Expectation::Crc(expected)) => {
                let mut pieces = self.pieces.lock().expect("pieces poisoned");
                check_crc(*expected, &mut pieces, total)
            }
            Some(Expectation::Md5(expected)) => {
                let md5 = self.md5.clone();
                match sink.read_back(move |read| md5.finish(total, read)).await {
                    // The bytes were not kept: only their count was checked.
                    None => Check::Unchecked,
                    Some(digest) => check_md5(*expected, digest?),
                }
            }
        })
    }
}
