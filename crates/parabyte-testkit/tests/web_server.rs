//! The nginx test server behaves the way the HTTP tests rely on, in each of its locations.

use parabyte_testkit::{payload, Serving, WebServer};
use reqwest::header::{CONTENT_LENGTH, CONTENT_RANGE, ETAG, LAST_MODIFIED, TRANSFER_ENCODING};
use reqwest::StatusCode;

const SIZE: usize = 300_000;

#[tokio::test]
async fn each_location_serves_the_file_its_own_way() {
    let server = WebServer::start().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(server.root().join("f.bin"), payload(3, SIZE)).unwrap();
    let http = reqwest::Client::new();
    let get = |serving| {
        http.get(server.url(serving, "f.bin"))
            .header("range", "bytes=0-99")
            .send()
    };

    let ranged = get(Serving::Ranges).await.unwrap();
    assert_eq!(ranged.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        ranged.headers()[CONTENT_RANGE],
        format!("bytes 0-99/{SIZE}").as_str()
    );
    assert!(!ranged.headers()[ETAG].to_str().unwrap().starts_with("W/"));
    assert_eq!(ranged.bytes().await.unwrap(), payload(3, SIZE)[..100]);

    let no_etag = get(Serving::NoEtag).await.unwrap();
    assert_eq!(no_etag.status(), StatusCode::PARTIAL_CONTENT);
    assert!(no_etag.headers().get(ETAG).is_none());
    assert!(no_etag.headers().get(LAST_MODIFIED).is_some());

    let whole = get(Serving::NoRanges).await.unwrap();
    assert_eq!(whole.status(), StatusCode::OK);
    assert_eq!(whole.headers()[CONTENT_LENGTH], SIZE.to_string().as_str());

    let chunked = get(Serving::Chunked).await.unwrap();
    assert_eq!(chunked.status(), StatusCode::OK);
    assert_eq!(chunked.headers()[TRANSFER_ENCODING], "chunked");
    assert!(chunked.headers().get(CONTENT_LENGTH).is_none());
    assert!(chunked.bytes().await.unwrap() == payload(3, SIZE));
}

#[tokio::test]
async fn redirects_point_where_they_were_told() {
    let server = WebServer::start_with_redirects(&[("go/x", "http://127.0.0.1:9/x?a=1&b=2")])
        .unwrap_or_else(|e| panic!("{e}"));
    let response = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{}/go/x", server.endpoint()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FOUND);
    assert_eq!(
        response.headers()["location"],
        "http://127.0.0.1:9/x?a=1&b=2"
    );
}
