"""A real TLS front for tests: a test CA made with openssl, and Debian's nginx terminating
https on 127.0.0.1 in front of a server, stopped even when a test fails."""

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.daemons import listening
from tests.support.server import free_port

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


@dataclass(frozen=True)
class TlsFiles:
    """A CA certificate, and a server certificate it signed for 127.0.0.1 and localhost."""

    ca: Path
    cert: Path
    key: Path


def make_ca(folder: Path) -> TlsFiles:
    """A fresh CA and a server certificate under folder (openssl, 1 day, EC P-256)."""
    folder.mkdir(parents=True, exist_ok=True)
    ca, ca_key = folder / "ca.pem", folder / "ca.key"
    cert, key, csr = folder / "server.pem", folder / "server.key", folder / "server.csr"
    ext = folder / "server.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "1",
             "-subj", "/CN=arkfs test CA")  # fmt: skip
    _openssl("req", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1")
    _openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
             "-out", cert, "-days", "1", "-extfile", ext)  # fmt: skip
    return TlsFiles(ca, cert, key)


def _openssl(*argv: object) -> None:
    subprocess.run(["openssl", *map(str, argv)], check=True, capture_output=True)


NGINX_CONF = """\
worker_processes 1;
pid {run}/nginx.pid;
error_log {run}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {run}/body;
    proxy_temp_path {run}/proxy;
    fastcgi_temp_path {run}/fastcgi;
    uwsgi_temp_path {run}/uwsgi;
    scgi_temp_path {run}/scgi;
    client_max_body_size 0;
    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        location {prefix}/ {{
            proxy_pass {upstream}/;
            proxy_http_version 1.1;
            proxy_request_buffering off;
            proxy_buffering off;
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Forwarded-Host $http_host;
            proxy_set_header X-Forwarded-Prefix {prefix};
        }}
    }}
}}
"""


@contextmanager
def nginx_front(folder: Path, tls: TlsFiles, upstream: str, prefix: str = "") -> Iterator[str]:
    """nginx serving https://127.0.0.1:PORT{prefix}/ from upstream (prefix stripped, with
    X-Forwarded-Proto/-Host/-Prefix); yields that public base URL without trailing slash."""
    if not os.path.exists(NGINX):
        pytest.fail("nginx is not installed: `make install` installs it")
    run = folder / "nginx"
    run.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = run / "nginx.conf"
    conf.write_text(
        NGINX_CONF.format(
            run=run, port=port, cert=tls.cert, key=tls.key, prefix=prefix, upstream=upstream
        )
    )
    argv = [NGINX, "-p", str(run), "-e", str(run / "error.log"), "-c", str(conf)]
    argv += ["-g", "daemon off;"]
    with listening(argv, port, wait=15):
        yield f"https://127.0.0.1:{port}{prefix}"
