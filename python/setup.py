"""pip install --no-build-isolation .   from python/ (the same package as from the repository root)"""
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here))
from setup_tessera import main  # noqa: E402

main(here.parent, ".")
