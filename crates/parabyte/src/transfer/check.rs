//! How one attempt checks its object's content. The store's checksum comes with the first
//! response when that covers the object, or else from a HEAD sent alongside the other
//! parts; until the HEAD answers, each range is CRC'd by every algorithm a store may use,
//! and cut where upload parts may end, so no byte is waited for or read again. The check
//! keeps all its state: CRC pieces, and the MD5 computed in order behind the writes,
//! reading back through the sink, for objects the store keeps no CRC for.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};

use crate::checksum::{check_crc, check_md5, fits, Check, Crc, OrderedMd5, Piece, StoreChecksum};
use crate::disk::sink::Sink;
use crate::error::Result;
use crate::ranges::Coverage;
use crate::source::{Described, Fetched};

/// Until the store's checksum is known, pieces end at every multiple of this: where the
/// parts of a multipart upload end (they are whole MiBs for every common uploader), so a
/// composite checksum can be rebuilt from them.
pub(super) const UNKNOWN_PART_GRID: u64 = 1 << 20;

/// Bytes read back per step to CRC what an earlier run wrote.
const READ_BACK: usize = 256 << 10;

#[derive(Debug)]
pub(super) struct ContentCheck {
    enabled: bool,
    /// A HEAD will say what the store keeps (the object takes more than one GET).
    described: bool,
    /// Where upload parts may end until their size is known: [`UNKNOWN_PART_GRID`].
    unknown_part_grid: u64,
    plan: OnceLock<Expectation>,
    /// The MD5 the first response's ETag stands for: the fallback when the store has no CRC.
    first_md5: OnceLock<Option<[u8; 16]>>,
    /// For a composite checksum: the size of the upload's parts (all but the last).
    part_size: OnceLock<u64>,
    pieces: Mutex<Vec<Piece>>,
    md5: Arc<OrderedMd5>,
    /// The sink hands the MD5 each write in order itself (a stream, which cannot be read
    /// back).
    fed_by_sink: AtomicBool,
}

#[derive(Debug, Clone, Copy)]
enum Expectation {
    Crc(StoreChecksum),
    Md5([u8; 16]),
    SizeOnly,
}

impl ContentCheck {
    /// `enabled`: check content where the store gives the means; off, sizes alone count.
    /// `described`: a HEAD will tell the store's checksum ([`ContentCheck::described`]).
    pub(super) fn new(enabled: bool, described: bool, unknown_part_grid: u64) -> ContentCheck {
        ContentCheck {
            enabled,
            described: enabled && described,
            unknown_part_grid,
            plan: OnceLock::new(),
            first_md5: OnceLock::new(),
            part_size: OnceLock::new(),
            pieces: Mutex::default(),
            md5: Arc::default(),
            fed_by_sink: AtomicBool::new(false),
        }
    }

    /// Look at a response before `sink` is written: a whole-object checksum decides at
    /// once; otherwise, with no HEAD coming, the first response decides.
    pub(super) fn observe(&self, fetched: &Fetched, sink: &Sink) {
        if !self.enabled {
            self.plan.get_or_init(|| Expectation::SizeOnly);
            return;
        }
        if let Some(checksum) = fetched.checksum {
            // A CRC costs next to nothing per byte: it wins over everything else.
            self.plan.get_or_init(|| Expectation::Crc(checksum));
            return;
        }
        let md5 = *self.first_md5.get_or_init(|| fetched.content_md5);
        if !self.described {
            self.decide_without_crc(md5, sink);
        }
    }

    /// What the HEAD said (`None` when it failed: then the first response's ETag decides).
    pub(super) fn described(&self, described: Option<&Described>, sink: &Sink) {
        match described.and_then(|described| described.checksum) {
            Some(checksum) => {
                self.plan.get_or_init(|| Expectation::Crc(checksum));
            }
            None => {
                let md5 = match described {
                    Some(described) => described.content_md5,
                    None => self.first_md5.get().copied().flatten(),
                };
                self.decide_without_crc(md5, sink);
            }
        }
    }

    /// The algorithm of the store's checksum, once one decided the check.
    pub(super) fn crc(&self) -> Option<Crc> {
        match self.plan.get() {
            Some(Expectation::Crc(checksum)) => Some(checksum.algorithm()),
            _ => None,
        }
    }

    /// The parts the store's checksum is (or may be) made of: see [`StoreChecksum::parts`].
    fn checksum_parts(&self) -> Option<u32> {
        match self.plan.get() {
            Some(Expectation::Crc(checksum)) => checksum.parts(),
            _ => None,
        }
    }

    /// Where a composite checksum's upload parts end (from a HEAD of part 1), if parts of
    /// that size make the declared count over `total` bytes. Any other size is a lie about
    /// the layout: it is not taken, so no piece is ever cut by it (a claim of one byte would
    /// cut a piece per byte), and the check then fails the object, naming the layout.
    pub(super) fn parts_of(&self, part_size: u64, total: u64) {
        if let Some(parts) = self.checksum_parts() {
            if fits(part_size, parts, total) {
                let _ = self.part_size.set(part_size);
            }
        }
    }

    /// The store's checksum is (or may be) composite, of more than one part, and where its
    /// parts end is not known yet.
    pub(super) fn needs_part_size(&self) -> bool {
        self.checksum_parts().is_some_and(|parts| parts > 1) && self.part_size.get().is_none()
    }

    fn decide_without_crc(&self, md5: Option<[u8; 16]>, sink: &Sink) {
        self.plan.get_or_init(|| match md5 {
            Some(md5) => {
                for (start, end) in sink.restored().stretches() {
                    self.md5.written(start, end - start);
                }
                if sink.hash_in_write_order(&self.md5) {
                    self.fed_by_sink.store(true, Relaxed);
                }
                Expectation::Md5(md5)
            }
            None => Expectation::SizeOnly,
        });
    }

    /// The CRCs a response's bytes are run through now: the store's algorithm, every one
    /// while it is not known yet, none when no CRC will be checked.
    fn algorithms(&self) -> &'static [Crc] {
        match self.plan.get() {
            Some(Expectation::Crc(checksum)) => match checksum.algorithm() {
                Crc::Crc64Nvme => &[Crc::Crc64Nvme],
                Crc::Crc32c => &[Crc::Crc32c],
                Crc::Crc32 => &[Crc::Crc32],
            },
            Some(Expectation::Md5(_) | Expectation::SizeOnly) => &[],
            None if self.described => &Crc::ALL,
            None => &[],
        }
    }

    /// Where pieces must end: at every upload part's end when the checksum is composite or
    /// may be.
    fn grid(&self) -> Option<u64> {
        match self.plan.get() {
            None if self.described => Some(self.unknown_part_grid),
            Some(Expectation::Crc(checksum)) if checksum.parts().is_some() => Some(
                self.part_size
                    .get()
                    .copied()
                    .unwrap_or(self.unknown_part_grid),
            ),
            _ => None,
        }
    }

    /// CRCs for the bytes of one response, from `start` on.
    pub(super) fn stream(&self, start: u64) -> CrcStream<'_> {
        CrcStream {
            check: self,
            start,
            length: 0,
            digests: Vec::new(),
        }
    }

    /// `data` was written at `start`: the MD5 hashes whatever became contiguous, straight
    /// from `data` when it is next in line, else by reading back. Until the store's answer
    /// is in, only where bytes were written is noted, for an MD5 it may come to.
    pub(super) async fn written(&self, sink: &Sink, start: u64, data: &[u8]) -> Result<()> {
        match self.plan.get() {
            None if self.described => {
                self.md5.written(start, data.len() as u64);
                return Ok(());
            }
            Some(Expectation::Md5(_)) if !self.fed_by_sink.load(Relaxed) => {}
            _ => return Ok(()),
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

    /// The CRC pieces did not break where the parts do (parts of a size the grid did not
    /// know, or resumed bytes): read the bytes back, cut by parts, and check them again.
    async fn check_read_back(
        &self,
        sink: &Sink,
        expected: StoreChecksum,
        part_size: Option<u64>,
        total: u64,
    ) -> Result<Check> {
        let algorithm = expected.algorithm();
        let mut whole = Coverage::default();
        whole.add(0, total);
        let read = sink
            .read_back(move |read| crc_of(&whole, algorithm, part_size, read))
            .await;
        Ok(match read {
            // Discarded bytes: their count was all there was to check.
            None => Check::Unchecked,
            Some(Ok(mut pieces)) => match check_crc(expected, part_size, &mut pieces, total) {
                Check::Untiled => Check::Uncheckable(
                    "the bytes read back do not break where the checksum's parts do".into(),
                ),
                verdict => verdict,
            },
            Some(Err(error)) => Check::Uncheckable(format!(
                "checking by parts needs the bytes read back, and they cannot be ({error})"
            )),
        })
    }

    /// The verdict on the `total` bytes written.
    pub(super) async fn finish(&self, sink: &Sink, total: u64) -> Result<Check> {
        Ok(match self.plan.get() {
            None | Some(Expectation::SizeOnly) => Check::Unchecked,
            Some(Expectation::Crc(expected)) => {
                let restored = sink.restored();
                let mut pieces = std::mem::take(&mut *self.pieces.lock().expect("pieces poisoned"));
                if restored.bytes() > 0 {
                    // What an earlier run wrote was never CRC'd in this one: read it back.
                    let (algorithm, grid) = (expected.algorithm(), self.grid());
                    match sink
                        .read_back(move |read| crc_of(&restored, algorithm, grid, read))
                        .await
                    {
                        Some(earlier) => pieces.extend(earlier?),
                        None => return Ok(Check::Unchecked),
                    }
                }
                // A composite of one part is that part's CRC, of the whole object.
                let part_size = match expected.parts() {
                    Some(1) => Some(total),
                    _ => self.part_size.get().copied(),
                };
                match check_crc(*expected, part_size, &mut pieces, total) {
                    Check::Untiled => {
                        self.check_read_back(sink, *expected, part_size, total)
                            .await?
                    }
                    verdict => verdict,
                }
            }
            // A stream's bytes that went out before the store said it keeps no CRC were not
            // hashed, and cannot be read back: only their count was checked.
            Some(Expectation::Md5(_))
                if self.fed_by_sink.load(Relaxed) && !self.md5.hashed_through(total) =>
            {
                Check::Unchecked
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

/// The CRC pieces of the stretches an earlier run wrote, read back, cut at `grid`.
fn crc_of(
    stretches: &Coverage,
    algorithm: Crc,
    grid: Option<u64>,
    read: &dyn Fn(u64, &mut [u8]) -> std::io::Result<()>,
) -> std::io::Result<Vec<Piece>> {
    let mut pieces = Vec::new();
    let mut buffer = vec![0u8; READ_BACK];
    for (start, end) in stretches.stretches() {
        let mut at = start;
        while at < end {
            let piece_end = grid.map_or(end, |grid| end.min((at / grid + 1) * grid));
            let mut digest = algorithm.digest();
            let piece_start = at;
            while at < piece_end {
                let step = READ_BACK.min((piece_end - at) as usize);
                read(at, &mut buffer[..step])?;
                digest.update(&buffer[..step]);
                at += step as u64;
            }
            pieces.push(Piece::new(
                piece_start,
                at - piece_start,
                [(algorithm, digest.finalize())],
            ));
        }
    }
    Ok(pieces)
}

/// The CRCs of one response's bytes as they stream: a piece ends where an upload part may
/// end, and where the store's answer narrows the algorithms down.
pub(super) struct CrcStream<'a> {
    check: &'a ContentCheck,
    start: u64,
    length: u64,
    digests: Vec<(Crc, crc_fast::Digest)>,
}

impl CrcStream<'_> {
    pub(super) fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let algorithms = self.check.algorithms();
            if algorithms.is_empty() {
                return;
            }
            let current = self.digests.iter().map(|(crc, _)| *crc);
            if self.digests.is_empty() || !current.eq(algorithms.iter().copied()) {
                self.flush();
                self.digests = algorithms.iter().map(|&crc| (crc, crc.digest())).collect();
            }
            let at = self.start + self.length;
            let room = self
                .check
                .grid()
                .map_or(u64::MAX, |grid| (at / grid + 1) * grid - at);
            let take = data.len().min(usize::try_from(room).unwrap_or(usize::MAX));
            for (_, digest) in &mut self.digests {
                digest.update(&data[..take]);
            }
            self.length += take as u64;
            data = &data[take..];
            if take as u64 == room {
                self.flush();
            }
        }
    }

    /// Hand the piece so far to the check and start the next one where it ended.
    fn flush(&mut self) {
        if self.length > 0 && !self.digests.is_empty() {
            let crcs = self
                .digests
                .drain(..)
                .map(|(crc, digest)| (crc, digest.finalize()));
            let piece = Piece::new(self.start, self.length, crcs);
            self.check
                .pieces
                .lock()
                .expect("pieces poisoned")
                .push(piece);
        }
        self.digests.clear();
        self.start += self.length;
        self.length = 0;
    }

    /// The response ended (or broke off): its last piece counts as far as it was written.
    pub(super) fn finish(mut self) {
        self.flush();
    }
}
