//! `--bind`: connections take the given local addresses in turn, so one host can use
//! several network interfaces. On loopback every 127.0.0.0/8 address is this machine's,
//! and the proxy's server side records where each connection came from.

mod common;

use std::net::IpAddr;

use bytes::Bytes;
use common::{bare_parabyte, run, stderr, Bed};
use parabyte_testkit::{payload, HostileServer, Reply, ServerKind};

const MIB: u64 = 1 << 20;
const SIZE: u64 = 8 * MIB + 99;

fn download(bed: &Bed, extra: &[&str]) {
    bed.admin
        .put_generated(&bed.bucket, "big.bin", 5, SIZE)
        .unwrap();
    let source = bed.url("big.bin");
    let mut args = vec!["cp", "--part-size", "1MiB", "--ranges-per-object", "4"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[source.as_str(), "out.bin"]);
    let output = run(bed.parabyte().args(args));
    assert!(output.status.success(), "{}", stderr(&output));
    let written = std::fs::read(bed.path("out.bin")).unwrap();
    assert!(written == payload(5, SIZE as usize), "content differs");
}

fn connections_from(bed: &Bed, address: &str) -> usize {
    let address: IpAddr = address.parse().unwrap();
    bed.proxy
        .connection_peers()
        .into_iter()
        .filter(|peer| *peer == address)
        .count()
}

#[test]
fn connections_take_each_bound_address_in_turn() {
    let bed = Bed::new(ServerKind::Versitygw, "bind-two");
    bed.proxy.reset();
    download(&bed, &["--bind", "127.0.0.1,127.0.0.2"]);
    let first = connections_from(&bed, "127.0.0.1");
    let second = connections_from(&bed, "127.0.0.2");
    assert!(
        first >= 1 && second >= 1,
        "connections from 127.0.0.1: {first}, from 127.0.0.2: {second}"
    );
    assert_eq!(first + second, bed.proxy.connection_peers().len());
}

#[test]
fn one_bound_address_carries_every_connection() {
    let bed = Bed::new(ServerKind::Versitygw, "bind-one");
    bed.proxy.reset();
    download(&bed, &["--bind", "127.0.0.3"]);
    let peers = bed.proxy.connection_peers();
    assert!(!peers.is_empty());
    assert_eq!(
        connections_from(&bed, "127.0.0.3"),
        peers.len(),
        "{peers:?}"
    );
}

#[test]
fn a_bind_value_that_is_no_address_is_a_usage_error() {
    let bed = Bed::new(ServerKind::Versitygw, "bind-bad");
    let output =
        run(bed
            .parabyte()
            .args(["cp", "--bind", "127.0.0.1,eth0", &bed.url("x"), "out.bin"]));
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("eth0"), "{}", stderr(&output));
    assert_eq!(bed.proxy.counts().get, 0);
}

/// Addresses that name no interface to send from (the unspecified address, multicast,
/// broadcast), and one of a family the endpoint does not have, are refused before any
/// request, naming the flag; the unspecified one used to be taken and ignored.
#[test]
fn a_bind_address_that_cannot_reach_the_endpoint_is_refused_naming_the_flag() {
    let bed = Bed::new(ServerKind::Versitygw, "bind-refused");
    for (address, why) in [
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("255.255.255.255", "broadcast"),
        ("::1", "IPv4"),
    ] {
        let output = run(bed
            .parabyte()
            .args(["cp", "--bind", address, &bed.url("x"), "out.bin"]));
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{address}: {text}");
        assert!(
            text.contains(&format!("--bind {address}")) && text.contains(why),
            "{address}: {text}"
        );
    }
    assert_eq!(bed.proxy.counts().get, 0);
}

/// A single web URL whose host is an address of the other family than every `--bind`
/// address is refused as a prefix's endpoint is, before any request: it used to go out,
/// fail to connect six times and end with exit 1.
#[test]
fn a_bind_address_of_the_other_family_than_a_web_url_is_refused_naming_the_flag() {
    let server = HostileServer::start(|_| Reply::status(200).body(Bytes::from_static(b"hi\n")));
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/file.txt", server.endpoint());
    let mut command = bare_parabyte(dir.path());
    command.args(["cp", "--bind", "::1", &url, "out.txt"]);
    let output = run(&mut assert_cmd::Command::from_std(command));
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(
        text.contains("--bind ::1") && text.contains("IPv4"),
        "{text}"
    );
    assert_eq!(server.request_count(), 0);
    assert!(!dir.path().join("out.txt").exists());

    // With an address of its family among them, that one carries the connection.
    let mut command = bare_parabyte(dir.path());
    command.args(["cp", "--bind", "::1,127.0.0.4", &url, "out.txt"]);
    let output = run(&mut assert_cmd::Command::from_std(command));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read(dir.path().join("out.txt")).unwrap(), b"hi\n");
}
