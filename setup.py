"""pip install --no-build-isolation .   (the Python package `tessera`; README.md, section Python)"""
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here / "python"))
from setup_tessera import main  # noqa: E402

main(here, "python")
