//! What a store sends, made up: listing pages, bucket lists, error documents and checksum
//! headers built from the pieces real ones are made of, shuffled, cut and corrupted. None
//! may panic, hang or allocate by a number it read; a page parsed as it streams, in any
//! chunks, reads the same as the whole page. `make fuzz` runs these with many more cases.

use proptest::prelude::*;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::checksum_headers::store_checksum;
use super::xml::{parse_bucket_list, parse_error, parse_list_page, PageParser};

/// Pieces of S3's XML answers, well formed or not: tags, entities, numbers out of range.
fn xml_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("<?xml version=\"1.0\" encoding=\"UTF-8\"?>".to_owned()),
        Just("<ListBucketResult>".to_owned()),
        Just("</ListBucketResult>".to_owned()),
        Just("<ListAllMyBucketsResult><Buckets>".to_owned()),
        Just("</Buckets></ListAllMyBucketsResult>".to_owned()),
        Just("<Contents>".to_owned()),
        Just("</Contents>".to_owned()),
        Just(
            "<Bucket><Name>b</Name><CreationDate>2026-01-01T00:00:00Z</CreationDate></Bucket>"
                .to_owned()
        ),
        Just("<Error><Code>AccessDenied</Code><Message>no</Message></Error>".to_owned()),
        Just("<EncodingType>url</EncodingType>".to_owned()),
        Just("<IsTruncated>true</IsTruncated>".to_owned()),
        Just("<IsTruncated>false</IsTruncated>".to_owned()),
        Just("<CommonPrefixes><Prefix>p/d/</Prefix></CommonPrefixes>".to_owned()),
        Just("<Size>18446744073709551616</Size>".to_owned()),
        Just("<Size>-1</Size>".to_owned()),
        "<Size>[0-9]{1,20}</Size>",
        "<Key>p/[a-z%&;#0-9]{0,12}</Key>",
        "<ETag>&quot;[0-9a-f]{0,32}&quot;</ETag>",
        "<NextContinuationToken>[a-zA-Z0-9/+=]{0,16}</NextContinuationToken>",
        "<ContinuationToken>[a-z]{0,8}</ContinuationToken>",
        "&#[0-9]{1,8};",
        "&[a-z]{1,5};",
        // No quotes, `<?` or `<!`: real listings have no attribute value, processing
        // instruction (past the declaration), comment or CDATA a '>' could hide in, and the
        // parser cuts chunks at the last '>' (one inside those fails the page, never passes it).
        "[<>/a-zA-Z= ]{0,12}",
        "[^\"'?!\\p{C}]{0,8}",
    ]
}

fn xml_body() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(xml_piece(), 0..40).prop_map(|pieces| pieces.concat().into_bytes())
}

/// Where a body is cut into the chunks it arrives in.
fn cuts() -> impl Strategy<Value = Vec<prop::sample::Index>> {
    prop::collection::vec(any::<prop::sample::Index>(), 0..6)
}

proptest! {
    #[test]
    fn a_listing_page_in_any_chunks_reads_as_the_whole_page(body in xml_body(), cuts in cuts()) {
        let whole = parse_list_page(&body);
        let mut at: Vec<usize> = cuts.iter().map(|cut| cut.index(body.len() + 1)).collect();
        at.sort_unstable();
        let mut parser = PageParser::new(true, usize::MAX);
        let mut streamed = Vec::new();
        let mut start = 0;
        let mut failed = None;
        for end in at.into_iter().chain([body.len()]) {
            match parser.feed(&body[start..end]) {
                Ok(batch) => streamed.extend(batch.unwrap_or_default()),
                Err(error) => {
                    failed = Some(error);
                    break;
                }
            }
            start = end;
        }
        let chunked = match failed {
            Some(error) => Err(error),
            None => parser.finish().map(|mut page| {
                streamed.append(&mut page.objects);
                page.objects = streamed;
                page
            }),
        };
        match (whole, chunked) {
            (Ok(whole), Ok(chunked)) => {
                prop_assert_eq!(whole.objects, chunked.objects);
                prop_assert_eq!(whole.common_prefixes, chunked.common_prefixes);
                prop_assert_eq!(whole.next_token, chunked.next_token);
            }
            (Err(_), Err(_)) => {}
            (whole, chunked) => prop_assert!(false, "whole {:?}, in chunks {:?}", whole, chunked),
        }
    }

    #[test]
    fn bucket_lists_and_error_documents_never_panic(body in xml_body()) {
        let _ = parse_bucket_list(&body);
        let _ = parse_error(&body);
    }

    #[test]
    fn checksum_headers_never_panic(
        name in prop::sample::select(vec![
            "x-amz-checksum-crc32",
            "x-amz-checksum-crc32c",
            "x-amz-checksum-crc64nvme",
            "x-amz-checksum-sha256",
            "x-amz-checksum-type",
        ]),
        value in "[A-Za-z0-9+/=-]{0,40}",
        kind in prop::option::of(prop::sample::select(vec!["COMPOSITE", "FULL_OBJECT", "x"])),
    ) {
        let mut headers = HeaderMap::new();
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static(name), value);
        }
        if let Some(kind) = kind {
            headers.insert("x-amz-checksum-type", HeaderValue::from_static(kind));
        }
        let _ = store_checksum(&headers);
    }
}
