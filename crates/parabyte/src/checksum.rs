//! Content checks that need no second request. Sizes are always checked by the engine.
//! On top of that, an object is checked by the full-object CRC the store sends with
//! `x-amz-checksum-mode: ENABLED` (computed per response while the bytes stream, and
//! combined across the pieces a resumed body arrives in), or else by MD5 when its ETag is
//! the MD5 of its content (a single-part upload, not encrypted with KMS or a customer key).
//! MD5 cannot be combined, so it is computed in order, right behind the first gap in what
//! has been written: see [`OrderedMd5`].

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

    fn algorithm(self) -> CrcAlgorithm {
        match self {
            Crc::Crc32 => CrcAlgorithm::Crc32IsoHdlc,
            Crc::Crc32c => CrcAlgorithm::Crc32Iscsi,
            Crc::Crc64Nvme => CrcAlgorithm::Crc64Nvme,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Crc::Crc32 => "CRC32",
            Crc::Crc32c => "CRC32C",
            Crc::Crc64Nvme => "CRC64NVME",
        }
    }

    pub(crate) fn digest(self) -> crc_fast::Digest {
        crc_fast::Digest::new(self.algorithm())
    }
}

impl FullChecksum {
    /// Parse a header value: base64 of the big-endian CRC. A composite checksum of a
    /// multipart upload (`...-N`) is not a whole-object value and gives `None`.
    pub(crate) fn parse(algorithm: Crc, header: &str) -> Option<FullChecksum> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(header.trim())
            .ok()?;
        let width = if algorithm == Crc::Crc64Nvme { 8 } else { 4 };
        if bytes.len() != width {
            return None;
        }
        let value = bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        Some(FullChecksum { algorithm, value })
    }

    fn render(self) -> String {
        let bytes = self.value.to_be_bytes();
        let width = if self.algorithm == Crc::Crc64Nvme {
            8
        } else {
            4
        };
        base64::engine::general_purpose::STANDARD.encode(&bytes[8 - width..])
    }
}

/// The CRC of one stretch of an object, as one response delivered it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Piece {
    pub start: u64,
    pub length: u64,
    pub crc: u64,
}

/// Combine the pieces' CRCs into the whole object's and compare. Pieces must tile
/// `0..total` exactly; anything else means the CRC cannot speak for the whole object.
pub(crate) fn check_crc(expected: FullChecksum, pieces: &mut [Piece], total: u64) -> Check {
    pieces.sort_by_key(|piece| piece.start);
    let mut covered = 0;
    let mut crc = None;
    for piece in pieces.iter() {
        if piece.start != covered {
            return Check::Unchecked;
        }
        crc = Some(match crc {
            None => piece.crc,
            Some(before) => crc_fast::checksum_combine(
                expected.algorithm.algorithm(),
                before,
                piece.crc,
                piece.length,
            ),
        });
        covered += piece.length;
    }
    if covered != total {
        return Check::Unchecked;
    }
    // The CRC of nothing is zero for all three.
    let got = FullChecksum {
        algorithm: expected.algorithm,
        value: crc.unwrap_or(0),
    };
    if got == expected {
        Check::Passed(Method::Crc)
    } else {
        Check::Failed(format!(
            "{} of the received bytes is {}, the store says {}",
            expected.algorithm.name(),
            got.render(),
            expected.render()
        ))
    }
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
}

/// How the objects of a run were checked, for the summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Verified {
    /// By the store's full-object CRC32, CRC32C or CRC64NVME.
    pub checksum: u64,
    /// By the MD5 their ETag stands for.
    pub md5: u64,
    /// By their size alone: the store gave no checksum, the ETag is not an MD5 (multipart
    /// or encrypted uploads), the bytes were discarded, or checking was turned off.
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

    #[test]
    fn crcs_of_pieces_combine_into_the_whole() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        for crc in [Crc::Crc32, Crc::Crc32c, Crc::Crc64Nvme] {
            let whole = FullChecksum {
                algorithm: crc,
                value: crc_fast::checksum(crc.algorithm(), &data),
            };
            assert_eq!(FullChecksum::parse(crc, &whole.render()), Some(whole));
            let piece = |start: usize, end: usize| Piece {
                start: start as u64,
                length: (end - start) as u64,
                crc: crc_fast::checksum(crc.algorithm(), &data[start..end]),
            };
            let mut pieces = vec![piece(70_000, 100_000), piece(0, 1), piece(1, 70_000)];
            assert_eq!(
                check_crc(whole, &mut pieces, 100_000),
                Check::Passed(Method::Crc)
            );
            let mut gap = vec![piece(0, 1), piece(2, 100_000)];
            assert_eq!(check_crc(whole, &mut gap, 100_000), Check::Unchecked);
            let mut wrong = vec![piece(0, 99_999), piece(0, 1)];
            wrong[1].start = 99_999;
            assert!(matches!(
                check_crc(whole, &mut wrong, 100_000),
                Check::Failed(_)
            ));
        }
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
