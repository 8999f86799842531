"""Every test here records with perf: without it they are skipped, except in CI, which has it
(a missing perf there is a failure)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if shutil.which("perf") is None and not os.environ.get("CI"):
        skip = pytest.mark.skip(reason="needs perf (CI has it)")
        for item in items:
            if HERE in item.path.parents:
                item.add_marker(skip)
