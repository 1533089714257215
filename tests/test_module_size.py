"""Every module of the package stays small enough to read whole: 450 lines at most."""

from __future__ import annotations

from pathlib import Path

import skilleval

LIMIT = 450


def test_no_module_of_the_package_is_over_the_limit() -> None:
    root = Path(skilleval.__file__).parent
    modules = sorted(root.rglob("*.py"))
    assert len(modules) > 100  # the package, not an empty folder
    over = {
        str(path.relative_to(root)): lines
        for path in modules
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > LIMIT
    }
    assert over == {}
