"""Shared fixtures: the project root and its committed tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def root() -> Path:
    """The project root."""
    return ROOT


@pytest.fixture(scope="session")
def tasks_dir() -> Path:
    """The committed benchmark."""
    return ROOT / "tasks"
