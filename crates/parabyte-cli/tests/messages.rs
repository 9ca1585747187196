//! What a new user is told, through the real binary: a missing profile is named, an
//! `https://` endpoint that speaks plain HTTP is named, errors no retry can change are sent
//! once, and usage errors neither list options set through the environment as required nor
//! suggest `-- --flag` for an option parabyte does not have.

mod common;

use std::process::Output;

use common::{bare_parabyte, run, stderr, Bed};
use parabyte_testkit::{payload, shared_tls, Fault, HostileServer, Reply, Rule, ServerKind};

fn refused_with(output: &Output, expected: &[&str]) -> String {
    let text = stderr(output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    for part in expected {
        assert!(text.contains(part), "{part:?} not in: {text}");
    }
    assert!(!text.contains("gave up after"), "retried: {text}");
    text
}

#[test]
fn a_profile_that_does_not_exist_is_named_with_where_it_was_looked_for() {
    let store = HostileServer::start(|_| Reply::status(500));
    let dir = tempfile::tempdir().unwrap();
    let aws = dir.path().join(".aws");
    std::fs::create_dir(&aws).unwrap();
    std::fs::write(aws.join("config"), "[profile dev]\nregion = eu-west-1\n").unwrap();
    let config = aws.join("config").display().to_string();
    let credentials = aws.join("credentials").display().to_string();
    // Keys in the environment: without the check they would quietly be used instead.
    let parabyte = || {
        let mut command = bare_parabyte(dir.path());
        command
            .env("AWS_ACCESS_KEY_ID", "id")
            .env("AWS_SECRET_ACCESS_KEY", "secret")
            .env("AWS_ENDPOINT_URL", store.endpoint());
        command
    };
    let by_flag = parabyte()
        .args(["ls", "--profile", "nosuch", "s3://bucket/"])
        .output()
        .unwrap();
    let by_env = parabyte()
        .env("AWS_PROFILE", "nosuch")
        .args(["cp", "s3://bucket/k", "out"])
        .output()
        .unwrap();
    for output in [by_flag, by_env] {
        let text = refused_with(
            &output,
            &[
                "profile 'nosuch'",
                "does not exist",
                &config,
                &credentials,
                "dev",
            ],
        );
        assert!(!text.contains("IMDS"), "{text}");
    }
    assert_eq!(store.request_count(), 0);
}

#[test]
fn no_credentials_says_where_it_looked_and_which_profiles_exist_before_the_chains_detail() {
    let store = HostileServer::start(|_| Reply::status(500));
    let dir = tempfile::tempdir().unwrap();
    let aws = dir.path().join(".aws");
    std::fs::create_dir(&aws).unwrap();
    std::fs::write(
        aws.join("config"),
        "[profile dev]\nregion = eu-west-1\n[profile ops]\n",
    )
    .unwrap();
    let config = aws.join("config").display().to_string();
    for args in [
        &["cp", "s3://bucket/k", "out"][..],
        &["ls", "s3://bucket/"],
        &["cat", "s3://bucket/k"],
    ] {
        let output = bare_parabyte(dir.path())
            .env("AWS_ENDPOINT_URL", store.endpoint())
            .args(args)
            .output()
            .unwrap();
        let text = stderr(&output);
        assert_ne!(output.status.code(), Some(0), "{args:?}: {text}");
        let looked = text
            .find("profile 'default'")
            .unwrap_or_else(|| panic!("{text}"));
        let files = text.find(&config).unwrap_or_else(|| panic!("{text}"));
        let profiles = text.find("dev, ops").unwrap_or_else(|| panic!("{text}"));
        let detail = text
            .find("the chain said")
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            looked < detail && files < detail && profiles < detail,
            "{text}"
        );
        assert!(text.contains("--no-sign-request"), "{text}");
    }
    assert_eq!(store.request_count(), 0);
}

#[test]
fn https_to_a_plain_http_server_says_so_after_one_connection() {
    let bed = Bed::new(ServerKind::Versitygw, "plainhttp");
    bed.admin
        .put_object(&bed.bucket, "k", payload(1, 10))
        .unwrap();
    let plain = bed.proxy.endpoint();
    let https = plain.replacen("http://", "https://", 1);
    let web_file = format!("{https}/{}/k", bed.bucket);
    for args in [
        vec!["ls".to_owned(), bed.url("")],
        vec!["cp".to_owned(), bed.url("k"), "out".to_owned()],
        vec!["cp".to_owned(), web_file, "out".to_owned()],
    ] {
        bed.proxy.reset();
        let output = run(bed.parabyte().env("AWS_ENDPOINT_URL", &https).args(&args));
        let text = refused_with(
            &output,
            &[&format!("speaks plain HTTP: use {plain}"), &https],
        );
        assert!(!text.contains("InvalidContentType"), "{text}");
        assert_eq!(bed.proxy.counts().connections, 1, "{args:?}: {text}");
    }
}

#[test]
fn http_to_an_https_minio_says_so() {
    let server = shared_tls(ServerKind::Minio);
    let https = server.endpoint();
    let plain = https.replacen("https://", "http://", 1);
    let dir = tempfile::tempdir().unwrap();
    let output = bare_parabyte(dir.path())
        .env("AWS_ACCESS_KEY_ID", server.access_key())
        .env("AWS_SECRET_ACCESS_KEY", server.secret_key())
        .args(["ls", "--endpoint-url", &plain, "s3://bucket/"])
        .output()
        .unwrap();
    refused_with(&output, &[&format!("speaks HTTPS: use {https}")]);
}

#[test]
fn a_host_name_that_does_not_resolve_is_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    // .invalid never resolves (RFC 2606), so no network is needed to see it fail.
    for args in [
        &[
            "ls",
            "--endpoint-url",
            "http://store.invalid:9000",
            "s3://b/",
        ][..],
        &["cp", "https://files.invalid/f.bin", "out"][..],
    ] {
        let output = bare_parabyte(dir.path())
            .env("AWS_ACCESS_KEY_ID", "id")
            .env("AWS_SECRET_ACCESS_KEY", "secret")
            .args(args)
            .output()
            .unwrap();
        refused_with(&output, &["does not resolve", ".invalid"]);
    }
}

#[test]
fn a_malformed_authorization_without_a_region_is_sent_once() {
    let bed = Bed::new(ServerKind::Versitygw, "malformed");
    bed.admin
        .put_object(&bed.bucket, "d/k", payload(1, 10))
        .unwrap();
    let refused = bed.proxy.inject(
        Rule::any(),
        Fault::error(400, "AuthorizationHeaderMalformed"),
    );
    for (source, list, get) in [(bed.url("d/"), 1, 0), (bed.url("d/k"), 0, 1)] {
        bed.proxy.reset();
        let output = run(bed.parabyte().args(["cp", &source, "out/"]));
        refused_with(&output, &["AuthorizationHeaderMalformed", "--region"]);
        let counts = bed.proxy.counts();
        assert_eq!(
            (counts.list, counts.get),
            (list, get),
            "{source}: {counts:?}"
        );
    }
    assert_eq!(refused.fired(), 2);
}

#[test]
fn an_anonymous_request_refused_is_not_told_to_go_anonymous() {
    let bed = Bed::new(ServerKind::Versitygw, "anonhint");
    bed.admin
        .put_object(&bed.bucket, "d/k", payload(1, 10))
        .unwrap();
    let output = run(bed
        .parabyte()
        .args(["cp", "--no-sign-request", &bed.url("d/"), "out"]));
    let text = refused_with(
        &output,
        &["access denied", "anonymous", "AWS_ACCESS_KEY_ID"],
    );
    assert!(!text.contains("try --no-sign-request"), "{text}");
}

#[test]
fn usage_lines_do_not_list_options_set_through_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let output = bare_parabyte(dir.path())
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
        .env("AWS_REGION", "eu-west-1")
        .env("AWS_CA_BUNDLE", "ca.pem")
        .args(["cp", "s3://b/k"])
        .output()
        .unwrap();
    let text = refused_with(
        &output,
        &[
            "<DESTINATION>",
            "Usage: parabyte cp [OPTIONS] <SOURCE> <DESTINATION>",
        ],
    );
    let usage = text
        .lines()
        .find(|line| line.starts_with("Usage:"))
        .unwrap();
    for option in ["--endpoint-url", "--region", "--ca-bundle"] {
        assert!(!usage.contains(option), "{usage}");
    }
}

#[test]
fn options_from_other_tools_are_named_as_unknown_without_the_dash_dash_tip() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["cp", "--bwlimit", "10M", "s3://b/k", "out"][..],
        &["cp", "--acl", "private", "s3://b/k", "out"][..],
        &["ls", "--expected-size", "s3://b/"][..],
    ] {
        let output = bare_parabyte(dir.path()).args(args).output().unwrap();
        let flag = args[1];
        let text = refused_with(&output, &[&format!("parabyte has no option '{flag}'")]);
        assert!(!text.contains(&format!("-- {flag}")), "{text}");
    }
    // A near miss still points to the option that exists.
    let output = bare_parabyte(dir.path())
        .args(["cp", "--worker", "4", "s3://b/k", "out"])
        .output()
        .unwrap();
    refused_with(&output, &["similar argument exists: '--workers'"]);
}

/// What aws, s5cmd and rclone users type from habit: options before the subcommand, aws's
/// `--no-progress` and `--only-show-errors`, and the other tools' names for our flags.
#[test]
fn options_typed_from_other_tools_habits_work_or_point_to_ours() {
    let server = HostileServer::start(|request| Reply::object(request, b"hello", Some("\"e\"")));
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/f.txt", server.endpoint());
    for (index, args) in [
        ["--retries", "1", "cp", "--no-progress"],
        ["--region", "us-east-1", "cp", "--only-show-errors"],
    ]
    .iter()
    .enumerate()
    {
        let target = format!("out-{index}.txt");
        let output = bare_parabyte(dir.path())
            .args(args)
            .args([url.as_str(), target.as_str()])
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(std::fs::read(dir.path().join(&target)).unwrap(), b"hello");
        // --only-show-errors is aws's --quiet: no summary.
        assert_eq!(
            stderr(&output).is_empty(),
            index == 1,
            "{}",
            stderr(&output)
        );
    }
    for (flag, ours) in [
        ("--numworkers", "--workers N"),
        ("--transfers", "--workers N"),
        ("--concurrency", "--ranges-per-object N"),
    ] {
        let output = bare_parabyte(dir.path())
            .args(["cp", flag, "8", &url, "out"])
            .output()
            .unwrap();
        let text = refused_with(&output, &[ours]);
        assert!(!text.contains("has no option"), "{text}");
    }
    let output = bare_parabyte(dir.path())
        .args(["--manifest", "m.txt", "ls", "s3://b/"])
        .output()
        .unwrap();
    refused_with(&output, &["'--manifest' is an option of parabyte cp"]);
}

/// Text a store sends (an error's `<Message>`) is escaped in every line parabyte prints, so
/// a hostile store cannot start a line of its own, clear the screen or recolour it.
#[test]
fn a_stores_error_message_cannot_drive_the_terminal() {
    let server = HostileServer::start(|request| {
        let message = "denied\u{1b}[2J\nerror: fake line from the store\u{202e}";
        match request.is_listing() {
            true => Reply::s3_error(403, "AccessDenied", message),
            false => Reply::s3_error(500, "InternalError", message),
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let endpoint = server.endpoint();
    for args in [
        vec!["cp", "--retries", "0", "s3://b/k", "out"],
        vec!["cp", "--retries", "0", "s3://b/p/", "out/"],
        vec!["ls", "s3://b/p/"],
    ] {
        let output = bare_parabyte(dir.path())
            .env("AWS_ACCESS_KEY_ID", "id")
            .env("AWS_SECRET_ACCESS_KEY", "secret")
            .args(&args[..1])
            .args(["--endpoint-url", &endpoint])
            .args(&args[1..])
            .output()
            .unwrap();
        let text = stderr(&output);
        assert!(!output.status.success(), "{args:?}: {text}");
        assert!(
            text.contains("denied"),
            "{args:?}: the message is shown: {text}"
        );
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{202e}'),
            "{args:?}: {text:?}"
        );
        assert!(
            !text
                .lines()
                .any(|line| line.starts_with("error: fake line")),
            "{args:?}: a line of the store's own: {text:?}"
        );
    }
}
