//! The property behind issue 43's classes 4 and 5: whatever the store's checksum requests
//! do (answer, refuse, fail) and whatever size a listing or manifest gave beside the ETag
//! (the true one, or a 0 that the ETag contradicts), an object saved as verified was
//! checked by the strongest check the store offered: its CRC when it keeps one, else the
//! MD5 its ETag is, else its size; and bytes that check would refuse are never saved.

use proptest::prelude::*;

use super::*;
use crate::property_cases::property_cases;

/// What the store offers to check an object by, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Offered {
    Crc,
    Md5,
    Size,
}

/// How the HEAD that asks for the stored checksum is answered.
#[derive(Debug, Clone, Copy)]
enum Head {
    Answers,
    Denied,
    Fails,
}

/// What the caller knew before the first request.
#[derive(Debug, Clone, Copy)]
enum Given {
    Nothing,
    TrueSize,
    /// A manifest line's `0` beside the object's ETag.
    ZeroSize,
}

fn head() -> impl Strategy<Value = Head> {
    prop_oneof![Just(Head::Answers), Just(Head::Denied), Just(Head::Fails)]
}

fn given() -> impl Strategy<Value = Given> {
    prop_oneof![
        Just(Given::Nothing),
        Just(Given::TrueSize),
        Just(Given::ZeroSize)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(property_cases(256)))]

    #[test]
    fn a_saved_object_was_checked_by_the_strongest_check_the_store_offered(
        size in 1u64..=SIZE + PART,
        keeps_crc in any::<bool>(),
        md5_etag_given in any::<bool>(),
        head in head(),
        given in given(),
        flipped in proptest::option::of(any::<prop::sample::Index>()),
        verify in any::<bool>(),
    ) {
        let object = data(7, size);
        let mut served = object.clone();
        if let Some(at) = flipped {
            served[at.index(object.len())] ^= 0x20;
        }
        let tag = match md5_etag_given {
            true => md5_etag(&object),
            false => "\"e1-2\"".to_owned(),
        };
        let offered = match (keeps_crc, md5_etag_given) {
            (true, _) => Offered::Crc,
            (false, true) => Offered::Md5,
            (false, false) => Offered::Size,
        };
        let checked = TransferConfig {
            verify_content: verify,
            ..config(0)
        };
        let run = run_with(one_object(&served, Some(&tag)), checked);
        if keeps_crc {
            run.source
                .keep_checksum(OBJECT, full(Crc::Crc64Nvme, crc64(&object)), size);
        }
        match head {
            Head::Answers => {}
            Head::Denied => run.source.script(When::head(), Answer::default().fail(denied)),
            Head::Fails => run.source.script(When::head(), Answer::default().fail(server_error)),
        }
        let known = match given {
            Given::Nothing => None,
            Given::TrueSize | Given::ZeroSize => Some(Known {
                size: if matches!(given, Given::TrueSize) { size } else { 0 },
                validator: Some(etag(&tag)),
                modified: None,
            }),
        };
        let (outcome, bytes) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(download(&run, known));
        let verified = run.counters.snapshot().verified;
        // A 0 beside an ETag that is no MD5 (a multipart upload may hold one empty part)
        // contradicts nothing: the manifest's word stands, with no request (idea 1).
        if matches!(given, Given::ZeroSize) && !md5_etag_given {
            prop_assert_eq!(outcome.unwrap(), Finished::Downloaded(0));
            prop_assert!(run.source.seen().is_empty() && run.source.heads().is_empty());
            return Ok(());
        }
        match outcome {
            Ok(finished) => {
                prop_assert_eq!(finished, Finished::Downloaded(size));
                // Never an empty file for a size the ETag contradicts, never short.
                prop_assert_eq!(bytes.len() as u64, size);
                if verify {
                    let by = (verified.checksum, verified.md5, verified.size_only);
                    let strongest = match offered {
                        Offered::Crc => (1, 0, 0),
                        Offered::Md5 => (0, 1, 0),
                        Offered::Size => (0, 0, 1),
                    };
                    // An object that came whole in one GET is checked by the MD5 its ETag
                    // is, every byte as the CRC would, with no HEAD sent for the CRC (no
                    // request it could do without). Once a HEAD was sent, what it told
                    // decides.
                    let one_get_by_md5 = offered == Offered::Crc
                        && md5_etag_given
                        && run.source.heads().is_empty()
                        && by == (0, 1, 0);
                    prop_assert!(
                        by == strongest || one_get_by_md5,
                        "offered {:?}, checked {:?}", offered, by
                    );
                    if offered != Offered::Size {
                        prop_assert!(bytes == object, "bytes the check refuses were saved");
                    }
                }
            }
            Err(error) => {
                // A failure only where a check could refuse, or where the request that tells
                // whether the store keeps a checksum failed: not knowing, nothing is saved.
                let refusable = flipped.is_some() && verify && offered != Offered::Size;
                let unreadable = verify && !matches!(head, Head::Answers);
                prop_assert!(refusable || unreadable, "{error}");
                prop_assert_eq!(verified.checksum + verified.md5 + verified.size_only, 0);
            }
        }
    }
}
