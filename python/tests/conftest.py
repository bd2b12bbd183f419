import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("TESSERA_SHARED_DIR", REPO.parent / "shared"))


def fixture(rel: str) -> pathlib.Path:
    """A file under the shared fixtures, or a skip (a failure with TESSERA_REQUIRE_FIXTURES=1)."""
    p = SHARED / rel
    if not p.exists():
        if os.environ.get("TESSERA_REQUIRE_FIXTURES") == "1":
            pytest.fail(f"missing fixture {p}")
        pytest.skip(f"fixture {p} is absent")
    return p


@pytest.fixture
def cli() -> str:
    """The tessera CLI of the same build (CTest sets TESSERA_CLI)."""
    path = os.environ.get("TESSERA_CLI", str(REPO / "build" / "tessera"))
    if not os.path.exists(path):
        pytest.skip(f"the tessera CLI is not at {path}")
    return path
