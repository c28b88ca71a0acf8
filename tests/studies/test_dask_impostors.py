"""Issue 10 item 13: `--dask` at something that is not a Dask scheduler fails in bounded time.

An HTTP server's reply used to be read as a 2.82 EiB message header (MemoryError), and a server
that accepts and says nothing hung past the documented timeout. The servers here listen on
127.0.0.1 only and live for one test. The child's 120 s timeout only stops a hung probe;
the time bound itself (about 1 s plus a child's Dask import) is checked by `make bench`
(row budget).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest


def _reply(conn: socket.socket, mode: str) -> None:
    with conn:
        if mode == "http":
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        elif mode == "garbage":
            conn.sendall(b"\xff" * 64)
        time.sleep(3)  # "silent" says nothing at all


@pytest.fixture(params=["silent", "http", "garbage"])
def impostor(request) -> Iterator[str]:
    # Skipped here, not at import: collecting the module would otherwise import Dask (most of a
    # CPU-second) in every test process, though only the slow tier runs this test.
    pytest.importorskip("distributed")
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            threading.Thread(target=_reply, args=(conn, request.param), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(2)
    server.close()


# The client runs in a child process: the connection thread that an impostor leaves hanging
# inside dask.distributed would otherwise stay in the test process and block any later
# LocalCluster there (it holds Dask's event loop).
PROBE = """
import sys
from simsched.errors import InputError
from simsched.studies.runners import connect_dask
try:
    connect_dask(sys.argv[1], 1.0)
except InputError as exc:
    print(exc)
    sys.exit(2)
"""


@pytest.mark.slow  # a fresh interpreter per impostor, waiting out a connect timeout
def test_a_server_that_is_not_dask_fails_in_time(impostor: str) -> None:
    run = subprocess.run(
        [sys.executable, "-c", PROBE, impostor], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 2, run.stderr
    assert "--dask" in run.stdout
