//! This machine's CRC rate, as the engine computes CRCs (crc-fast, 1 MiB at a time): what
//! checking a download by the store's checksum costs per GiB on top of moving its bytes.
//! docs/BENCHMARKS.md quotes it beside W9. Run: `cargo run --release -p parabyte --example crc_rate`.

use std::time::Instant;

use crc_fast::{CrcAlgorithm, Digest};

/// Bytes checksummed a round, in memory so that only the CRC is timed.
const BUFFER: usize = 256 << 20;
const ROUNDS: usize = 5;

fn main() {
    let data = vec![7u8; BUFFER];
    let gib = BUFFER as f64 / f64::from(1u32 << 30);
    for (name, algorithm) in [
        ("CRC64NVME", CrcAlgorithm::Crc64Nvme),
        ("CRC32C", CrcAlgorithm::Crc32Iscsi),
        ("CRC32", CrcAlgorithm::Crc32IsoHdlc),
    ] {
        let best = (0..ROUNDS)
            .map(|_| {
                let started = Instant::now();
                let mut digest = Digest::new(algorithm);
                for chunk in data.chunks(1 << 20) {
                    digest.update(chunk);
                }
                std::hint::black_box(digest.finalize());
                started.elapsed().as_secs_f64()
            })
            .fold(f64::MAX, f64::min);
        println!(
            "{name}: {:.2} GiB/s, {:.3} CPU s/GiB (best of {ROUNDS} rounds of {} MiB)",
            gib / best,
            best / gib,
            BUFFER >> 20
        );
    }
}
