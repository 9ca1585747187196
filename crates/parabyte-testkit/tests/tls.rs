//! HTTPS test servers: their certificate chains up to a private CA of their own, clients given
//! that CA's PEM file get through, and clients that trust only the usual roots are refused.

use std::net::SocketAddr;

use parabyte_testkit::{
    payload, shared_tls, unique_bucket_name, AdminClient, BlockingAdmin, Error, ServerKind,
    TestServer,
};

/// What a client under test does with `--ca-bundle FILE` or `AWS_CA_BUNDLE=FILE`.
fn reqwest_trusting(server: &TestServer) -> reqwest::Client {
    let pem = std::fs::read(server.ca_pem_path().expect("an HTTPS server has a CA")).unwrap();
    let certs = reqwest::Certificate::from_pem_bundle(&pem).unwrap();
    reqwest::Client::builder()
        .tls_certs_merge(certs)
        .resolve("localhost", loopback_address(server))
        .build()
        .unwrap()
}

/// `localhost` pinned to the server's 127.0.0.1 address, so the test never depends on how the
/// machine resolves it.
fn loopback_address(server: &TestServer) -> SocketAddr {
    let endpoint = server.endpoint();
    let authority = endpoint.strip_prefix("https://").unwrap();
    authority.parse().unwrap()
}

/// Every message in an error's chain, since the certificate problem is a few causes down.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn round_trip_over_https(kind: ServerKind) {
    let server = shared_tls(kind);
    assert!(
        server.endpoint().starts_with("https://127.0.0.1:"),
        "{}",
        server.endpoint()
    );
    let ca_path = server.ca_pem_path().unwrap();
    let ca_pem = std::fs::read_to_string(ca_path).unwrap();
    assert!(
        ca_pem.starts_with("-----BEGIN CERTIFICATE-----"),
        "{ca_pem}"
    );

    // As a test passes the CA to the admin client by hand; `for_server` does the same.
    let admin = BlockingAdmin::new(
        AdminClient::new(
            &server.endpoint(),
            server.access_key(),
            server.secret_key(),
            server.region(),
        )
        .with_ca_pem(ca_pem.as_bytes())
        .unwrap(),
    );
    let bucket = unique_bucket_name("tls");
    admin.create_bucket(&bucket).unwrap();
    admin
        .put_object(&bucket, "hello.bin", payload(7, 5000))
        .unwrap();
    admin.put_generated(&bucket, "big.bin", 8, 3 << 20).unwrap();

    let for_server = BlockingAdmin::for_server(server);
    assert_eq!(
        for_server.get_object(&bucket, "hello.bin").unwrap(),
        payload(7, 5000)
    );
    assert_eq!(
        for_server.get_object(&bucket, "big.bin").unwrap(),
        payload(8, 3 << 20)
    );
}

#[test]
fn versitygw_serves_https_with_its_own_ca() {
    round_trip_over_https(ServerKind::Versitygw);
}

#[test]
fn seaweedfs_serves_https_with_its_own_ca() {
    round_trip_over_https(ServerKind::SeaweedFs);
}

#[test]
fn minio_serves_https_with_its_own_ca() {
    round_trip_over_https(ServerKind::Minio);
}

#[test]
fn moto_serves_https_with_its_own_ca() {
    round_trip_over_https(ServerKind::Moto);
}

#[tokio::test]
async fn a_stock_client_given_the_ca_file_gets_through_by_ip_and_by_name() {
    let server = shared_tls(ServerKind::Versitygw);
    let client = reqwest_trusting(server);
    let port = loopback_address(server).port();
    for url in [
        format!("https://127.0.0.1:{port}/"),
        format!("https://localhost:{port}/"),
    ] {
        // Unsigned, so S3 says no; but only after the TLS handshake succeeded.
        let response = client.get(&url).send().await.unwrap_or_else(|e| {
            panic!("{url} failed with the CA trusted: {}", chain(&e));
        });
        assert_eq!(response.status(), 403, "{url}");
    }
}

#[tokio::test]
async fn a_stock_client_without_the_ca_is_refused() {
    let server = shared_tls(ServerKind::Versitygw);
    // reqwest with its default roots: the platform's, as any client has.
    let error = reqwest::Client::new()
        .get(server.endpoint())
        .send()
        .await
        .expect_err("a certificate from the private CA was trusted without it");
    let message = chain(&error);
    assert!(error.is_connect(), "{message}");
    assert!(
        message.contains("UnknownIssuer") || message.contains("certificate"),
        "{message}"
    );
}

#[tokio::test]
async fn the_admin_client_without_the_ca_is_refused() {
    let server = shared_tls(ServerKind::Versitygw);
    let untrusting = AdminClient::new(
        &server.endpoint(),
        server.access_key(),
        server.secret_key(),
        server.region(),
    );
    match untrusting
        .create_bucket(&unique_bucket_name("untrusted"))
        .await
    {
        Err(Error::Transport { message, .. }) => {
            assert!(message.contains("UnknownIssuer"), "{message}");
        }
        other => panic!("the server's certificate was trusted without its CA: {other:?}"),
    }
    // Another server's CA does not do either: each server has a CA of its own.
    let other = TestServer::start_tls(ServerKind::Versitygw).unwrap();
    let wrong_ca = untrusting
        .with_ca_pem(other.ca_pem().unwrap().as_bytes())
        .unwrap();
    match wrong_ca
        .create_bucket(&unique_bucket_name("wrong-ca"))
        .await
    {
        Err(Error::Transport { message, .. }) => {
            assert!(
                message.contains("BadSignature") || message.contains("UnknownIssuer"),
                "{message}"
            );
        }
        other => panic!("the server's certificate was trusted with another CA: {other:?}"),
    }
}

#[test]
fn plain_servers_have_no_ca() {
    let server = parabyte_testkit::shared(ServerKind::Versitygw);
    assert!(server.endpoint().starts_with("http://"));
    assert_eq!(server.ca_pem_path(), None);
    assert_eq!(server.ca_pem(), None);
}
