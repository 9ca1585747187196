"""The loopback store the benchmark runs against.

Two versitygw processes serve one posix root on tmpfs: one plain HTTP, one HTTPS with a
certificate from a CA made for the run. nginx serves the same bucket directory as a plain web
server (Range, ETag, Last-Modified) for the HTTP workloads. Each writes an access log, which is
how requests are counted: on the server, not by the tools. toxiproxy sits in front of all three
with 10 ms of latency each way and a 50 MB/s bandwidth cap per connection; direct runs skip it.

The harness starts versitygw itself instead of through the test kit's `testbed`: it needs
`--access-log`, TLS and two listeners over one root, none of which `testbed up` offers, and the
test kit's server launcher belongs to the tests.

`Store(server="minio")` serves plain HTTP from MinIO instead, behind the same toxiproxy, for
uploads only (`bench/upload.py --server minio`): a second store whose CompleteMultipartUpload
does not copy the parts' bytes into one file as versitygw's posix backend does. MinIO keeps
objects in its own format and writes no access log: what a run stored is read back through
its S3 API, and requests are not counted.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from .crc64 import crc64nvme_of_zeros

# The test kit's fixed credentials (crates/parabyte-testkit/src/server.rs), so a person who knows
# one setup knows the other.
ACCESS_KEY = "parabytetest"
SECRET_KEY = "parabytetestsecret123"
REGION = "us-east-1"
BUCKET = "bench"
# The servers a `Store` can start: versitygw for everything, MinIO for uploads.
SERVERS = ("versitygw", "minio")

# The network toxiproxy emulates.
LATENCY_MS_EACH_WAY = 10
ROUND_TRIP_S = 2 * LATENCY_MS_EACH_WAY / 1000
RATE_KB_PER_S = 50_000  # toxiproxy's bandwidth toxic counts KB of 1000 bytes
RATE_BYTES_PER_S = RATE_KB_PER_S * 1000

START_TIMEOUT_S = 30

# The part size of the multipart uploads with composite checksums (w2c, w3c): the AWS CLI's.
UPLOAD_PART = 8 << 20

# What the store keeps for the objects under each prefix that W2 and W3 download: how a
# checksum-mode HEAD describes them (x-amz-checksum-type), None for no checksum at all.
CHECKSUMS = {"w2": "FULL_OBJECT", "w3": "FULL_OBJECT", "w2c": "COMPOSITE", "w3c": "COMPOSITE",
             "w2o": None, "w3o": None, "w9": "FULL_OBJECT"}


@dataclass(frozen=True)
class Sizes:
    """How big each workload's data is. `--quick` shrinks everything."""

    w1_count: int = 1000
    w1_size: int = 1024
    w2_size: int = 1 << 30
    w3_count: int = 64
    w3_size: int = 16 << 20
    w4_dirs: int = 100
    w4_per_dir: int = 1000
    w4_size: int = 64
    # W4k: the W4 shape at 20,000 keys, where finding the first splits weighs more.
    w4k_dirs: int = 20
    w8_count: int = 1000
    w8_size: int = 64 << 10
    w9_size: int = 10 << 30

    @property
    def w4_count(self) -> int:
        return self.w4_dirs * self.w4_per_dir

    @property
    def w4k_count(self) -> int:
        return self.w4k_dirs * self.w4_per_dir


FULL = Sizes()
QUICK = Sizes(w1_count=200, w2_size=128 << 20, w3_count=16, w3_size=8 << 20, w4_dirs=10,
              w4_per_dir=500, w4k_dirs=4, w8_count=200, w9_size=256 << 20)


@dataclass
class Dataset:
    """What is in the bucket: for each prefix, relative name -> (size, md5 hex)."""

    objects: dict[str, dict[str, tuple[int, str]]] = field(default_factory=dict)

    def under(self, prefix: str) -> dict[str, tuple[int, str]]:
        return self.objects[prefix]


def _die_with_parent() -> None:
    """Runs in the child before exec: a harness that dies takes its servers with it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def is_tmpfs(path: Path) -> bool:
    out = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True)
    return out.stdout.strip() == "tmpfs"


def _wait_for_port(port: int, process: subprocess.Popen, what: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}; see {log}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} in {START_TIMEOUT_S}s; see {log}")


class Store:
    """versitygw (plain and TLS) and toxiproxy on 127.0.0.1, data on tmpfs. A context manager:
    leaving it stops every process and removes the directory."""

    def __init__(self, work: Path, repo: Path, cap_upstream: bool = False,
                 proxy_metrics: bool = False, server: str = "versitygw"):
        if server not in SERVERS:
            raise ValueError(f"unknown server {server!r}: one of {', '.join(SERVERS)}")
        self.work = work
        self.repo = repo
        self.server = server
        # Uploads (bench/upload.py): the 50 MB/s cap on what clients send too, and toxiproxy's
        # byte counters. Off by default: run.py's downloads keep the proxy as it was.
        self.cap_upstream = cap_upstream
        self.proxy_metrics = proxy_metrics
        self.root = work / "root"
        self.logs = work / "logs"
        self.certs = work / "certs"
        self.processes: dict[str, subprocess.Popen] = {}
        self.ports: dict[str, int] = {}
        self.access_logs: dict[str, Path] = {}
        # toxiproxy's own output: one "Accepted client" line per connection, the counter.
        self.toxiproxy_log = self.logs / "toxiproxy.out"

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> "Store":
        self.work.mkdir(parents=True, exist_ok=False)
        for d in (self.root, self.logs, self.certs):
            d.mkdir()
        try:
            if self.server == "minio":
                self._start_minio()
                self._start_toxiproxy(proxies=(("proxy", "plain"),))
                return self
            self._make_certificates()
            self._start_versitygw("plain", tls=False)
            self._start_versitygw("tls", tls=True)
            self._start_nginx()
            self._start_toxiproxy()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        for name, process in reversed(list(self.processes.items())):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=5)
        self.processes.clear()
        shutil.rmtree(self.work, ignore_errors=True)

    @property
    def server_log(self) -> Path:
        """What the plain HTTP server printed."""
        return self.logs / f"{self.server}-plain.out"

    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in self.processes.items()}

    # -- endpoints ---------------------------------------------------------------------------

    def endpoint(self, transport: str) -> str:
        """`proxy` (through toxiproxy), `direct` (versitygw itself) or `tls` (HTTPS through
        toxiproxy)."""
        if transport == "proxy":
            return f"http://127.0.0.1:{self.ports['proxy']}"
        if transport == "direct":
            return f"http://127.0.0.1:{self.ports['plain']}"
        if transport == "tls":
            return f"https://127.0.0.1:{self.ports['proxy-tls']}"
        if transport == "web":
            return f"http://127.0.0.1:{self.ports['proxy-web']}"
        raise ValueError(transport)

    @property
    def ca_pem(self) -> Path:
        return self.certs / "ca.pem"

    # -- starting ----------------------------------------------------------------------------

    def _make_certificates(self) -> None:
        """A CA and a server certificate for 127.0.0.1 signed by it, RSA 2048 as S3's are."""
        c = self.certs
        (c / "server.ext").write_text(
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\n"
            "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
        )
        steps = [
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=parabyte bench CA",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
            ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key",
             "-out", "server.csr", "-subj", "/CN=127.0.0.1"],
            ["openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "2", "-out", "server.pem", "-extfile", "server.ext"],
        ]
        for step in steps:
            subprocess.run(step, cwd=c, check=True, capture_output=True)

    def _spawn(self, name: str, argv: list[str], env: dict | None = None) -> subprocess.Popen:
        log = self.logs / f"{name}.out"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env=env, preexec_fn=_die_with_parent,
            )
        self.processes[name] = process
        return process

    def _start_versitygw(self, name: str, tls: bool) -> None:
        binary = self.repo / ".tools/bin/versitygw"
        for attempt in range(3):
            port = free_port()
            access_log = self.logs / f"access-{name}.log"
            argv = [str(binary), "--access", ACCESS_KEY, "--secret", SECRET_KEY,
                    "--region", REGION, "--port", f"127.0.0.1:{port}", "--keep-alive", "--quiet",
                    "--access-log", str(access_log)]
            if tls:
                argv += ["--cert", str(self.certs / "server.pem"),
                         "--key", str(self.certs / "server.key")]
            argv += ["posix", str(self.root)]
            process = self._spawn(f"versitygw-{name}", argv)
            try:
                _wait_for_port(port, process, f"versitygw ({name})", self.logs / f"versitygw-{name}.out")
            except RuntimeError:
                if process.poll() is not None and attempt < 2:  # port taken meanwhile: again
                    continue
                raise
            self.ports[name] = port
            self.access_logs[name] = access_log
            return

    def _start_minio(self) -> None:
        """MinIO over the root, plain HTTP, with the kit's credentials; as the test kit starts
        it, but without the KMS key no benchmark uses."""
        port = free_port()
        env = dict(os.environ, MINIO_ROOT_USER=ACCESS_KEY, MINIO_ROOT_PASSWORD=SECRET_KEY,
                   MINIO_SITE_REGION=REGION, MINIO_BROWSER="off")
        argv = [str(self.repo / ".tools/bin/minio"), "server", "--address",
                f"127.0.0.1:{port}", "--quiet", str(self.root)]
        process = self._spawn("minio-plain", argv, env)
        _wait_for_port(port, process, "minio", self.server_log)
        # It listens before it serves: its readiness check says when requests will work.
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                ready = f"http://127.0.0.1:{port}/minio/health/ready"
                with urllib.request.urlopen(ready, timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"minio was not ready in {START_TIMEOUT_S}s; see "
                                       f"{self.server_log}") from None
                time.sleep(0.1)
        self.ports["plain"] = port

    def _start_nginx(self) -> None:
        """nginx over the bucket's directory, one process, everything it writes in the work
        directory. Its access log lines are shaped like versitygw's (` s3_GetObject - - 206 `)
        so that one parser counts both."""
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        conf_dir = self.work / "nginx"
        (conf_dir / "temp").mkdir(parents=True)
        access_log = self.logs / "access-web.log"
        port = free_port()
        (conf_dir / "nginx.conf").write_text(f"""daemon off;
master_process off;
pid {conf_dir}/nginx.pid;
error_log {self.logs}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    map $request_method $operation {{ GET GetObject; HEAD HeadObject; default Other; }}
    log_format bench '- s3_$operation - - $status - $body_bytes_sent';
    access_log {access_log} bench;
    client_body_temp_path {conf_dir}/temp/body;
    proxy_temp_path {conf_dir}/temp/proxy;
    fastcgi_temp_path {conf_dir}/temp/fastcgi;
    uwsgi_temp_path {conf_dir}/temp/uwsgi;
    scgi_temp_path {conf_dir}/temp/scgi;
    default_type application/octet-stream;
    sendfile on;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
        root {self.root / BUCKET};
    }}
}}
""")
        process = self._spawn("nginx", [binary, "-e", str(self.logs / "nginx-error.log"),
                                        "-p", str(conf_dir), "-c", str(conf_dir / "nginx.conf")])
        _wait_for_port(port, process, "nginx", self.logs / "nginx.out")
        self.ports["web"] = port
        self.access_logs["web"] = access_log

    def _api(self, method: str, path: str, body: dict | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"http://127.0.0.1:{self.ports['toxiproxy-api']}{path}",
                                         data=data, method=method)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read() or b"{}")

    def _start_toxiproxy(self, proxies=(("proxy", "plain"), ("proxy-tls", "tls"),
                                        ("proxy-web", "web"))) -> None:
        """toxiproxy, with one proxy (name, upstream's name in `ports`) per pair of `proxies`."""
        api = free_port()
        env = dict(os.environ, LOG_LEVEL="info")  # info: one "Accepted client" line per connection
        metrics = ["-proxy-metrics"] if self.proxy_metrics else []
        process = self._spawn("toxiproxy", [str(self.repo / ".tools/bin/toxiproxy-server"),
                                            "-host", "127.0.0.1", "-port", str(api), *metrics],
                              env)
        _wait_for_port(api, process, "toxiproxy", self.toxiproxy_log)
        self.ports["toxiproxy-api"] = api
        for name, upstream in proxies:
            for attempt in range(3):
                listen = free_port()
                try:
                    self._api("POST", "/proxies", {
                        "name": name, "listen": f"127.0.0.1:{listen}",
                        "upstream": f"127.0.0.1:{self.ports[upstream]}", "enabled": True,
                    })
                    break
                except urllib.error.HTTPError:
                    if attempt == 2:
                        raise
            self.ports[name] = listen
            for stream in ("upstream", "downstream"):
                self._api("POST", f"/proxies/{name}/toxics", {
                    "name": f"latency-{stream}", "type": "latency", "stream": stream,
                    "toxicity": 1.0, "attributes": {"latency": LATENCY_MS_EACH_WAY, "jitter": 0},
                })
            # Requests are small; the cap that matters is on what the server sends.
            self._api("POST", f"/proxies/{name}/toxics", {
                "name": "bandwidth", "type": "bandwidth", "stream": "downstream",
                "toxicity": 1.0, "attributes": {"rate": RATE_KB_PER_S},
            })
            if self.cap_upstream:
                self._api("POST", f"/proxies/{name}/toxics", {
                    "name": "bandwidth-upstream", "type": "bandwidth", "stream": "upstream",
                    "toxicity": 1.0, "attributes": {"rate": RATE_KB_PER_S},
                })

    def toxics(self) -> dict:
        return self._api("GET", "/proxies")

    def proxy_bytes(self, proxy: str = "proxy") -> dict[str, int]:
        """What toxiproxy has passed on through `proxy` since it started, from its Prometheus
        counters (`proxy_metrics=True` only): {"upstream": client to server, "downstream":
        server to client}."""
        url = f"http://127.0.0.1:{self.ports['toxiproxy-api']}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        counted = {"upstream": 0, "downstream": 0}
        for line in text.splitlines():
            if line.startswith("toxiproxy_proxy_sent_bytes_total{") and f'proxy="{proxy}"' in line:
                for direction in counted:
                    if f'direction="{direction}"' in line:
                        counted[direction] += int(float(line.rsplit(" ", 1)[1]))
        return counted

    # -- data --------------------------------------------------------------------------------

    def fill(self, sizes: Sizes, create_bucket) -> Dataset:
        """Creates the bucket through S3, then the objects W2 and W3 download three times over,
        as today's S3 holds them (see `CHECKSUMS`): `w2`/`w3` PUT in one request, so versitygw
        keeps a full-object CRC64NVME as S3 does by default since 2025; `w2c`/`w3c` uploaded
        in 8 MiB parts each with its CRC32, so the store keeps a COMPOSITE checksum as SDKs
        upload large files; `w2o`/`w3o` old single PUTs with only an MD5 ETag. Everything
        else (and the MD5-only objects) is written straight into versitygw's posix root with
        the ETag attribute versitygw itself would store (`user.etag`, the MD5 in quotes): much
        faster than 100,000 PUTs on two cores, and served exactly as if it had been PUT."""
        create_bucket()
        bucket_dir = self.root / BUCKET
        data = Dataset()
        upload = _upload_client(self.endpoint("direct"))

        def put(prefix: str, name: str, body: bytes) -> None:
            path = bucket_dir / prefix / name
            path.parent.mkdir(parents=True, exist_ok=True)
            md5 = hashlib.md5(body).hexdigest()
            path.write_bytes(body)
            _set_object_attributes(path, md5)
            data.objects.setdefault(prefix, {})[name] = (len(body), md5)

        def put_zeros(prefix: str, name: str, size: int) -> None:
            """A sparse file of zeros (W9's 10 GiB costs no memory), with the full-object
            CRC64NVME and the multipart ETag S3 would give it: parabyte checks that CRC."""
            path = bucket_dir / prefix / name
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb") as f:
                f.truncate(size)
            parts = -(-size // UPLOAD_PART)
            etag = f"{hashlib.md5(path.name.encode()).hexdigest()}-{parts}"
            _set_object_attributes(path, etag)
            os.setxattr(path, "user.checksums", json.dumps({
                "Algorithm": "CRC64NVME", "Type": "FULL_OBJECT",
                "CRC64NVME": crc64nvme_of_zeros(size)}).encode())
            data.objects.setdefault(prefix, {})[name] = (size, etag)

        def put_crc64(prefix: str, name: str, body: bytes) -> None:
            upload.put_object(Bucket=BUCKET, Key=f"{prefix}/{name}", Body=body)
            data.objects.setdefault(prefix, {})[name] = (len(body), hashlib.md5(body).hexdigest())

        def put_composite(prefix: str, name: str, body: bytes) -> None:
            key = f"{prefix}/{name}"
            created = upload.create_multipart_upload(Bucket=BUCKET, Key=key,
                                                     ChecksumAlgorithm="CRC32",
                                                     ChecksumType="COMPOSITE")
            parts = []
            for number, start in enumerate(range(0, len(body), UPLOAD_PART), start=1):
                part = upload.upload_part(Bucket=BUCKET, Key=key, UploadId=created["UploadId"],
                                          PartNumber=number, ChecksumAlgorithm="CRC32",
                                          Body=body[start:start + UPLOAD_PART])
                parts.append({"PartNumber": number, "ETag": part["ETag"],
                              "ChecksumCRC32": part["ChecksumCRC32"]})
            upload.complete_multipart_upload(Bucket=BUCKET, Key=key,
                                             UploadId=created["UploadId"],
                                             MultipartUpload={"Parts": parts})
            data.objects.setdefault(prefix, {})[name] = (len(body), hashlib.md5(body).hexdigest())

        for i in range(sizes.w1_count):
            put("w1", f"{i:05}.bin", os.urandom(sizes.w1_size))
        for stored, prefix in ((put_crc64, "w3"), (put_composite, "w3c"), (put, "w3o")):
            for i in range(sizes.w3_count):
                stored(prefix, f"{i:03}.bin", os.urandom(sizes.w3_size))
        for i in range(sizes.w8_count):
            put("w8", f"{i:05}.bin", os.urandom(sizes.w8_size))
        for prefix, dirs in (("w4", sizes.w4_dirs), ("w4k", sizes.w4k_dirs)):
            for d in range(dirs):
                for k in range(sizes.w4_per_dir):
                    put(prefix, f"d{d:03}/k{d * sizes.w4_per_dir + k:06}",
                        os.urandom(sizes.w4_size))
        put_zeros("w9", "big.bin", sizes.w9_size)
        # The big objects in memory once each (1 GiB): boto3 signs a body it holds whole.
        for stored, prefix in ((put_crc64, "w2"), (put_composite, "w2c"), (put, "w2o")):
            stored(prefix, "big.bin", os.urandom(sizes.w2_size))
        return data


def _upload_client(endpoint: str):
    """boto3 straight to versitygw, sending no checksum of its own unless asked to: the store
    then keeps its default, a full-object CRC64NVME, as S3 does."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=REGION,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                      request_checksum_calculation="when_required"))


def _set_object_attributes(path: Path, md5_hex: str) -> None:
    os.setxattr(path, "user.etag", f'"{md5_hex}"'.encode())
    os.setxattr(path, "user.content-type", b"application/octet-stream")
