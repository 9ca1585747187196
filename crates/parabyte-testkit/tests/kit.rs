//! The kit against the real servers: odd keys survive the admin client and the proxy, and the
//! proxy counts exactly what went through it.

use parabyte_testkit::{
    encode_key, payload, shared, unique_bucket_name, AdminClient, BlockingAdmin, CountingProxy,
    Error, ProxyCounts, RequestKind, ServerKind, ACCESS_KEY, REGION,
};

const ODD_KEYS: [&str; 5] = [
    "with space.bin",
    "ünïcødé/ファイル.bin",
    "plus+sign.bin",
    "percent%41.bin",
    "nested/dir/a b+c%d~e.bin",
];

fn bucket_with_odd_keys(admin: &BlockingAdmin) -> String {
    let bucket = unique_bucket_name("odd-keys");
    admin.create_bucket(&bucket).unwrap();
    let objects = ODD_KEYS
        .iter()
        .zip(0u64..)
        .map(|(key, seed)| (*key, payload(seed, 1000 + seed as usize)));
    assert_eq!(admin.fill(&bucket, objects).unwrap(), ODD_KEYS.len());
    bucket
}

fn odd_keys_round_trip_through_the_proxy(kind: ServerKind) {
    let server = shared(kind);
    let admin = BlockingAdmin::for_server(server);
    let bucket = bucket_with_odd_keys(&admin);

    let proxy = CountingProxy::start(&server.endpoint());
    let through_proxy = BlockingAdmin::new(admin.client().with_endpoint(&proxy.endpoint()));
    for (key, seed) in ODD_KEYS.iter().zip(0u64..) {
        let body = through_proxy.get_object(&bucket, key).unwrap();
        assert_eq!(body, payload(seed, 1000 + seed as usize), "{kind} {key}");
    }

    let counts = proxy.counts();
    assert!(counts.connections >= 1, "{counts:?}");
    assert_eq!(
        counts,
        ProxyCounts {
            get: ODD_KEYS.len() as u64,
            connections: counts.connections,
            ..ProxyCounts::default()
        }
    );
    let paths: Vec<String> = proxy.requests().into_iter().map(|r| r.path).collect();
    let expected: Vec<String> = ODD_KEYS
        .iter()
        .map(|key| format!("/{bucket}/{}", encode_key(key)))
        .collect();
    assert_eq!(paths, expected);
}

#[test]
fn odd_keys_round_trip_through_the_proxy_on_versitygw() {
    odd_keys_round_trip_through_the_proxy(ServerKind::Versitygw);
}

#[test]
fn odd_keys_round_trip_through_the_proxy_on_seaweedfs() {
    odd_keys_round_trip_through_the_proxy(ServerKind::SeaweedFs);
}

#[test]
fn odd_keys_round_trip_through_the_proxy_on_minio() {
    odd_keys_round_trip_through_the_proxy(ServerKind::Minio);
}

fn proxy_classifies_and_records_headers(kind: ServerKind) {
    let server = shared(kind);
    let admin = BlockingAdmin::for_server(server);
    let bucket = unique_bucket_name("proxy-kinds");
    admin.create_bucket(&bucket).unwrap();
    let proxy = CountingProxy::start(&server.endpoint());
    let through_proxy = admin.client().with_endpoint(&proxy.endpoint());

    // A streamed upload and a ranged, conditional download, both through the proxy.
    let len = 3 << 20;
    admin
        .block_on(through_proxy.put_generated(&bucket, "big.bin", 9, len))
        .unwrap();
    let head = admin
        .block_on(
            through_proxy
                .request(http::Method::HEAD, &bucket, "big.bin")
                .send(),
        )
        .unwrap();
    let etag = head.headers["etag"].to_str().unwrap().to_owned();
    let ranged = admin
        .block_on(
            through_proxy
                .request(http::Method::GET, &bucket, "big.bin")
                .header("range", "bytes=1000-1999")
                .header("if-match", &etag)
                .send(),
        )
        .unwrap();
    assert_eq!(ranged.status, http::StatusCode::PARTIAL_CONTENT);
    assert_eq!(ranged.body, parabyte_testkit::payload_at(9, 1000, 1000));
    let listing = admin
        .block_on(
            through_proxy
                .request(http::Method::GET, &bucket, "")
                .query("list-type", "2")
                .send(),
        )
        .unwrap();
    assert!(String::from_utf8_lossy(&listing.body).contains("<Key>big.bin</Key>"));
    assert_eq!(
        admin.get_object(&bucket, "big.bin").unwrap(),
        payload(9, len as usize)
    );

    let counts = proxy.counts();
    assert_eq!(
        (
            counts.put,
            counts.head,
            counts.get,
            counts.list,
            counts.other
        ),
        (1, 1, 1, 1, 0)
    );
    let requests = proxy.requests();
    let kinds: Vec<RequestKind> = requests.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [
            RequestKind::Put,
            RequestKind::Head,
            RequestKind::Get,
            RequestKind::List
        ]
    );
    assert_eq!(requests[2].range.as_deref(), Some("bytes=1000-1999"));
    assert_eq!(requests[2].if_match.as_deref(), Some(etag.as_str()));
    assert_eq!(requests[3].query, "list-type=2");

    proxy.reset();
    assert_eq!(proxy.counts(), ProxyCounts::default());
    assert!(proxy.requests().is_empty());
}

#[test]
fn proxy_classifies_and_records_headers_on_versitygw() {
    proxy_classifies_and_records_headers(ServerKind::Versitygw);
}

#[test]
fn proxy_classifies_and_records_headers_on_seaweedfs() {
    proxy_classifies_and_records_headers(ServerKind::SeaweedFs);
}

#[test]
fn proxy_classifies_and_records_headers_on_minio() {
    proxy_classifies_and_records_headers(ServerKind::Minio);
}

#[test]
fn servers_reject_a_wrong_secret() {
    for kind in ServerKind::ALL {
        let server = shared(kind);
        let intruder = BlockingAdmin::new(AdminClient::new(
            &server.endpoint(),
            ACCESS_KEY,
            "not-the-secret",
            REGION,
        ));
        match (
            kind,
            intruder.create_bucket(&unique_bucket_name("intruder")),
        ) {
            // moto checks no signature: tests of refused credentials run on the others.
            (ServerKind::Moto, accepted) => assert!(accepted.is_ok(), "{accepted:?}"),
            (_, Err(Error::Status { status, .. })) => assert_eq!(status, 403, "{kind}"),
            (_, other) => panic!("{kind} accepted a wrong secret: {other:?}"),
        }
    }
}

#[tokio::test]
async fn async_tests_can_start_servers_and_use_the_async_client() {
    // Starting (and stopping) a server blocks, but must work from inside a runtime.
    let server = parabyte_testkit::TestServer::start(ServerKind::Versitygw).unwrap();
    let admin = AdminClient::for_server(&server);
    let bucket = unique_bucket_name("async");
    admin.create_bucket(&bucket).await.unwrap();
    admin
        .put_object(&bucket, "k", payload(5, 10))
        .await
        .unwrap();
    assert_eq!(
        admin.get_object(&bucket, "k").await.unwrap(),
        payload(5, 10)
    );
    admin.delete_object(&bucket, "k").await.unwrap();
    match admin.get_object(&bucket, "k").await {
        Err(Error::Status { status, .. }) => assert_eq!(status, 404),
        other => panic!("a deleted object came back: {other:?}"),
    }
}
