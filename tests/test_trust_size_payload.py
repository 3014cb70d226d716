"""``size --compress`` gathers an entry's stored payload only when its bounds allow it
(issue 31): before, a 600 MiB stored payload was gathered whole and its bound checked
after.  An entry whose stored size is past MAX_PAYLOAD is streamed as it is, never held.
Entries here are duck-typed (the fields size/recompress.py reads); the bound is lowered."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cuwheel.model.arch import Arch
from cuwheel.model.inventory import CodeKind, Compression
from cuwheel.size import recompress
from cuwheel.size.scenario import Scenario


def _entry(stored: int) -> SimpleNamespace:
    return SimpleNamespace(offset=0, header_size=64, stored_size=stored, compressed_size=stored,
                           uncompressed_size=100, flags=0, compression=Compression.ZSTD,
                           kind=CodeKind.SASS, arch=Arch(90))  # fmt: skip


def _chunks(total: int) -> list[bytes]:
    return [b"\0" * 4096] * (total // 4096) + [b"\0" * (total % 4096)]


@pytest.mark.parametrize("stored,gathered", [(8192, True), (8193, False)])
def test_a_stored_payload_at_and_past_the_bound(monkeypatch: pytest.MonkeyPatch, stored: int,
                                                gathered: bool) -> None:  # fmt: skip
    monkeypatch.setattr(recompress, "MAX_PAYLOAD", 8192)
    held: list[int] = []
    real = recompress._redo

    def redo(e: object, payload: bytes, mode: str) -> bytes:
        held.append(len(payload))
        return real(e, payload, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(recompress, "_redo", redo)
    entries: list = [_entry(stored)]
    recompress.simulate(iter(_chunks(64 + stored)), entries, Scenario(compression="size"))
    assert held == ([stored] if gathered else [])
    want = {i for i, x in enumerate(entries) if recompress._redoable(x)}
    assert (0 in recompress._payloads(iter(_chunks(64 + stored)), entries, want)) is gathered
