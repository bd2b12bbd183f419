"""Tessera: an inference runtime for NPUs, from Python.

    import numpy as np, tessera
    m = tessera.load("mobilenet_v2_1.0_224_quant.tflite", device="rknpu")
    scores = m.run(np.zeros(m.inputs[0].shape, np.uint8))     # numpy in, numpy out

    for piece in tessera.generate("aidreams260K.gguf", "Once upon a time", max_tokens=20):
        print(piece, end="")

TensorFlow Lite's Python API: tessera.tflite.Interpreter (tflite_runtime.interpreter's
Interpreter with a device= keyword) and tessera.image.Image (PIL's open/resize for its examples).

Errors raise tessera.Error (a RuntimeError) whose message is Tessera's and whose `code` is
the status name ("invalid_argument", "not_found", "unsupported", "out_of_range", ...).

Thread safety: a Model (what load returns) and a LanguageModel are used by one thread at a
time; load one per thread to run concurrently. The native calls release the GIL while they
load, compile, run and generate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Tuple, Union

from . import _tessera
from ._tessera import Error, LanguageModel

__version__ = _tessera.__version__
__all__ = ["Error", "Device", "TensorInfo", "Model", "LanguageModel", "Generation", "devices", "load",
           "generate", "quantize", "__version__"]


@dataclass(frozen=True)
class Device:
    """A device built into Tessera: pass `name` as load(..., device=name)."""
    name: str
    description: str
    is_model: bool
    available: bool
    error: str
    capacity_bytes: int
    cores: int
    properties: Dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TensorInfo:
    """A model input or output: dtype is Tessera's name ("u8", "f32", ...)."""
    name: str
    dtype: str
    shape: Tuple[int, ...]
    bytes: int
    scale: List[float]
    zero_point: List[int]
    quant_axis: int

    @property
    def quantized(self) -> bool:
        return len(self.scale) > 0


def devices() -> List[Device]:
    """Every device and preset built in, cpu first."""
    return [Device(**d) for d in _tessera.devices()]


class Model:
    """A model loaded and prepared on one device (a .tflite file, or a .gguf model's
    1-token decode step)."""

    def __init__(self, path: str, device: str = "cpu", threads: Optional[int] = None,
                 options: Optional[Dict[str, str]] = None):
        self._m = _tessera.Model(str(path), device, threads, dict(options or {}))
        self.path = str(path)

    @property
    def device(self) -> str:
        return self._m.device

    @property
    def inputs(self) -> List[TensorInfo]:
        return [TensorInfo(**t) for t in self._m.inputs]

    @property
    def outputs(self) -> List[TensorInfo]:
        return [TensorInfo(**t) for t in self._m.outputs]

    @property
    def labels(self) -> List[str]:
        """The class names the model file carries, one per line as written: the 'names' of
        an Ultralytics export's metadata, or the labels file TFLite's metadata writer packs
        into the model (its first line may be a background class); [] if none."""
        return list(self._m.labels)

    def run(self, inputs):
        """run(x), run([x0, x1, ...]) or run({"name": x}): numpy arrays of the inputs'
        dtypes and shapes. Returns the output array, or a list when there are several."""
        return self._m.run(inputs)

    def image_input(self, path: str, index: int = 0):
        """An image file (BMP, JPEG, PNG) as input `index`: resized, in the input's dtype,
        quantization and layout, as `tessera classify` prepares it (a YOLO detector's:
        letterboxed and pixel / 255, as `tessera detect` prepares it)."""
        return self._m.image_input(str(path), index)

    def detect(self, path: str, threshold: float = 0.3, iou: float = 0.45,
               max_detections: int = 300) -> List[dict]:
        """Objects in an image file, best first: [{"class_id", "score", "box": (left, top,
        right, bottom)}] in the image's pixels, with "label" where the model file carries
        class names (Model.labels). For SSD models ending in
        TFLite_Detection_PostProcess and YOLOv8 / YOLOv5 exports (per-class non-maximum
        suppression at `iou`, at most `max_detections`), as `tessera detect` decodes them."""
        return self._m.detect(str(path), threshold, iou, max_detections)

    def inspect(self) -> dict:
        """The plan: devices, every node with the device it runs on (and why), programs,
        and the text report of `tessera inspect`."""
        info = self._m.inspect()
        info["inputs"] = [TensorInfo(**t) for t in info["inputs"]]
        info["outputs"] = [TensorInfo(**t) for t in info["outputs"]]
        return info

    def profile(self) -> dict:
        """Per-node host (and modelled device) seconds of the last run."""
        return self._m.profile()

    def __repr__(self) -> str:
        return f"tessera.Model({self.path!r}, device={self.device!r})"


def load(path: str, device: str = "cpu", threads: Optional[int] = None,
         options: Optional[Dict[str, str]] = None) -> Model:
    """Loads a .tflite (or .gguf) model and prepares it on `device` ("cpu", "tile",
    "tile:blackhole_p150a", "rknpu"); `options` are device options (KEY: VALUE)."""
    return Model(path, device, threads, options)


def quantize(model: str, calibration, out: Optional[str] = None, int8_io: bool = False,
             own_add_ranges: bool = False) -> bytes:
    """Post-training int8 quantization of a float TFLite model (as `tessera quantize`,
    docs/quantize.md); returns the quantized model's bytes, and writes them to `out` if given.

    `calibration`: what the float model is run on to find each tensor's range -- image paths
    (prepared as classify / detect feed the model), numpy arrays (the model's one input), or
    tuples of arrays (one per input). `int8_io`: int8 inputs and outputs instead of float.
    `own_add_ranges`: each ADD input keeps its own range, as TensorFlow Lite's converter does
    (by default an ADD shares one, so that the NPU adds exactly as TFLite does)."""
    import os
    import numpy as np
    float_model = None
    runs = []
    for item in calibration:
        if isinstance(item, (str, os.PathLike)):
            if float_model is None:
                float_model = load(str(model))
            runs.append([np.ascontiguousarray(float_model.image_input(str(item))).tobytes()])
        elif isinstance(item, (list, tuple)):
            runs.append([np.ascontiguousarray(a).tobytes() for a in item])
        else:
            runs.append([np.ascontiguousarray(item).tobytes()])
    with open(model, "rb") as f:
        data = f.read()
    quantized, _notes = _tessera._quantize(data, runs, bool(int8_io), not own_add_ranges)
    if out is not None:
        with open(out, "wb") as f:
            f.write(quantized)
    return quantized


class Generation:
    """The text pieces of one generation, as an iterator; `stats` (after the end) holds the
    whole text, token ids and timings. close() stops early."""

    def __init__(self, stream):
        self._stream = stream

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        return self._stream.__next__()

    def close(self) -> None:
        self._stream.close()

    @property
    def stats(self) -> dict:
        return self._stream.stats

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def generate(model: Union[str, LanguageModel], prompt: str, max_tokens: int = 64, temperature: float = 0.0,
             top_k: int = 40, top_p: float = 0.95, repeat_penalty: float = 1.0, repeat_last_n: int = 64,
             seed: int = 0, device: str = "cpu", context: int = 0,
             stop: Optional[List[str]] = None) -> Generation:
    """Generates text after `prompt` with a GGUF model (a path or a LanguageModel), yielding
    each piece of text as it is produced. Greedy unless temperature > 0. Generation ends
    before the first of the `stop` strings (the text never holds it)."""
    lm = model if isinstance(model, LanguageModel) else LanguageModel(str(model), device=device, context=context)
    return Generation(lm._stream(prompt, max_tokens, temperature, top_k, top_p, repeat_penalty, repeat_last_n,
                                 seed, list(stop or [])))
