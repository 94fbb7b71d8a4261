"""Every python block of docs/python.md runs (those marked stream: in test_stream.py, ray: in test_ray.py)."""

from __future__ import annotations

from pathlib import Path

from conftest import doc_blocks, run_doc_blocks


def test_docs_examples(tmp_path: Path, serve_url: str) -> None:
    blocks = [b for b in doc_blocks() if b[0] not in ("stream", "ray")]
    assert len(blocks) >= 4
    assert any(d.startswith("serve ") for d, _, _ in blocks)
    run_doc_blocks(blocks, tmp_path, {"http://127.0.0.1:8080": serve_url})
