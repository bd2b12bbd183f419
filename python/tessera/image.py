"""tessera.image: the few calls of PIL's Image that TFLite's Python examples make, on
Tessera's own image decoder (BMP, JPEG, PNG; no PIL needed):

    from tessera.image import Image               # was: from PIL import Image
    img = Image.open("grace_hopper.bmp").resize((224, 224))
    x = np.expand_dims(img, axis=0)               # uint8 [1, 224, 224, 3]

resize() is bilinear, exactly as `tessera classify` resizes a photo for a model's input, so
a script fed this way gets the CLI's scores.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

from . import _tessera

__all__ = ["Image"]


class _Resized:
    """An image file resized to (width, height): np.asarray() gives uint8 [h, w, 3] (RGB),
    or [h, w] for mode 'L'."""

    def __init__(self, path: str, size: Tuple[int, int], mode: str):
        self.filename, self.size, self.mode = path, (int(size[0]), int(size[1])), mode
        self._pixels = None

    @property
    def width(self) -> int:
        return self.size[0]

    @property
    def height(self) -> int:
        return self.size[1]

    def _array(self) -> np.ndarray:
        if self._pixels is None:
            w, h = self.size
            p = _tessera.read_image(self.filename, w, h, 1 if self.mode == "L" else 3)
            self._pixels = p[:, :, 0] if self.mode == "L" else p
        return self._pixels

    def __array__(self, dtype=None, copy=None):
        a = self._array()
        return a.astype(dtype) if dtype is not None else a.copy()

    def convert(self, mode: str) -> "_Resized":
        if mode not in ("RGB", "L"):
            raise ValueError(f"tessera.image converts to 'RGB' or 'L', not {mode!r}")
        return _Resized(self.filename, self.size, mode)

    def resize(self, size, resample=None) -> "_Resized":
        return _Resized(self.filename, size, self.mode)


class _Opened:
    """An image file as Image.open returns it: resize((width, height)) gives its pixels."""

    def __init__(self, path: str, mode: str = "RGB"):
        with open(path, "rb"):
            pass  # FileNotFoundError now, as PIL raises it
        self.filename, self.mode = str(path), mode

    def convert(self, mode: str) -> "_Opened":
        if mode not in ("RGB", "L"):
            raise ValueError(f"tessera.image converts to 'RGB' or 'L', not {mode!r}")
        return _Opened(self.filename, mode)

    def resize(self, size, resample=None) -> _Resized:
        return _Resized(self.filename, size, self.mode)


class Image:
    """PIL.Image's open(), for scripts written for TFLite's examples."""

    @staticmethod
    def open(fp, mode: str = "r") -> _Opened:
        return _Opened(str(fp))
