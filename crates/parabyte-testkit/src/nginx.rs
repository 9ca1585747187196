//! nginx on loopback: a real web server for parabyte's HTTP source, with locations that
//! behave like the other kinds of server parabyte meets. Installed from Debian's packages by
//! `scripts/install-test-servers.sh`; each [`WebServer`] runs its own nginx, with its own
//! configuration, files and logs in a temporary directory, on a free 127.0.0.1 port.

use std::fmt::Write as _;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::error::{Error, Result};
use crate::process::{find_binary, ServerProcess};
use crate::server::{release, reserve_ports};

const READY_TIMEOUT: Duration = Duration::from_secs(20);
const STOP_GRACE: Duration = Duration::from_secs(5);

/// How a location of the [`WebServer`] serves the same files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serving {
    /// Range requests, a strong ETag and Last-Modified: a well-behaved static server.
    Ranges,
    /// Last-Modified but no ETag: later ranges must be pinned by date.
    NoEtag,
    /// Range headers ignored (`max_ranges 0`): every GET is a 200 with the whole file.
    NoRanges,
    /// Chunked 200s without Content-Length or Range support (nginx's SSI filter, which
    /// changes nothing in files without SSI commands).
    Chunked,
}

impl Serving {
    fn prefix(self) -> &'static str {
        match self {
            Serving::Ranges => "/files/",
            Serving::NoEtag => "/no-etag/",
            Serving::NoRanges => "/no-ranges/",
            Serving::Chunked => "/chunked/",
        }
    }

    fn directives(self) -> &'static str {
        match self {
            Serving::Ranges => "",
            Serving::NoEtag => "etag off;",
            Serving::NoRanges => "max_ranges 0;",
            Serving::Chunked => "ssi on; ssi_types *; ssi_last_modified off;",
        }
    }
}

/// A running nginx serving the files under [`WebServer::root`]; stopped and removed on drop.
#[derive(Debug)]
pub struct WebServer {
    process: ServerProcess,
    endpoint: String,
    root: PathBuf,
    /// Removed after the process has stopped (field order: process first).
    _dir: TempDir,
}

impl WebServer {
    /// nginx serving [`WebServer::root`] in every [`Serving`] way.
    pub fn start() -> Result<WebServer> {
        WebServer::start_with_redirects(&[])
    }

    /// Like [`WebServer::start`], and `GET /PATH` answers `302 Location: TARGET` for each
    /// `(PATH, TARGET)` (a presigned URL, say).
    pub fn start_with_redirects(redirects: &[(&str, &str)]) -> Result<WebServer> {
        let binary = find_binary("nginx")?;
        let dir = tempfile::Builder::new()
            .prefix("parabyte-testkit-nginx-")
            .tempdir()?;
        let root = dir.path().join("root");
        std::fs::create_dir_all(dir.path().join("temp"))?;
        std::fs::create_dir(&root)?;
        let port = release(reserve_ports(1)?)[0];
        let config = dir.path().join("nginx.conf");
        std::fs::write(&config, configuration(dir.path(), &root, port, redirects))?;
        let args = [
            "-e".into(),
            dir.path().join("error.log").into_os_string(),
            "-p".into(),
            dir.path().as_os_str().to_owned(),
            "-c".into(),
            config.into_os_string(),
        ];
        let process = ServerProcess::spawn(
            "nginx",
            &binary,
            &args,
            dir.path(),
            dir.path().join("server.log"),
        )?;
        let server = WebServer {
            process,
            endpoint: format!("http://127.0.0.1:{port}"),
            root,
            _dir: dir,
        };
        server.wait_until_listening(port)?;
        Ok(server)
    }

    /// The directory whose files are served; write test files here.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `http://127.0.0.1:PORT`, for a proxy in front.
    pub fn endpoint(&self) -> String {
        self.endpoint.clone()
    }

    /// The URL of `path` (relative to the root) served the `serving` way.
    pub fn url(&self, serving: Serving, path: &str) -> String {
        format!("{}{}{path}", self.endpoint, serving.prefix())
    }

    fn wait_until_listening(&self, port: u16) -> Result<()> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.process.exit_status() {
                return Err(Error::WebServer(format!(
                    "nginx exited during startup ({status}); its log:\n{}\n{}",
                    self.process.log_excerpt(),
                    std::fs::read_to_string(self._dir.path().join("error.log")).unwrap_or_default()
                )));
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(());
            }
            if started.elapsed() > READY_TIMEOUT {
                return Err(Error::WebServer(format!(
                    "nginx did not listen on 127.0.0.1:{port} within {READY_TIMEOUT:?}"
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.process.stop(STOP_GRACE);
    }
}

/// One process (`master_process off`), so it never switches user and stops with one signal;
/// every path nginx writes is inside `dir`.
fn configuration(dir: &Path, root: &Path, port: u16, redirects: &[(&str, &str)]) -> String {
    let dir = dir.display();
    let root = root.display();
    let mut locations = String::new();
    for serving in [
        Serving::Ranges,
        Serving::NoEtag,
        Serving::NoRanges,
        Serving::Chunked,
    ] {
        let _ = writeln!(
            locations,
            "        location {} {{ alias {root}/; {} }}",
            serving.prefix(),
            serving.directives()
        );
    }
    for (path, target) in redirects {
        let _ = writeln!(
            locations,
            "        location = /{} {{ return 302 \"{target}\"; }}",
            path.trim_start_matches('/')
        );
    }
    format!(
        "daemon off;
master_process off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {dir}/temp/body;
    proxy_temp_path {dir}/temp/proxy;
    fastcgi_temp_path {dir}/temp/fastcgi;
    uwsgi_temp_path {dir}/temp/uwsgi;
    scgi_temp_path {dir}/temp/scgi;
    default_type application/octet-stream;
    sendfile on;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
{locations}    }}
}}
"
    )
}
