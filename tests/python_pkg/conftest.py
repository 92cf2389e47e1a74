"""Shared fixtures of the flashref package's tests. torch comes from `make torch`; where it could not be installed,
build/venv/.torch-missing says why and the torch tests SKIP with that reason (loudly: pytest prints it)."""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent


def torch_or_skip():
    try:
        import torch  # noqa: F401
        return torch
    except ImportError as e:
        marker = Path(sys.executable).resolve().parent.parent / ".torch-missing"
        why = marker.read_text().strip() if marker.exists() else str(e)
        print("\nWARNING: torch is not available (%s): the torch tests SKIP" % why, file=sys.stderr)
        pytest.skip("torch not available: %s" % why)


@pytest.fixture
def rng():
    seed = int(os.environ.get("FLASHREF_TEST_SEED", "20260101"))
    print("seed %d" % seed)
    return np.random.default_rng(seed)


@pytest.fixture
def cli():
    p = os.environ.get("FLASHREF_CLI")
    if not p:
        import flashref
        p = flashref.cli_path()
    assert p and os.path.exists(p), "the flashref command is not found (FLASHREF_CLI)"
    return os.path.abspath(p)
