"""What a type checker sees at the top level: every public name with its own type (the
TYPE_CHECKING star imports), not the ``Any`` of the lazy ``__getattr__``."""

from __future__ import annotations

from pathlib import Path

import pytest
import truescore_fast


@pytest.mark.slow
def test_mypy_sees_the_top_level_names_with_their_types(tmp_path, monkeypatch):
    api = pytest.importorskip("mypy.api", reason="the type check needs the test extra (mypy)")
    probe = tmp_path / "probe.py"
    names = ("paired_bootstrap", "StudyTable", "sequential_study", "INTERVAL_METHODS", "STUDIES")
    probe.write_text(
        "import truescore_fast as tsf\n" + "".join(f"reveal_type(tsf.{n})\n" for n in names)
    )
    # the package as imported here: a development tree is named on MYPYPATH; an installed
    # one mypy finds itself (py.typed), and it refuses site-packages on MYPYPATH
    root = Path(truescore_fast.__file__).resolve().parents[1]
    if root.name not in ("site-packages", "dist-packages"):
        monkeypatch.setenv("MYPYPATH", str(root))
    out, err, _ = api.run([str(probe), "--cache-dir", str(tmp_path / "cache")])
    revealed = [line for line in out.splitlines() if "Revealed type" in line]
    assert len(revealed) == len(names), out + err
    assert not [line for line in revealed if line.endswith('"Any"')], out
    assert "def (title: str" in revealed[1]  # StudyTable's constructor
