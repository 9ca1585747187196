//! One request limit per `Client`: calls running at once on one client share it, as threads
//! sharing a client in Python do, so `max_requests` bounds the requests the store sees.

mod common;

use std::time::Duration;

use common::store_config;
use parabyte::{Client, S3Url, StoreConfig, TransferConfig};
use parabyte_testkit::{
    payload, shared, unique_bucket_name, AdminClient, CountingProxy, Fault, RequestKind, Rule,
    ServerKind,
};

const MAX_REQUESTS: usize = 4;
const CALLS: usize = 3;
const PART: u64 = 64 * 1024;
const OBJECT_SIZE: usize = 4 << 20;
/// The first request of an object of unknown size asks for its first MiB.
const FIRST_RANGE: u64 = 1 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_at_once_on_one_client_share_its_request_limit() {
    let server = shared(ServerKind::Versitygw);
    let admin = AdminClient::for_server(server);
    let bucket = unique_bucket_name("limit");
    admin.create_bucket(&bucket).await.unwrap();
    let object = payload(7, OBJECT_SIZE);
    admin
        .put_object(&bucket, "big.bin", object.clone())
        .await
        .unwrap();

    let proxy = CountingProxy::start(&server.endpoint());
    // Responses take a moment, as over a network: each call keeps its ranges in flight.
    proxy.inject(Rule::get(), Fault::delay_headers(Duration::from_millis(20)));
    let store = StoreConfig {
        endpoint_url: Some(proxy.endpoint()),
        ..store_config(server)
    };
    // As many ranges per object as parts: parts keep their size (they grow only to keep
    // fewer ranges busy), so the count of GETs below is exact.
    let transfer = TransferConfig {
        part_size: PART,
        ranges_per_object: 64,
        max_requests: MAX_REQUESTS,
        ..TransferConfig::default()
    };
    let client = Client::connect(&store, transfer).await.unwrap();
    let url = S3Url {
        bucket: bucket.clone(),
        key: "big.bin".into(),
    };
    let calls = (0..CALLS).map(|_| client.get_bytes(url.clone()));
    for bytes in futures::future::join_all(calls).await {
        assert!(bytes.unwrap() == object, "every call got the object");
    }

    let gets: Vec<u64> = proxy
        .requests()
        .iter()
        .zip(proxy.in_flight_at_arrivals())
        .filter(|(request, _)| request.kind == RequestKind::Get)
        .map(|(_, in_flight)| in_flight)
        .collect();
    let parts = 1 + (OBJECT_SIZE as u64 - FIRST_RANGE) / PART;
    assert_eq!(gets.len() as u64, CALLS as u64 * parts, "one GET per part");
    let most = gets.iter().max().copied().unwrap_or(0);
    assert!(
        most <= MAX_REQUESTS as u64,
        "{CALLS} calls at once kept {most} requests in flight, over the client's limit of {MAX_REQUESTS}: {gets:?}"
    );
}
