//! Credentials and endpoints the way AWS users set them up: shared files and profiles,
//! anonymous requests, and the environment.

mod common;

use common::{run, stderr, Bed};
use parabyte_testkit::{payload, ServerKind};

/// `~/.aws/credentials` and `~/.aws/config` under the test's HOME, with the keys in a named
/// profile and the endpoint in the config file.
fn write_profile(bed: &Bed, profile: &str) {
    let aws = bed.path(".aws");
    std::fs::create_dir_all(&aws).unwrap();
    std::fs::write(
        aws.join("credentials"),
        format!(
            "[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n\n[{profile}]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            bed.server.access_key(),
            bed.server.secret_key()
        ),
    )
    .unwrap();
    std::fs::write(
        aws.join("config"),
        format!(
            "[profile {profile}]\nregion = {}\nendpoint_url = {}\n",
            bed.server.region(),
            bed.proxy.endpoint()
        ),
    )
    .unwrap();
}

#[test]
fn keys_region_and_endpoint_come_from_a_named_profile() {
    let bed = Bed::new(ServerKind::Versitygw, "profile");
    bed.admin
        .put_object(&bed.bucket, "k", payload(1, 2048))
        .unwrap();
    write_profile(&bed, "store");

    let from_files = |command: &mut assert_cmd::Command| {
        command
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env_remove("AWS_ENDPOINT_URL")
            .env_remove("AWS_REGION");
    };
    let mut by_flag = bed.parabyte();
    from_files(&mut by_flag);
    let output = run(by_flag.args(["cp", "--profile", "store", &bed.url("k"), "by-flag"]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        std::fs::read(bed.path("by-flag")).unwrap(),
        payload(1, 2048)
    );

    let mut by_env = bed.parabyte();
    from_files(&mut by_env);
    let output = run(by_env
        .env("AWS_PROFILE", "store")
        .args(["cp", &bed.url("k"), "by-env"]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read(bed.path("by-env")).unwrap(), payload(1, 2048));

    // The default profile holds wrong keys: without the profile the store says no.
    let mut default = bed.parabyte();
    from_files(&mut default);
    let output = run(default.env("AWS_ENDPOINT_URL", bed.proxy.endpoint()).args([
        "cp",
        &bed.url("k"),
        "default",
    ]));
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert_eq!(bed.proxy.counts().head, 0);
}

#[test]
fn anonymous_requests_to_a_private_bucket_are_refused_clearly() {
    let bed = Bed::new(ServerKind::Versitygw, "anonymous");
    bed.admin
        .put_object(&bed.bucket, "dir/k", payload(1, 10))
        .unwrap();
    let output = run(bed
        .parabyte()
        .args(["cp", "--no-sign-request", &bed.url("dir/"), "out"]));
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains("access denied") && text.contains("403"),
        "{text}"
    );
}

#[test]
fn no_credentials_anywhere_is_a_fatal_error_with_a_hint() {
    let bed = Bed::new(ServerKind::Versitygw, "nocreds");
    let output = run(bed
        .parabyte()
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .args(["cp", &bed.url("k"), "out"]));
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(
        text.contains("no AWS credentials found") && text.contains("--no-sign-request"),
        "{text}"
    );
    assert_eq!(
        bed.proxy.counts().get,
        0,
        "nothing is sent without credentials"
    );
}

#[test]
fn https_with_a_private_ca_needs_the_ca_bundle() {
    let server = parabyte_testkit::shared_tls(ServerKind::Versitygw);
    let admin = parabyte_testkit::BlockingAdmin::for_server(server);
    let bucket = parabyte_testkit::unique_bucket_name("tls");
    admin.create_bucket(&bucket).unwrap();
    admin
        .put_object(&bucket, "d/k", payload(3, 3 << 20))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let parabyte = || {
        let mut command = assert_cmd::Command::cargo_bin("parabyte").unwrap();
        command
            .env_clear()
            .env("HOME", dir.path())
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("AWS_ACCESS_KEY_ID", server.access_key())
            .env("AWS_SECRET_ACCESS_KEY", server.secret_key())
            .env("AWS_REGION", server.region())
            .current_dir(dir.path());
        command
    };
    let source = format!("s3://{bucket}/d/");
    let ca = server.ca_pem_path().unwrap().to_str().unwrap().to_owned();

    let output = run(parabyte().args([
        "cp",
        "--endpoint-url",
        &server.endpoint(),
        "--ca-bundle",
        &ca,
        &source,
        "flag",
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        std::fs::read(dir.path().join("flag/k")).unwrap(),
        payload(3, 3 << 20)
    );

    let output = run(parabyte()
        .env("AWS_CA_BUNDLE", &ca)
        .env("AWS_ENDPOINT_URL", server.endpoint())
        .args(["cp", &source, "env"]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        std::fs::read(dir.path().join("env/k")).unwrap(),
        payload(3, 3 << 20)
    );

    // Without the CA the system roots do not trust the server: a fatal error, not retries.
    let output =
        run(parabyte().args(["cp", "--endpoint-url", &server.endpoint(), &source, "none"]));
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains("certificate not trusted") && text.contains("--ca-bundle"),
        "{text}"
    );
    assert!(!dir.path().join("none").exists());
}

/// A run over plain HTTP reads no trusted roots, neither its own client's nor those of
/// aws-config's credential providers (which read them as the config loaded): with
/// SSL_CERT_FILE a FIFO that nobody writes, a read of the roots would wait forever.
#[test]
fn a_plain_http_run_reads_no_trusted_roots() {
    let bed = Bed::new(ServerKind::Versitygw, "noroots");
    bed.admin
        .put_object(&bed.bucket, "k", payload(4, 1000))
        .unwrap();
    let fifo = std::ffi::CString::new(bed.path("roots.fifo").into_os_string().into_encoded_bytes())
        .unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only reads it.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let output = run(bed
        .parabyte()
        .env("SSL_CERT_FILE", bed.path("roots.fifo"))
        .env("SSL_CERT_DIR", bed.path("no-such-dir"))
        .timeout(std::time::Duration::from_secs(60))
        .args(["cp", &bed.url("k"), "out"]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read(bed.path("out")).unwrap(), payload(4, 1000));
}
