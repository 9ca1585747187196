"""A proxy in front of the test store that forwards every request as it is (keep-alive,
the Host header untouched, so signatures hold) and can hold one chosen request: the test
waits until a worker's request is held, kills that worker, and lets the proxy go on. It
counts what reached the store, by request kind (`UploadPart 3`, `Complete`,
`DeleteObjects`, ...), so a test can say what was sent twice."""

from __future__ import annotations

import http.client
import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

EVENT_TIMEOUT_S = 60


def kind_of(method: str, target: str, copying: bool) -> str:
    """What an S3 request is, by its method, its query and whether it names a copy source."""
    query = parse_qs(urlsplit(target).query, keep_blank_values=True)
    if method == "PUT" and "partNumber" in query:
        copy = "UploadPartCopy" if copying else "UploadPart"
        return f"{copy} {query['partNumber'][0]}"
    if method == "POST" and "uploadId" in query:
        return "Complete"
    if method == "POST" and "uploads" in query:
        return "Create"
    if method == "POST" and "delete" in query:
        return "DeleteObjects"
    if method == "DELETE" and "uploadId" in query:
        return "Abort"
    if method == "GET" and "uploadId" in query:
        return "ListParts"
    if method == "GET" and "uploads" in query:
        return "ListUploads"
    return method


class GatedProxy:
    """Forwards to `upstream` (`http://host:port`); holds the first request for which
    `hold(kind)` is true, before it reaches the store (`after_store=False`) or after the
    store answered it (`True`: the answer is what gets lost), until `released`. A held
    request is then dropped: the worker that sent it is gone."""

    def __init__(
        self, upstream: str, hold: Callable[[str], bool], *, after_store: bool = False
    ) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname, parts.port)
        self.hold = hold
        self.after_store = after_store
        self.reached = threading.Event()
        self.released = threading.Event()
        self.peer_port: int | None = None
        self.stored: Counter[str] = Counter()
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    body = _read_chunked(self.rfile)
                kind = kind_of(self.command, self.path, "x-amz-copy-source" in self.headers)
                held = proxy._take(kind, self.client_address[1])
                if held and not proxy.after_store:
                    proxy._wait()
                    self.close_connection = True
                    return
                upstream = http.client.HTTPConnection(*proxy.upstream, timeout=EVENT_TIMEOUT_S)
                # Framing is the proxy's own: the body is read whole and sent with its length.
                framing = ("transfer-encoding", "content-length", "expect", "connection")
                headers = {k: v for k, v in self.headers.items() if k.lower() not in framing}
                headers["Content-Length"] = str(len(body))
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
                with proxy.lock:
                    proxy.stored[kind] += 1
                if held:
                    proxy._wait()
                    self.close_connection = True
                    return
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                upstream.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

            def log_message(self, *args: object) -> None:
                pass

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _take(self, kind: str, port: int) -> bool:
        """Whether this request is the one held (the first that `hold` picks)."""
        with self.lock:
            if self.reached.is_set() or not self.hold(kind):
                return False
            self.peer_port = port
            self.reached.set()
            return True

    def _wait(self) -> None:
        self.released.wait(EVENT_TIMEOUT_S)

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a killed worker's connection breaks off: expected, not news


def _read_chunked(stream: object) -> bytes:
    body = b""
    while True:
        size = int(stream.readline().split(b";")[0], 16)  # type: ignore[attr-defined]
        if size == 0:
            stream.readline()  # type: ignore[attr-defined]
            return body
        body += stream.read(size)  # type: ignore[attr-defined]
        stream.readline()  # type: ignore[attr-defined]
