//! What the pinned servers actually answer where S3 clients commonly trip, so the library's
//! assumptions are checked against the real thing (and a server upgrade that changes them shows).

use http::{Method, StatusCode};
use parabyte_testkit::{
    payload, shared, unique_bucket_name, BlockingAdmin, S3Response, ServerKind,
};

fn get(admin: &BlockingAdmin, bucket: &str, key: &str, headers: &[(&str, &str)]) -> S3Response {
    let request = headers.iter().fold(
        admin.client().request(Method::GET, bucket, key),
        |request, (name, value)| request.header(name, value),
    );
    admin.block_on(request.send()).unwrap()
}

fn header<'a>(response: &'a S3Response, name: &str) -> Option<&'a str> {
    response
        .headers
        .get(name)
        .map(|value| value.to_str().unwrap())
}

fn ranges_and_preconditions(kind: ServerKind) {
    let admin = BlockingAdmin::for_server(shared(kind));
    let bucket = unique_bucket_name("ranges");
    admin.create_bucket(&bucket).unwrap();
    admin.put_object(&bucket, "empty", Vec::new()).unwrap();
    admin.put_object(&bucket, "six", payload(1, 6)).unwrap();

    // A range on an empty object is 416, which a downloader must treat as an empty file.
    let empty = get(&admin, &bucket, "empty", &[("range", "bytes=0-99")]);
    assert_eq!(empty.status, StatusCode::RANGE_NOT_SATISFIABLE, "{kind}");
    // Not every server says `bytes */0`, so a downloader must not need it.
    let expected_content_range = match kind {
        ServerKind::Versitygw | ServerKind::Minio | ServerKind::Moto => None,
        ServerKind::SeaweedFs => Some("bytes */0"),
    };
    assert_eq!(
        header(&empty, "content-range"),
        expected_content_range,
        "{kind}"
    );

    let beyond = get(&admin, &bucket, "six", &[("range", "bytes=100-199")]);
    assert_eq!(beyond.status, StatusCode::RANGE_NOT_SATISFIABLE, "{kind}");

    let head = admin
        .block_on(admin.client().request(Method::HEAD, &bucket, "six").send())
        .unwrap();
    let etag = header(&head, "etag").unwrap().to_owned();
    let ranged = get(
        &admin,
        &bucket,
        "six",
        &[("range", "bytes=0-2"), ("if-match", &etag)],
    );
    assert_eq!(ranged.status, StatusCode::PARTIAL_CONTENT, "{kind}");
    assert_eq!(
        header(&ranged, "content-range"),
        Some("bytes 0-2/6"),
        "{kind}"
    );
    assert_eq!(ranged.body, payload(1, 6)[..3], "{kind}");

    let changed = get(
        &admin,
        &bucket,
        "six",
        &[("if-match", "\"0123456789abcdef\"")],
    );
    assert_eq!(changed.status, StatusCode::PRECONDITION_FAILED, "{kind}");

    let missing = admin
        .block_on(admin.client().request(Method::HEAD, &bucket, "nope").send())
        .unwrap();
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{kind}");
}

#[test]
fn ranges_and_preconditions_on_versitygw() {
    ranges_and_preconditions(ServerKind::Versitygw);
}

#[test]
fn ranges_and_preconditions_on_seaweedfs() {
    ranges_and_preconditions(ServerKind::SeaweedFs);
}

#[test]
fn ranges_and_preconditions_on_minio() {
    ranges_and_preconditions(ServerKind::Minio);
}

#[test]
fn ranges_and_preconditions_on_moto() {
    ranges_and_preconditions(ServerKind::Moto);
}

fn list_pages(admin: &BlockingAdmin, bucket: &str, token: Option<&str>) -> String {
    let mut request = admin
        .client()
        .request(Method::GET, bucket, "")
        .query("list-type", "2")
        .query("max-keys", "2");
    if let Some(token) = token {
        request = request.query("continuation-token", token);
    }
    let response = admin.block_on(request.send()).unwrap();
    assert_eq!(response.status, StatusCode::OK);
    String::from_utf8(response.body.to_vec()).unwrap()
}

fn element<'a>(xml: &'a str, name: &str) -> Option<&'a str> {
    let start = xml.find(&format!("<{name}>"))? + name.len() + 2;
    let end = start + xml[start..].find(&format!("</{name}>"))?;
    Some(&xml[start..end])
}

fn listing_pages_with_a_continuation_token(kind: ServerKind) {
    let admin = BlockingAdmin::for_server(shared(kind));
    let bucket = unique_bucket_name("pages");
    admin.create_bucket(&bucket).unwrap();
    let keys = ["a", "b b", "c+c"];
    admin
        .fill(&bucket, keys.iter().map(|key| (*key, payload(2, 3))))
        .unwrap();

    let first = list_pages(&admin, &bucket, None);
    assert_eq!(
        element(&first, "IsTruncated"),
        Some("true"),
        "{kind}: {first}"
    );
    let token = element(&first, "NextContinuationToken").expect("a token on a truncated page");
    // The token's place differs, so a parser must not rely on element order.
    let token_before_contents = first.find("<NextContinuationToken>") < first.find("<Contents>");
    assert_eq!(
        token_before_contents,
        !matches!(kind, ServerKind::SeaweedFs | ServerKind::Moto),
        "{kind}: {first}"
    );
    // ETags are quoted with a numeric character reference rather than &quot; (moto: bare).
    let quote = if kind == ServerKind::Moto {
        "<ETag>\""
    } else {
        "<ETag>&#34;"
    };
    assert!(first.contains(quote), "{kind}: {first}");

    let second = list_pages(&admin, &bucket, Some(token));
    assert_eq!(
        element(&second, "IsTruncated"),
        Some("false"),
        "{kind}: {second}"
    );
    assert_eq!(
        element(&second, "NextContinuationToken"),
        None,
        "{kind}: {second}"
    );
    assert_eq!(element(&second, "Key"), Some("c+c"), "{kind}: {second}");
}

#[test]
fn listing_pages_with_a_continuation_token_on_versitygw() {
    listing_pages_with_a_continuation_token(ServerKind::Versitygw);
}

#[test]
fn listing_pages_with_a_continuation_token_on_seaweedfs() {
    listing_pages_with_a_continuation_token(ServerKind::SeaweedFs);
}

#[test]
fn listing_pages_with_a_continuation_token_on_minio() {
    listing_pages_with_a_continuation_token(ServerKind::Minio);
}

#[test]
fn listing_pages_with_a_continuation_token_on_moto() {
    listing_pages_with_a_continuation_token(ServerKind::Moto);
}

/// moto's two quirks that parabyte's content check must live with: each upload part of a
/// multipart object has an ETag of its own, so part 1's HEAD pinned to the object's ETag is
/// refused; and the COMPOSITE checksum comes without `-N`, and without a checksum type
/// unless the upload declared one (boto3 does not).
#[test]
fn moto_gives_parts_their_own_etags_and_no_part_count_in_the_checksum() {
    let admin = BlockingAdmin::for_server(shared(ServerKind::Moto));
    let bucket = unique_bucket_name("moto-parts");
    admin.create_bucket(&bucket).unwrap();
    let data = payload(3, 5 << 20 | 9);
    let (first, second) = data.split_at(5 << 20);
    let parts = [first.to_vec().into(), second.to_vec().into()];
    admin
        .put_crc32_parts(&bucket, "declared", &parts, true)
        .unwrap();
    admin
        .put_crc32_parts(&bucket, "undeclared", &parts, false)
        .unwrap();
    let head = |key: &str, part: Option<&str>, if_match: Option<&str>| {
        let mut request = admin
            .client()
            .request(Method::HEAD, &bucket, key)
            .header("x-amz-checksum-mode", "ENABLED");
        if let Some(part) = part {
            request = request.query("partNumber", part);
        }
        if let Some(etag) = if_match {
            request = request.header("if-match", etag);
        }
        admin.block_on(request.send()).unwrap()
    };
    for (key, checksum_type) in [("declared", Some("COMPOSITE")), ("undeclared", None)] {
        let object = head(key, None, None);
        let etag = header(&object, "etag").unwrap().to_owned();
        assert!(etag.ends_with("-2\""), "{key}: {etag}");
        let checksum = header(&object, "x-amz-checksum-crc32").unwrap();
        assert!(!checksum.contains('-'), "{key}: {checksum}");
        assert_eq!(
            header(&object, "x-amz-checksum-type"),
            checksum_type,
            "{key}"
        );

        let pinned = head(key, Some("1"), Some(&etag));
        assert_eq!(pinned.status, StatusCode::PRECONDITION_FAILED, "{key}");
        let part = head(key, Some("1"), None);
        assert_eq!(part.status, StatusCode::OK, "{key}");
        assert_ne!(header(&part, "etag"), Some(etag.as_str()), "{key}");
        assert_eq!(header(&part, "content-length"), Some("5242880"), "{key}");
    }
}
