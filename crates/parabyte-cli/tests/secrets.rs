//! Secrets never leave and never print: redirects to another origin carry no credential
//! and no Referer, credential-bearing query parameters are redacted in every message and in
//! `--json`, and an endpoint URL with a password is refused without echoing it. Against
//! scripted servers (the test kit's `HostileServer`) that record what they received.

mod common;

use std::process::Output;

use common::{bare_parabyte, stderr, summary};
use parabyte_testkit::{payload, HostileServer, Received, Reply};

/// Everything the run printed, on both streams.
fn printed(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        stderr(output)
    )
}

/// Every header and the target of every request `server` received, as one text.
fn everything_received(server: &HostileServer) -> String {
    server
        .requests()
        .iter()
        .map(|request| {
            let headers: Vec<String> = request
                .headers
                .iter()
                .map(|(name, value)| {
                    format!("{name}: {}", String::from_utf8_lossy(value.as_bytes()))
                })
                .collect();
            format!(
                "{} {}\n{}\n",
                request.method,
                request.target,
                headers.join("\n")
            )
        })
        .collect()
}

/// The redirect target: serves `data` under any path.
fn landing(data: Vec<u8>) -> HostileServer {
    HostileServer::start(move |request| Reply::object(request, &data, Some("\"v1\"")))
}

/// Sends every request to the same path on `to`, whatever it asked for.
fn redirecting_to(to: &HostileServer) -> HostileServer {
    let target = to.endpoint();
    HostileServer::start(move |request: &Received| {
        Reply::redirect(307, &format!("{target}/landing{}", request.path))
    })
}

#[test]
fn a_url_redirected_to_another_origin_sends_no_referer_signature_or_password() {
    // The first request asks for 1 MiB; the rest goes straight to the target.
    let data = payload(7, (1 << 20) + 600 * 1024);
    let elsewhere = landing(data.clone());
    let origin = redirecting_to(&elsewhere);
    let secrets = ["SIGhush1", "CREDhush2", "KEYhush3", "PWhush4"];
    let url = format!(
        "{}/f.bin?X-Amz-Signature={}&X-Amz-Credential={}&api_key={}",
        origin
            .endpoint()
            .replace("http://", &format!("http://user:{}@", secrets[3])),
        secrets[0],
        secrets[1],
        secrets[2],
    );
    let dir = tempfile::tempdir().unwrap();
    let output = bare_parabyte(dir.path())
        .args([
            "cp",
            "--json",
            "--part-size",
            "512KiB",
            "--threads",
            "2",
            &url,
            "out.bin",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", printed(&output));
    assert_eq!(std::fs::read(dir.path().join("out.bin")).unwrap(), data);

    // The origin got the credentials (the test would see them), the other origin none.
    let at_origin = everything_received(&origin);
    assert!(at_origin.contains("authorization: Basic"), "{at_origin}");
    assert!(at_origin.contains(secrets[0]), "{at_origin}");
    let received = everything_received(&elsewhere);
    assert_eq!(elsewhere.request_count(), 2, "{received}");
    for leaked in ["referer", "authorization", "cookie"] {
        assert!(
            !received.to_ascii_lowercase().contains(leaked),
            "{leaked}: {received}"
        );
    }
    for secret in secrets {
        assert!(!received.contains(secret), "{secret} sent: {received}");
        assert!(!printed(&output).contains(secret), "{secret} printed");
    }
    // Every request that went out is counted, the redirect hop included.
    let sent = origin.request_count() + elsewhere.request_count();
    assert_eq!(
        summary(&output)["requests"]["get"],
        sent,
        "{}",
        printed(&output)
    );
}

#[test]
fn an_s3_redirect_to_another_origin_is_never_followed() {
    // Only the endpoint the user gave receives S3 requests: a redirect elsewhere is the
    // answer, not a hop (before, the other origin's bytes were saved as the object).
    let elsewhere = landing(payload(8, 2000));
    let store = redirecting_to(&elsewhere);
    let dir = tempfile::tempdir().unwrap();
    let output = bare_parabyte(dir.path())
        .env("AWS_ACCESS_KEY_ID", "AKIDhush5")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_SESSION_TOKEN", "TOKENhush6")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", store.endpoint())
        .args(["cp", "--json", "s3://bucket/dir/k.bin", "out.bin"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", printed(&output));
    assert!(
        stderr(&output).contains("does not follow"),
        "{}",
        printed(&output)
    );
    assert!(!dir.path().join("out.bin").exists());
    assert_eq!(
        elsewhere.request_count(),
        0,
        "{}",
        everything_received(&elsewhere)
    );
    assert_eq!(summary(&output)["requests"]["get"], store.request_count());
}

/// One parameter of each family that carries a credential, each with its own value.
const SECRET_PARAMETERS: [(&str, &str); 12] = [
    ("api_key", "hushA"),
    ("apikey", "hushB"),
    ("x-api-key", "hushC"),
    ("access_token", "hushD"),
    ("sig", "hushE"),
    ("X-Amz-Security-Token", "hushF"),
    ("X-Amz-Signature", "hushG"),
    ("password", "hushH"),
    ("client_secret", "hushI"),
    ("X-Goog-Signature", "hushJ"),
    ("Credential", "hushK"),
    ("sessionid", "hushL"),
];

#[test]
fn credential_parameters_are_redacted_in_messages_and_json() {
    let missing = HostileServer::start(|_| Reply::status(404));
    let query: Vec<String> = SECRET_PARAMETERS
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    let url = format!(
        "{}/gone.bin?partNumber=1&{}",
        missing.endpoint(),
        query.join("&")
    );
    let dir = tempfile::tempdir().unwrap();
    // Once as the source, once from a manifest, each failing (404) and reported.
    std::fs::write(
        dir.path().join("list.txt"),
        format!("{url} a.bin\n{url}#{} b.bin\n", query.join("&")),
    )
    .unwrap();
    for args in [
        vec!["cp", "--json", url.as_str(), "out.bin"],
        vec!["cp", "--json", "--manifest", "list.txt", "out"],
    ] {
        let output = bare_parabyte(dir.path()).args(&args).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{}", printed(&output));
        let json = summary(&output);
        let failures = json["failures"].to_string();
        let shown = printed(&output);
        for (name, value) in SECRET_PARAMETERS {
            assert!(!shown.contains(value), "{name}'s value printed: {shown}");
            assert!(
                failures.contains(&format!("{name}=REDACTED")),
                "{name}: {failures}"
            );
        }
        assert!(failures.contains("partNumber=1"), "{failures}");
    }
    assert!(
        everything_received(&missing).contains("api_key=hushA"),
        "the server got them"
    );
}

#[test]
fn an_endpoint_url_with_a_password_is_refused_without_echoing_it() {
    let store = HostileServer::start(|request| Reply::object(request, b"abc", None));
    let with_password = store.endpoint().replace("http://", "http://user:PWhush7@");
    let dir = tempfile::tempdir().unwrap();
    let flag = bare_parabyte(dir.path())
        .env("AWS_ACCESS_KEY_ID", "id")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .args([
            "cp",
            "--endpoint-url",
            &with_password,
            "s3://bucket/k",
            "out",
        ])
        .output()
        .unwrap();
    let environment = bare_parabyte(dir.path())
        .env("AWS_ACCESS_KEY_ID", "id")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_ENDPOINT_URL", &with_password)
        .args(["ls", "s3://bucket/"])
        .output()
        .unwrap();
    for output in [flag, environment] {
        assert_eq!(output.status.code(), Some(2), "{}", printed(&output));
        let shown = printed(&output);
        assert!(shown.contains("user name or password"), "{shown}");
        assert!(!shown.contains("PWhush7"), "{shown}");
    }
    assert_eq!(store.request_count(), 0, "{}", everything_received(&store));
    assert!(!dir.path().join("out").exists());
}

#[test]
fn a_redirect_loop_ends_after_ten_hops_with_a_clear_failure() {
    let looping = HostileServer::start(|request: &Received| {
        Reply::redirect(302, &format!("{}?again=1&token=hush", request.path))
    });
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/f.bin", looping.endpoint());
    let output = bare_parabyte(dir.path())
        .args(["cp", "--json", &url, "out.bin"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", printed(&output));
    assert_eq!(
        looping.request_count(),
        11,
        "the first request and ten hops"
    );
    let shown = printed(&output);
    assert!(shown.contains("redirect"), "{shown}");
    assert!(!shown.contains("hush"), "{shown}");
    assert_eq!(summary(&output)["requests"]["get"], 11);
}
