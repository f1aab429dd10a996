"""An nginx WebDAV server on 127.0.0.1 for tests of shared caches (Bazel's remote cache,
the replay's baselines), set up as Bazel's remote-caching docs set one up."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["free_port", "webdav_server"]

NGINX = shutil.which("nginx") or next(
    (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None
)

NGINX_CONF = """\
{user}
daemon off;
master_process off;
worker_processes 1;
pid {root}/nginx.pid;
error_log {root}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log {root}/access.log;
    client_body_temp_path {root}/body;
    proxy_temp_path {root}/proxy;
    fastcgi_temp_path {root}/fastcgi;
    uwsgi_temp_path {root}/uwsgi;
    scgi_temp_path {root}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            root {root}/cache;
            dav_methods PUT;
            create_full_put_path on;
            client_max_body_size 0;
        }}
    }}
}}
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def webdav_server(root: Path, required: bool) -> Iterator[tuple[str, Path]]:
    """nginx serving ``root``/cache with PUT; yields its URL and that directory. A missing
    nginx skips the test, or fails it when ``required`` (CI installs nginx: a missing one
    is a broken setup)."""
    if NGINX is None:
        message = (
            "nginx is not installed; .ci/run installs it "
            "(apt-get install nginx libnginx-mod-http-dav-ext)"
        )
        if required:
            pytest.fail(message)
        pytest.skip(message)
    (root / "cache").mkdir(parents=True)
    port = free_port()
    # Workers drop to `nobody` when started as root and could not write here.
    user = "user root;" if os.geteuid() == 0 else ""
    conf = root / "nginx.conf"
    conf.write_text(NGINX_CONF.format(user=user, root=root, port=port))
    server = subprocess.Popen(
        [str(NGINX), "-p", str(root), "-c", str(conf)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{url}/", timeout=2)
                break
            except urllib.error.HTTPError:
                break  # 403/404 from nginx: it is serving
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    _, err = server.communicate(timeout=10)
                    pytest.fail(f"nginx did not start: {err.decode(errors='replace')}")
                time.sleep(0.2)
        yield url, root / "cache"
    finally:
        server.terminate()
        server.wait(timeout=30)
