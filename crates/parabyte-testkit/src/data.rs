//! Deterministic pseudo-random payloads: the same seed always gives the same bytes, so a test can
//! regenerate what it uploaded instead of keeping it, and any slice can be made on its own.

/// `len` bytes of seeded pseudo-random data.
pub fn payload(seed: u64, len: usize) -> Vec<u8> {
    payload_at(seed, 0, len)
}

/// The bytes `offset..offset + len` of the endless stream that [`payload`] starts, so a large
/// object can be produced (and checked) piece by piece without holding it in memory.
pub fn payload_at(seed: u64, offset: u64, len: usize) -> Vec<u8> {
    let key = mix(seed);
    let mut out = Vec::with_capacity(len);
    let mut word_index = offset / 8;
    // The first word may start part-way through when `offset` is not a multiple of 8.
    let mut skip = (offset % 8) as usize;
    while out.len() < len {
        let word = word_at(key, word_index).to_le_bytes();
        let take = (len - out.len()).min(8 - skip);
        out.extend_from_slice(&word[skip..skip + take]);
        skip = 0;
        word_index += 1;
    }
    out
}

/// Counter-based generation (a hash of the word's index) is what makes random access possible.
fn word_at(key: u64, index: u64) -> u64 {
    mix(key.wrapping_add(index.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
}

/// The SplitMix64 finaliser: cheap and well mixed, which is all test data needs.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_bytes_and_different_seed_different_bytes() {
        assert_eq!(payload(7, 1000), payload(7, 1000));
        assert_ne!(payload(7, 1000), payload(8, 1000));
        assert_eq!(payload(7, 1000).len(), 1000);
        assert!(payload(0, 64).iter().any(|&b| b != 0));
        assert!(payload(3, 0).is_empty());
    }

    #[test]
    fn any_slice_matches_the_whole() {
        let whole = payload(42, 4099);
        for (offset, len) in [(0, 4099), (1, 7), (5, 3), (8, 16), (13, 1000), (4090, 9)] {
            assert_eq!(
                payload_at(42, offset as u64, len),
                whole[offset..offset + len],
                "offset {offset} len {len}"
            );
        }
    }

    #[test]
    fn bytes_look_random_enough_to_defeat_compression() {
        let data = payload(1, 1 << 16);
        let mut histogram = [0u32; 256];
        for &b in &data {
            histogram[b as usize] += 1;
        }
        // 256 expected per value; a broken generator lands far outside this band.
        assert!(histogram.iter().all(|&n| (150..400).contains(&n)));
    }
}
