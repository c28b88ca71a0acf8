"""`load_yaml`'s memo under threads (a Dask worker runs probes in threads): loads that evict
together never fail."""

from __future__ import annotations

import sys
import threading

from simsched.config import yaml_io


def test_the_memo_survives_threads_evicting_together(monkeypatch) -> None:
    monkeypatch.setattr(yaml_io, "PARSED_TEXTS", 1)  # every miss evicts
    monkeypatch.setattr(yaml_io, "_PARSED", {})
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(300):
                assert yaml_io.load_yaml(f"k{k}: {i % 40}") == {f"k{k}": i % 40}
                assert yaml_io.load_yaml("shared: 1") == {"shared": 1}
        except BaseException as exc:  # noqa: BLE001 (any failure in a thread is the finding)
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, inside the memo too
    try:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors[:3]
