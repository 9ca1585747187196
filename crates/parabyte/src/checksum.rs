//! Content checks. Sizes are always checked by the engine. On top of that, an object is
//! checked by the CRC the store keeps for it (sent with `x-amz-checksum-mode: ENABLED` by a
//! GET of the whole object or a HEAD): each response's bytes are CRC'd while they stream,
//! and the pieces are combined into the whole object's CRC, or for a COMPOSITE checksum of a
//! multipart upload into each upload part's CRC and then the CRC of those. Objects with no
//! CRC are checked by MD5 when their ETag is the MD5 of their content (a single-part upload,
//! not encrypted with KMS or a customer key). MD5 cannot be combined, so it is computed in
//! order, right behind the first gap in what has been written: see [`OrderedMd5`].

use std::io;
use std::sync::Mutex;

use base64::Engine as _;
use crc_fast::CrcAlgorithm;
use md5::{Digest as _, Md5};
use serde::Serialize;

use crate::ranges::Coverage;

/// A whole-object checksum as S3 sends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FullChecksum {
    pub algorithm: Crc,
    pub value: u64,
}

/// The CRCs S3 keeps for whole objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Crc {
    Crc32,
    Crc32c,
    Crc64Nvme,
}

impl Crc {
    /// The response header that carries it, as S3 names it.
    pub(crate) const HEADERS: [(&'static str, Crc); 3] = [
        ("x-amz-checksum-crc64nvme", Crc::Crc64Nvme),
        ("x-amz-checksum-crc32c", Crc::Crc32c),
        ("x-amz-checksum-crc32", Crc::Crc32),
    ];

    pub(crate) const ALL: [Crc; 3] = [Crc::Crc64Nvme, Crc::Crc32c, Crc::Crc32];

    fn algorithm(self) -> CrcAlgorithm {
        match self {
            Crc::Crc32 => CrcAlgorithm::Crc32IsoHdlc,
            Crc::Crc32c => CrcAlgorithm::Crc32Iscsi,
            Crc::Crc64Nvme => CrcAlgorithm::Crc64Nvme,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Crc::Crc32 => "CRC32",
            Crc::Crc32c => "CRC32C",
            Crc::Crc64Nvme => "CRC64NVME",
        }
    }

    pub(crate) fn digest(self) -> crc_fast::Digest {
        crc_fast::Digest::new(self.algorithm())
    }

    /// Bytes of its value, as S3 encodes it (big-endian).
    fn width(self) -> usize {
        if self == Crc::Crc64Nvme {
            8
        } else {
            4
        }
    }

    fn index(self) -> usize {
        match self {
            Crc::Crc64Nvme => 0,
            Crc::Crc32c => 1,
            Crc::Crc32 => 2,
        }
    }
}

/// Parts a multipart upload may have (S3's limit): a composite checksum that claims more is
/// no checksum, and nothing is ever sized by the claim.
pub(crate) const MAX_UPLOAD_PARTS: u32 = 10_000;

/// The checksum a store keeps for an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreChecksum {
    /// The CRC of the whole object (`x-amz-checksum-type: FULL_OBJECT`).
    Full(FullChecksum),
    /// A multipart upload's `VALUE-PARTS`: the CRC of its parts' CRCs, concatenated.
    Composite { crc: FullChecksum, parts: u32 },
    /// A value with neither a part count nor a checksum type, on an object whose ETag says
    /// it was uploaded in `parts` parts: whole-object or COMPOSITE, the store does not say
    /// (moto's HEAD). The bytes pass if they match it read either way; the two readings
    /// together let through a wrong object no more than two CRCs in a row would.
    Unlabeled { crc: FullChecksum, parts: u32 },
    /// The store declares a checksum of this algorithm, but its value is none (not the
    /// base64 of the algorithm's width, a part count out of range, a COMPOSITE type with no
    /// part count). Declared is declared: the object cannot pass on its size alone.
    Malformed(Crc),
}

impl StoreChecksum {
    pub(crate) fn algorithm(self) -> Crc {
        match self {
            StoreChecksum::Full(crc)
            | StoreChecksum::Composite { crc, .. }
            | StoreChecksum::Unlabeled { crc, .. } => crc.algorithm,
            StoreChecksum::Malformed(algorithm) => algorithm,
        }
    }

    /// The upload parts the checksum is (or may be) made of, when it is not one whole-object
    /// CRC for sure.
    pub(crate) fn parts(self) -> Option<u32> {
        match self {
            StoreChecksum::Composite { parts, .. } | StoreChecksum::Unlabeled { parts, .. } => {
                Some(parts)
            }
            StoreChecksum::Full(_) | StoreChecksum::Malformed(_) => None,
        }
    }

    /// Parse a header value: base64 of the big-endian CRC, with `-N` when composite. A
    /// value that is none is [`StoreChecksum::Malformed`], never `None`: the store did
    /// declare a checksum.
    pub(crate) fn parse(algorithm: Crc, header: &str) -> StoreChecksum {
        let parsed = match header.trim().split_once('-') {
            None => FullChecksum::parse(algorithm, header).map(StoreChecksum::Full),
            Some((value, parts)) => FullChecksum::parse(algorithm, value).and_then(|crc| {
                let parts = parts.parse().ok()?;
                (1..=MAX_UPLOAD_PARTS)
                    .contains(&parts)
                    .then_some(StoreChecksum::Composite { crc, parts })
            }),
        };
        parsed.unwrap_or(StoreChecksum::Malformed(algorithm))
    }
}

impl FullChecksum {
    /// Parse a header value: base64 of the big-endian CRC. A composite checksum of a
    /// multipart upload (`...-N`) is not a whole-object value and gives `None`.
    pub(crate) fn parse(algorithm: Crc, header: &str) -> Option<FullChecksum> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(header.trim())
            .ok()?;
        if bytes.len() != algorithm.width() {
            return None;
        }
        let value = bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        Some(FullChecksum { algorithm, value })
    }

    pub(crate) fn render(self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.be_bytes())
    }

    fn be_bytes(self) -> Vec<u8> {
        self.value.to_be_bytes()[8 - self.algorithm.width()..].to_vec()
    }
}

/// The CRC64NVME of `data`: what an upload sends with each part and whole object.
pub(crate) fn crc64nvme(data: &[u8]) -> u64 {
    crc_fast::checksum(CrcAlgorithm::Crc64Nvme, data)
}

/// The CRC64NVME of two stretches one after the other, from theirs and the second's length.
pub(crate) fn crc64nvme_after(first: u64, second: u64, second_length: u64) -> u64 {
    crc_fast::checksum_combine(CrcAlgorithm::Crc64Nvme, first, second, second_length)
}

/// The CRCs of one stretch of an object, as one response delivered it: of every algorithm
/// still in question while it streamed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Piece {
    pub start: u64,
    pub length: u64,
    crcs: [Option<u64>; 3],
}

impl Piece {
    pub(crate) fn new(
        start: u64,
        length: u64,
        crcs: impl IntoIterator<Item = (Crc, u64)>,
    ) -> Piece {
        let mut piece = Piece {
            start,
            length,
            crcs: [None; 3],
        };
        for (crc, value) in crcs {
            piece.crcs[crc.index()] = Some(value);
        }
        piece
    }

    fn crc(&self, algorithm: Crc) -> Option<u64> {
        self.crcs[algorithm.index()]
    }
}

/// The CRC of `start..end` combined from `pieces` (sorted by start), read from `*next` on
/// and left past the last piece used, or `None` when they do not tile it exactly or lack
/// that algorithm. Walking a cursor keeps a whole check linear in the pieces and parts.
fn combine(
    pieces: &[Piece],
    next: &mut usize,
    algorithm: Crc,
    start: u64,
    end: u64,
) -> Option<u64> {
    let mut covered = start;
    // The CRC of nothing is zero for all three.
    let mut crc = 0;
    while let Some(piece) = pieces.get(*next).filter(|piece| piece.start < end) {
        if piece.start != covered || piece.start + piece.length > end {
            return None;
        }
        let value = piece.crc(algorithm)?;
        crc = if covered == start {
            value
        } else {
            crc_fast::checksum_combine(algorithm.algorithm(), crc, value, piece.length)
        };
        covered += piece.length;
        *next += 1;
    }
    (covered == end).then_some(crc)
}

/// Combine the pieces' CRCs as the store's checksum is made and compare. Pieces must tile
/// `0..total` exactly, and for a composite checksum break at every upload part's end (parts
/// of `part_size`, the last one shorter): pieces that do not is [`Check::Untiled`], for the
/// caller to read the bytes back by parts. A checksum that cannot be laid over the object
/// at all fails it as [`Check::Uncheckable`], never passing on the size alone.
pub(crate) fn check_crc(
    expected: StoreChecksum,
    part_size: Option<u64>,
    pieces: &mut [Piece],
    total: u64,
) -> Check {
    pieces.sort_by_key(|piece| piece.start);
    let algorithm = expected.algorithm();
    let mut next = 0;
    let (got, want) = match expected {
        StoreChecksum::Malformed(_) => {
            return Check::Uncheckable(format!(
                "the store declares a {} checksum whose value is none (not the base64 of {} bytes, or a part count not from 1 to {MAX_UPLOAD_PARTS})",
                algorithm.name(),
                algorithm.width()
            ))
        }
        StoreChecksum::Full(want) => match combine(pieces, &mut next, algorithm, 0, total) {
            Some(value) => (FullChecksum { algorithm, value }, want),
            None => return Check::Untiled,
        },
        StoreChecksum::Composite { crc: want, parts } => {
            let Some(part_size) = part_size.filter(|&size| fits(size, parts, total)) else {
                return Check::Uncheckable(format!(
                    "the store's COMPOSITE {} checksum is of {parts} upload parts, and no part size it gave lays {parts} parts over the object's {total} bytes",
                    algorithm.name()
                ));
            };
            match composite(pieces, algorithm, part_size, total) {
                Some(value) => (FullChecksum { algorithm, value }, want),
                None => return Check::Untiled,
            }
        }
        StoreChecksum::Unlabeled { crc: want, parts } => {
            return check_unlabeled(want, parts, part_size, pieces, total)
        }
    };
    if got == want {
        Check::Passed(Method::Crc)
    } else {
        Check::Failed(format!(
            "{} of the received bytes is {}, the store says {}",
            algorithm.name(),
            got.render(),
            want.render()
        ))
    }
}

/// The COMPOSITE CRC of `pieces` (sorted, tiling `0..total`) by parts of `part_size`, or
/// `None` where they do not break at the parts' ends.
fn composite(pieces: &[Piece], algorithm: Crc, part_size: u64, total: u64) -> Option<u64> {
    let mut next = 0;
    let mut concatenated =
        Vec::with_capacity(total.div_ceil(part_size) as usize * algorithm.width());
    for start in (0..total).step_by(part_size as usize) {
        let end = (start + part_size).min(total);
        let value = combine(pieces, &mut next, algorithm, start, end)?;
        concatenated.extend(FullChecksum { algorithm, value }.be_bytes());
    }
    Some(crc_fast::checksum(algorithm.algorithm(), &concatenated))
}

/// A checksum the store did not label: the bytes pass when it is their whole-object CRC, or
/// their COMPOSITE CRC by the parts `part_size` lays over them. Neither fails the object;
/// with no layout to try the second reading, the store's silence is the reason it fails.
fn check_unlabeled(
    want: FullChecksum,
    parts: u32,
    part_size: Option<u64>,
    pieces: &[Piece],
    total: u64,
) -> Check {
    let algorithm = want.algorithm;
    let name = algorithm.name();
    let Some(whole) = combine(pieces, &mut 0, algorithm, 0, total) else {
        return Check::Untiled;
    };
    if whole == want.value {
        return Check::Passed(Method::Crc);
    }
    let Some(part_size) = part_size.filter(|&size| fits(size, parts, total)) else {
        return Check::Uncheckable(format!(
            "the store's {name} checksum says neither its type nor its part count, it is not the CRC of the whole object, and the ETag's {parts} upload parts could not be laid over the object's {total} bytes to check it as COMPOSITE"
        ));
    };
    let Some(by_parts) = composite(pieces, algorithm, part_size, total) else {
        return Check::Untiled;
    };
    if by_parts == want.value {
        return Check::Passed(Method::Crc);
    }
    Check::Failed(format!(
        "{name} of the received bytes is {} whole and {} by {parts} parts of {part_size} bytes; the store says {}",
        FullChecksum { algorithm, value: whole }.render(),
        FullChecksum { algorithm, value: by_parts }.render(),
        want.render()
    ))
}

/// Whether `parts` upload parts of `part_size` (the last one shorter) make `total` bytes.
pub(crate) fn fits(part_size: u64, parts: u32, total: u64) -> bool {
    part_size > 0 && total.div_ceil(part_size) == u64::from(parts)
}

/// Compare a computed MD5 with the one the ETag stands for.
pub(crate) fn check_md5(expected: [u8; 16], got: [u8; 16]) -> Check {
    if got == expected {
        Check::Passed(Method::Md5)
    } else {
        Check::Failed(format!(
            "MD5 of the received bytes is {}, the ETag says {}",
            hex::encode(got),
            hex::encode(expected)
        ))
    }
}

/// How an object's content was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Crc,
    Md5,
}

/// The outcome of a content check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Check {
    Passed(Method),
    /// The store gave no means (or checking was turned off): the size alone was checked.
    Unchecked,
    Failed(String),
    /// The store declared a checksum that cannot be laid over the bytes: the object fails,
    /// and the message says why and that `--no-verify` accepts the size alone.
    Uncheckable(String),
    /// The pieces CRC'd as the bytes streamed do not break where the checksum's parts do:
    /// the bytes must be read back by parts to check them.
    Untiled,
}

/// How the objects of a run were checked, for the summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Verified {
    /// By the store's CRC32, CRC32C or CRC64NVME: of the whole object, or of each upload
    /// part for a composite checksum.
    pub checksum: u64,
    /// By the MD5 their ETag stands for.
    pub md5: u64,
    /// By their size alone: the store gave no CRC and the ETag is not an MD5 (multipart
    /// or encrypted uploads), the bytes were discarded before an MD5 could be read back, or
    /// checking was turned off.
    pub size_only: u64,
}

/// MD5 of an object written out of order, computed in order: each write extends what is
/// covered, and whoever extends the run that starts at byte 0 hashes it up to the first
/// gap, reading back the bytes just written (from the page cache). Hashing thus follows the
/// download instead of starting after it.
#[derive(Debug, Default)]
pub(crate) struct OrderedMd5 {
    covered: Mutex<Coverage>,
    hashed: Mutex<(u64, Md5)>,
}

/// Bytes read back per step.
const READ_BACK: usize = 256 << 10;

impl OrderedMd5 {
    /// Record that `start..start + length` has been written.
    pub(crate) fn written(&self, start: u64, length: u64) {
        let mut covered = self.covered.lock().expect("md5 coverage poisoned");
        covered.add(start, start + length);
    }

    /// Hash `data`, just written at `start`, straight from memory when it continues what is
    /// hashed: bytes arriving in order need no reading back. Otherwise `catch_up` will.
    pub(crate) fn hash_in_order(&self, start: u64, data: &[u8]) {
        let Ok(mut hashed) = self.hashed.try_lock() else {
            return;
        };
        if hashed.0 == start {
            hashed.1.update(data);
            hashed.0 += data.len() as u64;
        }
    }

    /// Everything written from byte 0 on without a gap is hashed.
    pub(crate) fn caught_up(&self) -> bool {
        self.contiguous() <= self.hashed_up_to()
    }

    /// The end of the written run that starts at byte 0.
    fn contiguous(&self) -> u64 {
        let covered = self.covered.lock().expect("md5 coverage poisoned");
        covered.end_of_run_from(0)
    }

    /// Hash what is newly contiguous, unless another thread already is (it will pick up
    /// this write too: it looks again after letting go).
    pub(crate) fn catch_up(
        &self,
        read: &dyn Fn(u64, &mut [u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        while self.contiguous() > self.hashed_up_to() {
            let Ok(mut hashed) = self.hashed.try_lock() else {
                return Ok(());
            };
            self.hash_to(&mut hashed, self.contiguous(), read)?;
        }
        Ok(())
    }

    /// Hash everything up to `total` and give the digest.
    pub(crate) fn finish(
        &self,
        total: u64,
        read: &dyn Fn(u64, &mut [u8]) -> io::Result<()>,
    ) -> io::Result<[u8; 16]> {
        let mut hashed = self.hashed.lock().expect("md5 state poisoned");
        self.hash_to(&mut hashed, total, read)?;
        Ok(hashed.1.clone().finalize().into())
    }

    /// Everything up to `end` is hashed.
    pub(crate) fn hashed_through(&self, end: u64) -> bool {
        self.hashed_up_to() >= end
    }

    fn hashed_up_to(&self) -> u64 {
        self.hashed
            .lock()
            .map(|hashed| hashed.0)
            .unwrap_or(u64::MAX)
    }

    fn hash_to(
        &self,
        hashed: &mut (u64, Md5),
        end: u64,
        read: &dyn Fn(u64, &mut [u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut buffer = vec![0u8; READ_BACK.min(end.saturating_sub(hashed.0) as usize)];
        while hashed.0 < end {
            let step = READ_BACK.min((end - hashed.0) as usize);
            read(hashed.0, &mut buffer[..step])?;
            hashed.1.update(&buffer[..step]);
            hashed.0 += step as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(crc: Crc, data: &[u8], start: usize, end: usize) -> Piece {
        let value = crc_fast::checksum(crc.algorithm(), &data[start..end]);
        Piece::new(start as u64, (end - start) as u64, [(crc, value)])
    }

    #[test]
    fn crcs_of_pieces_combine_into_the_whole() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        for crc in Crc::ALL {
            let whole = FullChecksum {
                algorithm: crc,
                value: crc_fast::checksum(crc.algorithm(), &data),
            };
            assert_eq!(FullChecksum::parse(crc, &whole.render()), Some(whole));
            let whole = StoreChecksum::Full(whole);
            let piece = |start, end| piece(crc, &data, start, end);
            let mut pieces = vec![piece(70_000, 100_000), piece(0, 1), piece(1, 70_000)];
            assert_eq!(
                check_crc(whole, None, &mut pieces, 100_000),
                Check::Passed(Method::Crc)
            );
            let mut gap = vec![piece(0, 1), piece(2, 100_000)];
            assert_eq!(check_crc(whole, None, &mut gap, 100_000), Check::Untiled);
            let mut wrong = vec![piece(0, 99_999), piece(0, 1)];
            wrong[1].start = 99_999;
            assert!(matches!(
                check_crc(whole, None, &mut wrong, 100_000),
                Check::Failed(_)
            ));
        }
    }

    #[test]
    fn a_composite_checksum_is_the_crc_of_the_parts_crcs() {
        // As versitygw answered a CRC32 multipart upload of parts 0..5 and 5..12 of this data.
        let data: Vec<u8> = (0..12_000u32).map(|i| (i * 31 + i / 7) as u8).collect();
        let part = |start, end| crc_fast::checksum(Crc::Crc32.algorithm(), &data[start..end]);
        let mut concatenated = (part(0, 5_000) as u32).to_be_bytes().to_vec();
        concatenated.extend((part(5_000, 10_000) as u32).to_be_bytes());
        concatenated.extend((part(10_000, 12_000) as u32).to_be_bytes());
        let value = crc_fast::checksum(Crc::Crc32.algorithm(), &concatenated);
        let header = format!(
            "{}-3",
            FullChecksum {
                algorithm: Crc::Crc32,
                value
            }
            .render()
        );
        let composite = StoreChecksum::parse(Crc::Crc32, &header);
        assert!(matches!(
            composite,
            StoreChecksum::Composite { parts: 3, .. }
        ));
        // Pieces need not follow the parts, as long as they break where parts do.
        let piece = |start, end| piece(Crc::Crc32, &data, start, end);
        let mut pieces = vec![
            piece(0, 2_000),
            piece(2_000, 5_000),
            piece(5_000, 10_000),
            piece(10_000, 12_000),
        ];
        let check =
            |pieces: &mut [Piece], part_size| check_crc(composite, part_size, pieces, 12_000);
        assert_eq!(check(&mut pieces, Some(5_000)), Check::Passed(Method::Crc));
        // Another part size would make another number of parts: the layout is a lie, and
        // the object fails; a size that fits but pieces that break elsewhere need a read-back.
        assert!(matches!(
            check(&mut pieces, Some(3_000)),
            Check::Uncheckable(_)
        ));
        assert!(matches!(check(&mut pieces, None), Check::Uncheckable(_)));
        assert_eq!(check(&mut pieces, Some(4_000)), Check::Untiled);
        let mut straddling = vec![piece(0, 6_000), piece(6_000, 12_000)];
        assert_eq!(check(&mut straddling, Some(5_000)), Check::Untiled);
        let mut flipped = data.clone();
        flipped[7_000] ^= 1;
        let mut wrong = vec![
            piece(0, 5_000),
            super::tests::piece(Crc::Crc32, &flipped, 5_000, 10_000),
            piece(10_000, 12_000),
        ];
        assert!(matches!(check(&mut wrong, Some(5_000)), Check::Failed(_)));
    }

    #[test]
    fn an_unlabeled_checksum_passes_either_reading_and_nothing_else() {
        let data: Vec<u8> = (0..12_000u32).map(|i| (i * 17 + i / 5) as u8).collect();
        let crc32 = |bytes: &[u8]| crc_fast::checksum(Crc::Crc32.algorithm(), bytes);
        let mut concatenated = (crc32(&data[..6_000]) as u32).to_be_bytes().to_vec();
        concatenated.extend((crc32(&data[6_000..]) as u32).to_be_bytes());
        let unlabeled = |value| StoreChecksum::Unlabeled {
            crc: FullChecksum {
                algorithm: Crc::Crc32,
                value,
            },
            parts: 2,
        };
        let (whole, by_parts) = (unlabeled(crc32(&data)), unlabeled(crc32(&concatenated)));
        let pieces = || {
            vec![
                piece(Crc::Crc32, &data, 0, 6_000),
                piece(Crc::Crc32, &data, 6_000, 12_000),
            ]
        };
        let check = |expected, part_size| check_crc(expected, part_size, &mut pieces(), 12_000);
        // The whole-object reading needs no layout; the COMPOSITE one needs one that fits.
        assert_eq!(check(whole, None), Check::Passed(Method::Crc));
        assert_eq!(check(by_parts, Some(6_000)), Check::Passed(Method::Crc));
        assert!(matches!(check(by_parts, None), Check::Uncheckable(_)));
        assert!(matches!(
            check(by_parts, Some(5_000)),
            Check::Uncheckable(_)
        ));
        // A layout that fits but lies only reads the bytes another way, which fails.
        assert_eq!(check(by_parts, Some(7_000)), Check::Untiled);
        let mut cut_at_7000 = vec![
            piece(Crc::Crc32, &data, 0, 7_000),
            piece(Crc::Crc32, &data, 7_000, 12_000),
        ];
        assert!(matches!(
            check_crc(by_parts, Some(7_000), &mut cut_at_7000, 12_000),
            Check::Failed(_)
        ));
        let mut flipped = data.clone();
        flipped[100] ^= 1;
        let mut wrong = vec![
            piece(Crc::Crc32, &flipped, 0, 6_000),
            piece(Crc::Crc32, &data, 6_000, 12_000),
        ];
        for expected in [whole, by_parts] {
            let verdict = check_crc(expected, Some(6_000), &mut wrong, 12_000);
            assert!(matches!(verdict, Check::Failed(_)), "{verdict:?}");
        }
    }

    #[test]
    fn a_composite_of_the_most_parts_is_checked_in_one_pass() {
        // 10,000 parts of 7 bytes, each its own piece: a cursor walks them once.
        let data: Vec<u8> = (0..70_000u32).map(|i| (i % 241) as u8).collect();
        let mut pieces: Vec<Piece> = (0..10_000)
            .map(|part| piece(Crc::Crc32c, &data, part * 7, part * 7 + 7))
            .collect();
        let mut concatenated = Vec::new();
        for part in data.chunks(7) {
            let crc = crc_fast::checksum(Crc::Crc32c.algorithm(), part) as u32;
            concatenated.extend(crc.to_be_bytes());
        }
        let value = crc_fast::checksum(Crc::Crc32c.algorithm(), &concatenated);
        let crc = FullChecksum {
            algorithm: Crc::Crc32c,
            value,
        };
        let composite = StoreChecksum::Composite { crc, parts: 10_000 };
        assert_eq!(
            check_crc(composite, Some(7), &mut pieces, 70_000),
            Check::Passed(Method::Crc)
        );
    }

    #[test]
    fn parts_fit_an_object_only_in_the_number_declared() {
        assert!(fits(5, 3, 12));
        assert!(fits(12, 1, 12));
        assert!(!fits(4, 2, 12), "three parts of 4, not two");
        assert!(!fits(0, 1, 12), "no part size is zero");
        assert!(!fits(1, 3, 12));
        assert_eq!(
            StoreChecksum::Malformed(Crc::Crc32c).algorithm(),
            Crc::Crc32c
        );
    }

    #[test]
    fn known_crc32_header_values_parse() {
        // CRC32 of "hello world" is 0x0d4a1185, which S3 sends as base64 "DUoRhQ==".
        let parsed = FullChecksum::parse(Crc::Crc32, "DUoRhQ==").unwrap();
        assert_eq!(parsed.value, 0x0d4a_1185);
        assert_eq!(
            crc_fast::checksum(Crc::Crc32.algorithm(), b"hello world"),
            0x0d4a_1185
        );
        assert_eq!(FullChecksum::parse(Crc::Crc32, "DUoRhQ==-3"), None);
        assert_eq!(FullChecksum::parse(Crc::Crc64Nvme, "DUoRhQ=="), None);
        // Declared but none: never "no checksum", which would let the size alone decide.
        for none in [
            "DUoRhQ==-0",
            "DUoRhQ==-10001",
            "DUoRhQ==-x",
            "not base64!",
            "DUoR",
        ] {
            assert_eq!(
                StoreChecksum::parse(Crc::Crc32, none),
                StoreChecksum::Malformed(Crc::Crc32),
                "{none}"
            );
        }
        let malformed = StoreChecksum::Malformed(Crc::Crc64Nvme);
        let verdict = check_crc(malformed, None, &mut [], 10);
        assert!(
            matches!(verdict, Check::Uncheckable(ref why) if why.contains("CRC64NVME")),
            "{verdict:?}"
        );
    }

    #[test]
    fn md5_in_order_whatever_order_the_writes_come_in() {
        let data: Vec<u8> = (0..(3 * READ_BACK + 17) as u32)
            .map(|i| (i % 251) as u8)
            .collect();
        let read = |offset: u64, buffer: &mut [u8]| {
            buffer.copy_from_slice(&data[offset as usize..offset as usize + buffer.len()]);
            Ok(())
        };
        let md5 = OrderedMd5::default();
        let (third, two_thirds) = (data.len() / 3, 2 * data.len() / 3);
        let cuts = [
            (third, two_thirds),
            (0, 1000),
            (two_thirds, data.len()),
            (1000, third),
        ];
        for (start, end) in cuts {
            md5.written(start as u64, (end - start) as u64);
            md5.catch_up(&read).unwrap();
        }
        assert_eq!(
            md5.hashed_up_to(),
            data.len() as u64,
            "caught up as writes joined"
        );
        let digest = md5.finish(data.len() as u64, &read).unwrap();
        assert_eq!(digest, <[u8; 16]>::from(Md5::digest(&data)));
    }
}
