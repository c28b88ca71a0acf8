"""Issue 21 item 2: `--dask` at a port that answers junk or HTTP is refused by a probe, before
dask.distributed's client reads the junk as a message length (a MemoryError inside it).

The servers listen on 127.0.0.1 for one test and speak first, as a Dask scheduler does.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from simsched.errors import InputError
from simsched.studies.runners import MAX_HANDSHAKE_BYTES, _host_port, probe_scheduler


def _server(greeting: bytes) -> Iterator[str]:
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            try:
                conn.sendall(greeting)
                conn.recv(1)  # hold the connection until the probe closes it
            except OSError:  # a probe that refuses the greeting may close with a reset
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    server.close()
    thread.join(2)


@pytest.fixture
def greeting(request) -> Iterator[str]:
    yield from _server(request.param)


@pytest.mark.parametrize(
    "greeting",
    [
        b"HTTP/1.1 400 Bad Request\r\n\r\n",  # 2.82 EiB read as a length
        b"\xff" * 64,
        struct.pack("Q", MAX_HANDSHAKE_BYTES + 1),  # just beyond any handshake
        struct.pack("Q", 0),
    ],
    indirect=True,
)
def test_a_server_that_does_not_speak_dask_is_refused(greeting: str) -> None:
    with pytest.raises(InputError) as info:
        probe_scheduler(greeting, 2.0)
    assert str(info.value).startswith(f"--dask: {greeting}: not a Dask scheduler")


@pytest.mark.parametrize("greeting", [struct.pack("Q", 300) + b"x" * 300], indirect=True)
def test_a_plausible_first_message_passes_the_probe(greeting: str) -> None:
    probe_scheduler(greeting, 2.0)  # no error: the client takes it from here


def test_other_schemes_are_left_to_the_client() -> None:
    probe_scheduler("tls://127.0.0.1:1", 0.1)  # not probed: no connection is attempted
    probe_scheduler("inproc://10.0.0.1/1/2", 0.1)


@pytest.mark.parametrize(
    ("rest", "expected"),
    [
        ("h:1234", ("h", 1234)),
        ("h", ("h", 8786)),
        ("[::1]:99", ("::1", 99)),
        ("[::1]", ("::1", 8786)),
    ],
)
def test_host_and_port(rest: str, expected: tuple[str, int]) -> None:
    assert _host_port(rest, rest) == expected


def test_a_closed_port_is_an_input_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
    with pytest.raises(InputError, match="cannot reach"):
        probe_scheduler(f"tcp://127.0.0.1:{port}", 1.0)
