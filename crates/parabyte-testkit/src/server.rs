//! Real S3-compatible servers on loopback, each in its own temporary directory.

use std::ffi::OsString;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once, OnceLock};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::admin::AdminClient;
use crate::error::{Error, Result};
use crate::kind::ServerKind;
use crate::process::{find_binary, ServerProcess};
use crate::tls::ServerCerts;

/// The fixed credentials every test server accepts.
pub const ACCESS_KEY: &str = "parabytetest";
pub const SECRET_KEY: &str = "parabytetestsecret123";
pub const REGION: &str = "us-east-1";

/// SeaweedFS needs a few seconds on a busy 2-core machine; this only bounds a broken start.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// Enough for `weed mini`'s one-second pre-stop pause.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// Free ports are found by binding and releasing them, so another process can win the race.
const START_ATTEMPTS: usize = 3;
const READINESS_BUCKET: &str = "parabyte-testkit-readiness";
const DIR_PREFIX: &str = "parabyte-testkit-";
/// In each server directory: the owning process id, then the server's stray files.
const OWNER_FILE: &str = "owner";

// Here rather than in admin.rs, so that the S3 client knows nothing of the servers.
impl AdminClient {
    /// A client for `server` with its credentials, trusting its private CA if it has one.
    pub fn for_server(server: &TestServer) -> AdminClient {
        let client = AdminClient::new(
            &server.endpoint(),
            server.access_key(),
            server.secret_key(),
            server.region(),
        );
        match server.ca_pem() {
            Some(ca_pem) => client
                .with_ca_pem(ca_pem.as_bytes())
                .expect("the test kit's own CA certificate parses"),
            None => client,
        }
    }
}

/// A running server, listening only on 127.0.0.1, killed (and its data removed) on drop.
#[derive(Debug)]
pub struct TestServer {
    kind: ServerKind,
    endpoint: String,
    process: ServerProcess,
    /// Taken and removed only after the process has stopped.
    dir: Mutex<Option<TempDir>>,
    /// Files the server leaves outside its directory, removed after it stops.
    strays: Vec<PathBuf>,
    /// Only for a server started with [`TestServer::start_tls`].
    certs: Option<ServerCerts>,
    /// The region it expects requests to be signed for.
    region: String,
}

/// Plain HTTP or HTTPS with a certificate from a private CA of the server's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Http,
    Https,
}

impl Transport {
    fn scheme(self) -> &'static str {
        match self {
            Transport::Http => "http",
            Transport::Https => "https",
        }
    }
}

impl TestServer {
    /// Starts a server of `kind` and returns once it has created a bucket and stored and served
    /// an object.
    pub fn start(kind: ServerKind) -> Result<TestServer> {
        Self::start_with(kind, Transport::Http, REGION)
    }

    /// Like [`TestServer::start`], but expecting requests signed for `region`, as a store
    /// outside us-east-1 does (versitygw and MinIO check it; SeaweedFS does not).
    pub fn start_in_region(kind: ServerKind, region: &str) -> Result<TestServer> {
        Self::start_with(kind, Transport::Http, region)
    }

    /// Like [`TestServer::start`], but serving HTTPS with a certificate for `127.0.0.1` and
    /// `localhost` signed by a fresh private CA, whose certificate is at
    /// [`TestServer::ca_pem_path`]. A client trusts the server only if it is given that file.
    pub fn start_tls(kind: ServerKind) -> Result<TestServer> {
        Self::start_with(kind, Transport::Https, REGION)
    }

    fn start_with(kind: ServerKind, transport: Transport, region: &str) -> Result<TestServer> {
        let binary = find_binary(kind.binary())?;
        let mut attempt = 1;
        loop {
            match Self::start_once(kind, &binary, transport, region) {
                Err(Error::ServerExited { .. }) if attempt < START_ATTEMPTS => attempt += 1,
                result => return result,
            }
        }
    }

    /// `http://127.0.0.1:PORT`, or `https://127.0.0.1:PORT` for a server started with
    /// [`TestServer::start_tls`]; for path-style requests.
    pub fn endpoint(&self) -> String {
        self.endpoint.clone()
    }

    /// The private CA's certificate (PEM) of a server started with [`TestServer::start_tls`]:
    /// what a client passes as `--ca-bundle` or `AWS_CA_BUNDLE`. Removed with the server.
    pub fn ca_pem_path(&self) -> Option<&Path> {
        self.certs.as_ref().map(|certs| certs.ca_path.as_path())
    }

    /// The same CA certificate as [`TestServer::ca_pem_path`], in memory.
    pub fn ca_pem(&self) -> Option<&str> {
        self.certs.as_ref().map(|certs| certs.ca_pem.as_str())
    }

    pub fn access_key(&self) -> &str {
        ACCESS_KEY
    }

    pub fn secret_key(&self) -> &str {
        SECRET_KEY
    }

    pub fn region(&self) -> &str {
        &self.region
    }

    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    /// The server's combined stdout and stderr, gone once the server is dropped.
    pub fn log_path(&self) -> &Path {
        self.process.log_path()
    }

    fn start_once(
        kind: ServerKind,
        binary: &Path,
        transport: Transport,
        region: &str,
    ) -> Result<TestServer> {
        sweep_abandoned_dirs();
        let dir = tempfile::Builder::new().prefix(DIR_PREFIX).tempdir()?;
        let certs = match transport {
            Transport::Http => None,
            Transport::Https => Some(ServerCerts::issue(dir.path())?),
        };
        let plan = match kind {
            ServerKind::Versitygw => versitygw_plan(dir.path(), certs.as_ref(), region)?,
            ServerKind::SeaweedFs => weed_plan(dir.path(), certs.as_ref())?,
            ServerKind::Minio => minio_plan(dir.path(), certs.as_ref(), region)?,
            ServerKind::Moto => moto_plan(certs.as_ref())?,
        };
        let owner = std::iter::once(std::process::id().to_string())
            .chain(plan.strays.iter().map(|stray| stray.display().to_string()))
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(dir.path().join(OWNER_FILE), owner)?;
        let process = ServerProcess::spawn_with_env(
            kind.binary(),
            binary,
            &plan.args,
            &plan.env,
            dir.path(),
            dir.path().join("server.log"),
        )?;
        // Built before waiting so that a failed start is cleaned up by Drop.
        let server = TestServer {
            kind,
            endpoint: format!("{}://127.0.0.1:{}", transport.scheme(), plan.s3_port),
            process,
            dir: Mutex::new(Some(dir)),
            strays: plan.strays,
            certs,
            region: region.to_owned(),
        };
        server.wait_until_ready()?;
        Ok(server)
    }

    fn wait_until_ready(&self) -> Result<()> {
        // A thread of its own, so this works even when called from inside an async test.
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()?;
                    runtime.block_on(self.poll_until_ready())
                })
                .join()
                .expect("readiness probe panicked")
        })
    }

    async fn poll_until_ready(&self) -> Result<()> {
        let admin = AdminClient::for_server(self);
        let started = Instant::now();
        let mut delay = Duration::from_millis(50);
        loop {
            if let Some(status) = self.process.exit_status() {
                return Err(Error::ServerExited {
                    kind: self.kind,
                    status,
                    log_excerpt: self.process.log_excerpt(),
                });
            }
            let last_error = match tokio::time::timeout(PROBE_TIMEOUT, probe(&admin)).await {
                Ok(Ok(())) => return Ok(()),
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("no answer within {PROBE_TIMEOUT:?}"),
            };
            if started.elapsed() >= READY_TIMEOUT {
                return Err(Error::ServerTimeout {
                    kind: self.kind,
                    waited: started.elapsed(),
                    last_error,
                    log_excerpt: self.process.log_excerpt(),
                });
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_millis(500));
        }
    }

    /// Stops the process, then removes its data directory and stray files.
    fn shutdown(&self, grace: Duration) {
        self.process.stop(grace);
        let dir = self.dir.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(dir);
        for stray in &self.strays {
            let _ = std::fs::remove_file(stray);
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown(STOP_GRACE);
    }
}

/// "Answers S3 requests" means the whole write and read path works, not just that a port is
/// open: SeaweedFS accepts connections well before its volume server can store anything.
async fn probe(admin: &AdminClient) -> Result<()> {
    const BODY: &[u8] = b"parabyte readiness probe";
    admin.create_bucket(READINESS_BUCKET).await?;
    admin.put_object(READINESS_BUCKET, "probe", BODY).await?;
    let read_back = admin.get_object(READINESS_BUCKET, "probe").await?;
    if read_back != BODY {
        return Err(std::io::Error::other("the probe object came back different").into());
    }
    admin.delete_object(READINESS_BUCKET, "probe").await?;
    admin.delete_bucket(READINESS_BUCKET).await
}

type SharedCells = [OnceLock<TestServer>; ServerKind::ALL.len()];
/// One cell per kind, in the order of [`ServerKind::ALL`].
static SHARED: SharedCells = [const { OnceLock::new() }; ServerKind::ALL.len()];
static SHARED_TLS: SharedCells = [const { OnceLock::new() }; ServerKind::ALL.len()];

/// One server of `kind` per test process, started on first use, for tests that each work in a
/// bucket of their own (see [`crate::unique_bucket_name`]). Panics if it cannot start.
pub fn shared(kind: ServerKind) -> &'static TestServer {
    shared_in(&SHARED[kind.index()], kind, Transport::Http)
}

/// Like [`shared`], but one HTTPS server of `kind` (see [`TestServer::start_tls`]), separate
/// from the plain one.
pub fn shared_tls(kind: ServerKind) -> &'static TestServer {
    shared_in(&SHARED_TLS[kind.index()], kind, Transport::Https)
}

fn shared_in(
    cell: &'static OnceLock<TestServer>,
    kind: ServerKind,
    transport: Transport,
) -> &'static TestServer {
    cell.get_or_init(|| {
        stop_shared_servers_at_exit();
        TestServer::start_with(kind, transport, REGION).unwrap_or_else(|e| {
            let scheme = transport.scheme();
            panic!("could not start the shared {kind} server ({scheme}): {e}")
        })
    })
}

/// Statics are never dropped, so the shared servers are stopped and their directories removed
/// when the process exits normally; PR_SET_PDEATHSIG covers the abnormal exits.
fn stop_shared_servers_at_exit() {
    extern "C" fn stop_shared_servers() {
        for cell in SHARED.iter().chain(&SHARED_TLS) {
            if let Some(server) = cell.get() {
                server.shutdown(Duration::ZERO);
            }
        }
    }
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // SAFETY: registers a plain function that takes no locks other than the servers' own.
        unsafe { libc::atexit(stop_shared_servers) };
    });
}

/// A process killed outright (a CI timeout, `kill -9`) cannot clean up, and a benchmark's data
/// can be gigabytes; so the first start in each process removes what dead owners left behind.
fn sweep_abandoned_dirs() {
    static SWEEP: Once = Once::new();
    SWEEP.call_once(|| {
        let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
            return;
        };
        for entry in entries.flatten() {
            if !entry.file_name().to_string_lossy().starts_with(DIR_PREFIX) {
                continue;
            }
            // No owner file yet: another process may be setting it up right now.
            let Ok(owner) = std::fs::read_to_string(entry.path().join(OWNER_FILE)) else {
                continue;
            };
            let mut lines = owner.lines();
            let Some(pid) = lines.next().and_then(|pid| pid.parse::<libc::pid_t>().ok()) else {
                continue;
            };
            // SAFETY: signal 0 only asks whether the process exists.
            let gone = unsafe { libc::kill(pid, 0) } != 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
            if gone {
                lines.for_each(|stray| drop(std::fs::remove_file(stray)));
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    });
}

/// How to start one server: its arguments and environment, where it will serve S3, what it
/// leaves behind.
struct LaunchPlan {
    s3_port: u16,
    args: Vec<OsString>,
    env: Vec<(&'static str, OsString)>,
    strays: Vec<PathBuf>,
}

fn versitygw_plan(dir: &Path, certs: Option<&ServerCerts>, region: &str) -> Result<LaunchPlan> {
    let root = dir.join("root");
    // Outside the root, or versitygw would list it as a bucket.
    let versions = dir.join("versions");
    std::fs::create_dir(&root)?;
    std::fs::create_dir(&versions)?;
    let s3_port = release(reserve_ports(1)?)[0];
    let mut args: Vec<OsString> = [
        "--access",
        ACCESS_KEY,
        "--secret",
        SECRET_KEY,
        "--region",
        region,
        "--port",
        &format!("127.0.0.1:{s3_port}"),
        "--keep-alive",
        "--quiet",
    ]
    .into_iter()
    .map(OsString::from)
    .collect();
    if let Some(certs) = certs {
        // Global options, so before the backend's name.
        args.extend([
            "--cert".into(),
            certs.cert_path.clone().into(),
            "--key".into(),
            certs.key_path.clone().into(),
        ]);
    }
    args.extend([
        "posix".into(),
        "--versioning-dir".into(),
        versions.into_os_string(),
        root.into_os_string(),
    ]);
    Ok(LaunchPlan {
        s3_port,
        args,
        env: Vec::new(),
        strays: Vec::new(),
    })
}

fn weed_plan(dir: &Path, certs: Option<&ServerCerts>) -> Result<LaunchPlan> {
    let s3_config = dir.join("s3.json");
    std::fs::write(
        &s3_config,
        format!(
            r#"{{"identities":[{{"name":"parabyte","credentials":[{{"accessKey":"{ACCESS_KEY}","secretKey":"{SECRET_KEY}"}}],"actions":["Admin","Read","List","Tagging","Write"]}}]}}"#
        ),
    )?;
    let data = dir.join("data");
    std::fs::create_dir(&data)?;
    // weed's maintenance worker dials the admin server at its HTTP port + 10000 whatever
    // -admin.port.grpc says, so the admin gRPC port must be exactly that.
    let mut listeners = reserve_port_pair(10_000)?;
    listeners.extend(reserve_ports(9)?);
    let ports = release(listeners);
    let [admin, admin_grpc, master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc, webdav] =
        ports[..]
    else {
        unreachable!("reserved eleven ports");
    };
    let path = |name: &str| dir.join(name).display().to_string();
    // Every port is explicit: weed mini quietly moves a default port that is taken, but fails
    // on an explicit one, which START_ATTEMPTS then retries with fresh ports.
    let mut args: Vec<OsString> = [
        "mini".to_owned(),
        format!("-dir={}", data.display()),
        "-ip=127.0.0.1".into(),
        "-ip.bind=127.0.0.1".into(),
        format!("-master.port={master}"),
        format!("-master.port.grpc={master_grpc}"),
        "-master.telemetry=false".into(),
        format!("-volume.port={volume}"),
        format!("-volume.port.grpc={volume_grpc}"),
        format!("-filer.port={filer}"),
        format!("-filer.port.grpc={filer_grpc}"),
        format!("-filer.localSocket={}", path("filer.sock")),
        format!("-s3.port={s3}"),
        format!("-s3.port.grpc={s3_grpc}"),
        format!("-s3.localSocket={}", path("s3.sock")),
        format!("-s3.config={}", s3_config.display()),
        // Real S3 answers NoSuchBucket; tests must see the same here.
        "-s3.autoCreateBucket=false".into(),
        "-s3.port.iceberg=0".into(),
        "-s3.port.lance=0".into(),
        // Disabled, but weed mini still checks that its port is free.
        "-webdav=false".into(),
        format!("-webdav.port={webdav}"),
        "-admin.ui=false".into(),
        format!("-admin.port={admin}"),
        format!("-admin.port.grpc={admin_grpc}"),
        format!("-admin.dataDir={}", path("admin")),
    ]
    .into_iter()
    .map(OsString::from)
    .collect();
    if let Some(certs) = certs {
        // With a certificate, weed serves HTTPS on -s3.port itself.
        args.extend([
            format!("-s3.cert.file={}", certs.cert_path.display()).into(),
            format!("-s3.key.file={}", certs.key_path.display()).into(),
        ]);
    }
    // weed mini puts its gRPC sockets in /tmp whatever TMPDIR says, and keeps some after exit.
    let strays = [
        ("master", master_grpc),
        ("volume", volume_grpc),
        ("filer", filer_grpc),
        ("s3", s3_grpc),
        ("admin", admin_grpc),
    ]
    .into_iter()
    .map(|(service, port)| PathBuf::from(format!("/tmp/seaweedfs-{service}-grpc-{port}.sock")))
    .collect();
    Ok(LaunchPlan {
        s3_port: s3,
        args,
        env: Vec::new(),
        strays,
    })
}

fn minio_plan(dir: &Path, certs: Option<&ServerCerts>, region: &str) -> Result<LaunchPlan> {
    let data = dir.join("data");
    std::fs::create_dir(&data)?;
    let s3_port = release(reserve_ports(1)?)[0];
    let mut args: Vec<OsString> = vec![
        "server".into(),
        "--address".into(),
        format!("127.0.0.1:{s3_port}").into(),
        "--quiet".into(),
    ];
    if let Some(certs) = certs {
        // MinIO serves HTTPS on --address when it finds these two names in --certs-dir.
        let certs_dir = dir.join("certs");
        std::fs::create_dir(&certs_dir)?;
        std::fs::copy(&certs.cert_path, certs_dir.join("public.crt"))?;
        std::fs::copy(&certs.key_path, certs_dir.join("private.key"))?;
        args.extend(["--certs-dir".into(), certs_dir.into_os_string()]);
    }
    args.push(data.into_os_string());
    // The credentials and region can only be given as variables. Without MINIO_BROWSER=off the
    // web console would listen on a random port on every interface.
    let env = vec![
        ("MINIO_ROOT_USER", ACCESS_KEY.into()),
        ("MINIO_ROOT_PASSWORD", SECRET_KEY.into()),
        ("MINIO_SITE_REGION", region.into()),
        ("MINIO_BROWSER", "off".into()),
        // A static key, so SSE-S3 and SSE-KMS uploads can be tested (this key's name is the
        // KMS key ID they name).
        (
            "MINIO_KMS_SECRET_KEY",
            format!("{MINIO_KMS_KEY_ID}:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").into(),
        ),
    ];
    Ok(LaunchPlan {
        s3_port,
        args,
        env,
        strays: Vec::new(),
    })
}

/// The KMS key MinIO holds (a static test key): what `--sse-kms-key-id` names in tests.
pub const MINIO_KMS_KEY_ID: &str = "parabyte-test-key";

/// moto keeps its objects in memory and takes any credentials and region.
fn moto_plan(certs: Option<&ServerCerts>) -> Result<LaunchPlan> {
    let s3_port = release(reserve_ports(1)?)[0];
    let mut args: Vec<OsString> = vec![
        "-H".into(),
        "127.0.0.1".into(),
        "-p".into(),
        s3_port.to_string().into(),
    ];
    if let Some(certs) = certs {
        args.extend([
            "--ssl-cert".into(),
            certs.cert_path.clone().into_os_string(),
            "--ssl-key".into(),
            certs.key_path.clone().into_os_string(),
        ]);
    }
    Ok(LaunchPlan {
        s3_port,
        args,
        env: Vec::new(),
        strays: Vec::new(),
    })
}

/// Held open together so that the ports are distinct; released just before the server binds.
pub(crate) fn reserve_ports(count: usize) -> Result<Vec<TcpListener>> {
    (0..count)
        .map(|_| Ok(TcpListener::bind(("127.0.0.1", 0))?))
        .collect()
}

/// Two free ports exactly `offset` apart.
fn reserve_port_pair(offset: u16) -> Result<Vec<TcpListener>> {
    for _ in 0..100 {
        let first = TcpListener::bind(("127.0.0.1", 0))?;
        let Some(second_port) = first.local_addr()?.port().checked_add(offset) else {
            continue;
        };
        if let Ok(second) = TcpListener::bind(("127.0.0.1", second_port)) {
            return Ok(vec![first, second]);
        }
    }
    Err(std::io::Error::other(format!("found no two free ports {offset} apart")).into())
}

pub(crate) fn release(listeners: Vec<TcpListener>) -> Vec<u16> {
    listeners
        .into_iter()
        .map(|listener| listener.local_addr().expect("bound listener").port())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_round_trip() {
        for kind in ServerKind::ALL {
            assert_eq!(kind.name().parse::<ServerKind>(), Ok(kind));
        }
        assert_eq!("SeaweedFS".parse::<ServerKind>(), Ok(ServerKind::SeaweedFs));
        assert_eq!("MinIO".parse::<ServerKind>(), Ok(ServerKind::Minio));
        let unknown = "garage".parse::<ServerKind>().unwrap_err();
        assert!(
            unknown.contains("versitygw, seaweedfs, minio, moto"),
            "{unknown}"
        );
    }

    #[test]
    fn kinds_are_indexed_in_the_order_of_all() {
        for (index, kind) in ServerKind::ALL.into_iter().enumerate() {
            assert_eq!(kind.index(), index, "{kind}");
        }
    }

    #[test]
    fn port_pair_is_offset_and_free() {
        let listeners = reserve_port_pair(10_000).unwrap();
        let ports = release(listeners);
        assert_eq!(ports[1], ports[0] + 10_000);
    }

    #[test]
    fn each_server_starts_answers_and_cleans_up() {
        for kind in ServerKind::ALL {
            let server = TestServer::start(kind).unwrap_or_else(|e| panic!("{e}"));
            assert!(server.endpoint().starts_with("http://127.0.0.1:"));
            let dir = server.log_path().parent().unwrap().to_owned();
            let strays = server.strays.clone();
            assert!(dir.exists());
            drop(server);
            assert!(!dir.exists(), "{kind} left {}", dir.display());
            assert!(
                strays.iter().all(|stray| !stray.exists()),
                "{kind} left {strays:?}"
            );
        }
    }

    #[test]
    fn https_server_keeps_its_certificates_in_its_directory() {
        let server = TestServer::start_tls(ServerKind::Versitygw).unwrap_or_else(|e| panic!("{e}"));
        assert!(server.endpoint().starts_with("https://127.0.0.1:"));
        let dir = server.log_path().parent().unwrap().to_owned();
        let ca = server.ca_pem_path().unwrap().to_owned();
        assert!(ca.starts_with(&dir), "{}", ca.display());
        assert_eq!(
            std::fs::read_to_string(&ca).unwrap(),
            server.ca_pem().unwrap()
        );
        drop(server);
        assert!(!ca.exists(), "the CA outlived its server");
    }
}
