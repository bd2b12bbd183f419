"""tessera.tflite: the `tflite_runtime.interpreter` API on Tessera.

A script written for TensorFlow Lite's Python interpreter runs on Tessera with only its
import changed:

    from tessera.tflite import Interpreter        # was: from tflite_runtime.interpreter import Interpreter

    interpreter = Interpreter(model_path="mobilenet_v2_1.0_224_quant.tflite", device="rknpu")
    interpreter.allocate_tensors()
    inp = interpreter.get_input_details()[0]      # {'name', 'index', 'shape', 'dtype', 'quantization', ...}
    interpreter.set_tensor(inp["index"], image)   # numpy, of inp['dtype'] and inp['shape']
    interpreter.invoke()
    scores = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])

Tensor indices are the model's own (the subgraph's tensor indices, as in TFLite); details
dicts have TFLite's keys, numpy dtypes and quantization. `device=` ("cpu", "tile",
"tile:blackhole_p150a", "rknpu") chooses where the model runs; `num_threads` is the cpu's
thread count; delegates are not used (a warning says so). Only a model's input and output
tensors can be read (TFLite's intermediate tensors are not kept). resize_tensor_input gives an
input a new shape; allocate_tensors() then imports the model again at it (every op's output
shape and the shape arithmetic in front of a RESHAPE follow; an error names the op that
cannot take it). Wrong dtypes, shapes and
indices raise ValueError, use before allocate_tensors() RuntimeError, as TFLite does.
"""

from __future__ import annotations

import struct
import warnings
from typing import Dict, List, Optional, Sequence

import numpy as np

from . import _tessera

__all__ = ["Interpreter", "SignatureRunner", "load_delegate"]

# TFLite's TensorType codes (schema.fbs) as numpy dtypes; None: no numpy equivalent.
_TFLITE_TYPES = {
    0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 4: np.int64, 5: np.object_, 6: np.bool_,
    7: np.int16, 8: np.complex64, 9: np.int8, 10: np.float64, 11: np.complex128, 12: np.uint64,
    15: np.uint32, 16: np.uint16,
}
_TYPE_NAMES = {0: "FLOAT32", 1: "FLOAT16", 2: "INT32", 3: "UINT8", 4: "INT64", 5: "STRING", 6: "BOOL",
               7: "INT16", 8: "COMPLEX64", 9: "INT8", 10: "FLOAT64", 11: "COMPLEX128", 12: "UINT64",
               13: "RESOURCE", 14: "VARIANT", 15: "UINT32", 16: "UINT16", 17: "INT4", 18: "BFLOAT16"}
_NUMPY_NAMES = {np.dtype(v): _TYPE_NAMES[k] for k, v in _TFLITE_TYPES.items() if v is not np.object_}


class _FlatBuffer:
    """Just enough of a FlatBuffers reader for TFLite's tensor, subgraph and signature
    tables (field ids of TensorFlow's schema.fbs). Bounds are checked by struct."""

    def __init__(self, buf: bytes):
        self.b = buf

    def u8(self, p):
        return struct.unpack_from("<B", self.b, p)[0]

    def u16(self, p):
        return struct.unpack_from("<H", self.b, p)[0]

    def i32(self, p):
        return struct.unpack_from("<i", self.b, p)[0]

    def u32(self, p):
        return struct.unpack_from("<I", self.b, p)[0]

    def root(self):
        return self.u32(0)

    def field(self, table, fid):
        vt = table - self.i32(table)
        o = 4 + 2 * fid
        if o >= self.u16(vt):
            return None
        off = self.u16(vt + o)
        return table + off if off else None

    def table(self, table, fid):
        p = self.field(table, fid)
        return None if p is None else p + self.u32(p)

    def vector(self, table, fid):
        """(start, length) of a vector field, or None."""
        p = self.field(table, fid)
        if p is None:
            return None
        v = p + self.u32(p)
        return v + 4, self.u32(v)

    def tables(self, table, fid):
        v = self.vector(table, fid)
        if v is None:
            return []
        start, n = v
        return [start + 4 * i + self.u32(start + 4 * i) for i in range(n)]

    def scalars(self, table, fid, fmt):
        v = self.vector(table, fid)
        if v is None:
            return None
        start, n = v
        return list(struct.unpack_from("<%d%s" % (n, fmt), self.b, start))

    def string(self, table, fid):
        v = self.vector(table, fid)
        if v is None:
            return ""
        start, n = v
        return self.b[start:start + n].decode("utf-8", "replace")

    def scalar(self, table, fid, fmt, default):
        p = self.field(table, fid)
        return default if p is None else struct.unpack_from("<" + fmt, self.b, p)[0]


class _TensorDesc:
    def __init__(self, index, name, shape, shape_signature, ttype, scales, zero_points, qdim):
        self.index, self.name, self.type = index, name, ttype
        self.shape = list(shape)
        self.shape_signature = list(shape_signature if shape_signature is not None else shape)
        self.scales, self.zero_points, self.quantized_dimension = scales, zero_points, qdim

    @property
    def dtype(self):
        return _TFLITE_TYPES.get(self.type)

    def details(self) -> dict:
        scales = np.array(self.scales, np.float32)
        zps = np.array(self.zero_points, np.int32)
        legacy = (float(scales[0]), int(zps[0])) if len(scales) == 1 and len(zps) == 1 else (0.0, 0)
        return {
            "name": self.name,
            "index": self.index,
            "shape": np.array(self.shape, np.int32),
            "shape_signature": np.array(self.shape_signature, np.int32),
            "dtype": self.dtype,
            "quantization": legacy,
            "quantization_parameters": {"scales": scales, "zero_points": zps,
                                        "quantized_dimension": self.quantized_dimension},
            "sparsity_parameters": {},
        }


def _read_tflite(buf: bytes):
    """The first subgraph's tensors (index -> _TensorDesc for the inputs and outputs), its
    input and output tensor indices, and the signature defs."""
    fb = _FlatBuffer(buf)
    try:
        model = fb.root()
        subgraphs = fb.tables(model, 2)
        if not subgraphs:
            raise ValueError("the model has no subgraph")
        sg = subgraphs[0]
        tensors = fb.tables(sg, 0)
        inputs = fb.scalars(sg, 1, "i") or []
        outputs = fb.scalars(sg, 2, "i") or []
        descs = {}
        for i in set(inputs) | set(outputs):
            if not 0 <= i < len(tensors):
                raise ValueError(f"tensor index {i} out of range")
            t = tensors[i]
            q = fb.table(t, 4)
            scales = (fb.scalars(q, 2, "f") if q is not None else None) or []
            zps = (fb.scalars(q, 3, "q") if q is not None else None) or []
            qdim = fb.scalar(q, 6, "i", 0) if q is not None else 0
            descs[i] = _TensorDesc(i, fb.string(t, 3), fb.scalars(t, 0, "i") or [], fb.scalars(t, 7, "i"),
                                   fb.scalar(t, 1, "b", 0), scales, zps, qdim)
        signatures = []
        for s in fb.tables(model, 7):
            def tensor_map(fid):
                return {fb.string(m, 0): fb.scalar(m, 1, "I", 0) for m in fb.tables(s, fid)}
            signatures.append({"key": fb.string(s, 2), "inputs": tensor_map(0), "outputs": tensor_map(1),
                               "subgraph": fb.scalar(s, 4, "I", 0)})
        return descs, inputs, outputs, signatures
    except struct.error as e:
        raise ValueError(f"Could not read the TFLite model's tensors: {e}") from None


def load_delegate(library, options=None):
    """TFLite's load_delegate: Tessera has no delegates (its devices take their place)."""
    raise ValueError(f"Failed to load delegate from {library}: Tessera does not use TFLite delegates; "
                     "pass device='rknpu' or device='tile' to Interpreter instead")


class Interpreter:
    """tflite_runtime.interpreter.Interpreter's API over a Tessera session.

    Interpreter(model_path=None, model_content=None, experimental_delegates=None,
                num_threads=None, device="cpu", options=None, ...)
    """

    def __init__(self, model_path: Optional[str] = None, model_content: Optional[bytes] = None,
                 experimental_delegates=None, num_threads: Optional[int] = None,
                 experimental_op_resolver_type=None, experimental_preserve_all_tensors: bool = False,
                 experimental_disable_delegate_clustering: bool = False,
                 experimental_default_delegate_latest_features: bool = False,
                 device: str = "cpu", options: Optional[Dict[str, str]] = None):
        if (model_path is None) == (model_content is None):
            raise ValueError("Can't both provide `model_path` and `model_content`" if model_path is not None
                             else "Must provide either `model_path` or `model_content`")
        if experimental_delegates:
            warnings.warn("tessera.tflite.Interpreter ignores experimental_delegates: Tessera's devices take "
                          "their place (device='rknpu' or 'tile')", RuntimeWarning, stacklevel=2)
        if experimental_preserve_all_tensors:
            warnings.warn("tessera.tflite.Interpreter keeps only the model's input and output tensors",
                          RuntimeWarning, stacklevel=2)
        if num_threads is not None:
            if not isinstance(num_threads, int):
                raise ValueError("type of num_threads should be int")
            if num_threads < -1:
                raise ValueError("num_threads should >= 1 or just -1 to let TFLite runtime set the value.")
            if num_threads == -1:
                num_threads = None
            elif num_threads == 0:
                num_threads = 1
        if model_path is not None:
            self._path = str(model_path)
            with open(self._path, "rb") as f:
                content = f.read()
        else:
            content = bytes(model_content)
            self._path = None
        self._content = content
        self._device = device
        self._threads = num_threads
        self._options = dict(options or {})
        self._tensors, self._inputs, self._outputs, self._signatures = _read_tflite(content)
        self._model = None       # the Tessera session, made by allocate_tensors()
        self._values = {}        # tensor index -> array (inputs as set, outputs of the last invoke)
        self._resized = {}       # input index -> shape asked by resize_tensor_input, until allocate_tensors
        self._stored_shapes = {i: list(self._tensors[i].shape) for i in self._inputs}
        self._tessera_order = None

    # -- details -----------------------------------------------------------------------
    def get_input_details(self) -> List[dict]:
        return [self._tensors[i].details() for i in self._inputs]

    def get_output_details(self) -> List[dict]:
        return [self._tensors[i].details() for i in self._outputs]

    def get_tensor_details(self) -> List[dict]:
        """The details of the tensors Tessera exposes: the inputs, then the outputs."""
        seen, out = set(), []
        for i in list(self._inputs) + list(self._outputs):
            if i not in seen:
                seen.add(i)
                out.append(self._tensors[i].details())
        return out

    # -- lifecycle ---------------------------------------------------------------------
    def allocate_tensors(self) -> None:
        """Loads the model into a Tessera session on the device (planned, compiled, weights
        uploaded). Called again after resize_tensor_input, it makes a new session."""
        if self._model is not None and not self._resized:
            return
        self._resized = {}
        shapes = {self._tensors[i].name: self._tensors[i].shape for i in self._inputs
                  if self._tensors[i].shape != self._stored_shapes[i]}
        if shapes:
            m = _tessera.Model.from_tflite_buffer_resized(self._content, shapes, self._device, self._threads,
                                                          self._options)
        elif self._path is not None:
            m = _tessera.Model(self._path, self._device, self._threads, self._options)
        else:
            m = _tessera.Model.from_tflite_buffer(self._content, self._device, self._threads, self._options)
        # Tessera's inputs and outputs in TFLite's tensor indices (matched by name, else order).
        order = []
        for infos, indices in ((m.inputs, self._inputs), (m.outputs, self._outputs)):
            names = {self._tensors[i].name: i for i in indices}
            if len(infos) != len(indices):
                raise RuntimeError(f"tessera sees {len(infos)} tensors where the model lists {len(indices)}")
            order.append([names.get(t["name"], indices[k]) for k, t in enumerate(infos)])
        self._tessera_order = order
        for i, t in zip(order[1], m.outputs):  # output shapes follow resized inputs
            self._tensors[i].shape = list(t["shape"])
        self._model = m
        self._values = {}
        for i in self._inputs:
            d = self._tensors[i]
            self._values[i] = np.zeros(d.shape, d.dtype)

    def _check_allocated(self, what: str) -> None:
        if self._model is None:
            raise RuntimeError(f"{what}: call allocate_tensors() first (the interpreter has no tensors yet)")

    def _desc(self, tensor_index: int) -> _TensorDesc:
        if not isinstance(tensor_index, (int, np.integer)) or int(tensor_index) not in self._tensors:
            raise ValueError(f"Tensor {tensor_index} is not an input or output of the model (Tessera exposes "
                             f"the inputs {list(self._inputs)} and outputs {list(self._outputs)})")
        return self._tensors[int(tensor_index)]

    def set_tensor(self, tensor_index: int, value) -> None:
        """Copies `value` (a numpy array of the tensor's dtype and shape) into input
        `tensor_index`."""
        d = self._desc(tensor_index)
        self._check_allocated("set_tensor")
        if d.index not in self._inputs:
            raise ValueError(f"Tensor {d.index} ('{d.name}') is an output; set_tensor takes the inputs "
                             f"{list(self._inputs)}")
        a = np.asarray(value)
        if a.dtype != np.dtype(d.dtype):
            got = _NUMPY_NAMES.get(a.dtype, str(a.dtype))
            raise ValueError(f"Cannot set tensor: Got value of type {got} but expected type "
                             f"{_TYPE_NAMES.get(d.type, d.type)} for input {d.index}, name: {d.name} ")
        if a.ndim != len(d.shape):
            raise ValueError(f"Cannot set tensor: Dimension mismatch. Got {a.ndim} but expected {len(d.shape)} "
                             f"for input {d.index}.")
        for k, (got, want) in enumerate(zip(a.shape, d.shape)):
            if got != want:
                raise ValueError(f"Cannot set tensor: Dimension mismatch. Got {got} but expected {want} "
                                 f"for dimension {k} of input {d.index}.")
        self._values[d.index] = np.array(a, order="C", copy=True)

    def invoke(self) -> None:
        """Runs the model on the inputs set; get_tensor reads the outputs."""
        self._check_allocated("invoke")
        ins, outs = self._tessera_order
        try:
            result = self._model.run([self._values[i] for i in ins])
        except _tessera.Error as e:
            raise RuntimeError(str(e)) from e
        if len(outs) == 1:
            result = [result]
        for i, r in zip(outs, result):
            self._values[i] = r

    def get_tensor(self, tensor_index: int, subgraph_index: int = 0) -> np.ndarray:
        """A copy of input or output `tensor_index` (outputs: of the last invoke())."""
        if subgraph_index != 0:
            raise ValueError(f"Invalid subgraph index {subgraph_index}: Tessera runs subgraph 0")
        d = self._desc(tensor_index)
        self._check_allocated("get_tensor")
        v = self._values.get(d.index)
        if v is None:
            v = np.zeros(d.shape, d.dtype)
        return v.copy()

    def tensor(self, tensor_index: int):
        """A function returning the tensor's current value (TFLite gives a view; Tessera
        gives a copy, so write with set_tensor)."""
        self._desc(tensor_index)
        return lambda: self.get_tensor(tensor_index)

    def resize_tensor_input(self, input_index: int, tensor_size, strict: bool = False) -> None:
        """Gives an input a new shape; allocate_tensors() then prepares the model for it (imported
        again at that shape; a shape an op cannot take is an error there)."""
        d = self._desc(input_index)
        if d.index not in self._inputs:
            raise ValueError(f"Tensor {d.index} is not an input of the model")
        shape = [int(s) for s in np.asarray(tensor_size).reshape(-1)]
        if any(s < 1 for s in shape):
            raise ValueError(f"Cannot resize input {d.index} to {shape}: dims must be >= 1")
        if strict:
            sig = d.shape_signature
            if len(shape) != len(sig) or any(s != -1 and s != n for s, n in zip(sig, shape)):
                raise ValueError(f"ResizeInputTensorStrict only allows mutating unknown dimensions identified "
                                 f"by -1 (input {d.index}: signature {sig}, asked {shape}).")
        if shape != d.shape:
            d.shape = shape
            self._resized[d.index] = shape
            self._model = None  # invoke needs allocate_tensors() again, as in TFLite

    def reset_all_variables(self) -> None:
        pass  # Tessera's TFLite models hold no variables between runs

    # -- signatures --------------------------------------------------------------------
    def _signature_defs(self) -> List[dict]:
        """The model's signature defs; for a model without any, TFLite's placeholder
        'serving_default' whose inputs and outputs are the tensors by name."""
        if self._signatures:
            return self._signatures
        return [{"key": "serving_default", "subgraph": 0,
                 "inputs": {self._tensors[i].name: i for i in self._inputs},
                 "outputs": {self._tensors[i].name: i for i in self._outputs}}]

    def get_signature_list(self) -> Dict[str, Dict[str, List[str]]]:
        """{signature_key: {'inputs': [names], 'outputs': [names]}}, as TFLite."""
        return {s["key"]: {"inputs": sorted(s["inputs"]), "outputs": sorted(s["outputs"])}
                for s in self._signature_defs()}

    def get_signature_runner(self, signature_key: Optional[str] = None) -> "SignatureRunner":
        sigs = self._signature_defs()
        if signature_key is None:
            if len(sigs) != 1:
                raise ValueError("SignatureDef signature_key is None and model has "
                                 f"{len(sigs)} Signatures. None is only allowed when the model has 1 SignatureDef")
            return SignatureRunner(self, sigs[0])
        for s in sigs:
            if s["key"] == signature_key:
                return SignatureRunner(self, s)
        raise ValueError(f"Invalid signature_key provided: {signature_key!r} (the model has "
                         f"{[s['key'] for s in sigs]})")


class SignatureRunner:
    """TFLite's SignatureRunner: runner(**inputs) -> {output name: array}."""

    def __init__(self, interpreter: Interpreter, signature: dict):
        if signature["subgraph"] != 0:
            raise ValueError("Tessera runs subgraph 0 only")
        self._interpreter = interpreter
        self._sig = signature

    def get_input_details(self) -> Dict[str, dict]:
        return {n: self._interpreter._tensors[i].details() for n, i in self._sig["inputs"].items()}

    def get_output_details(self) -> Dict[str, dict]:
        return {n: self._interpreter._tensors[i].details() for n, i in self._sig["outputs"].items()}

    def allocate_tensors(self) -> None:
        self._interpreter.allocate_tensors()

    def resize_input(self, input_name: str, new_shape: Sequence[int]) -> None:
        self._interpreter.resize_tensor_input(self._index(input_name), new_shape)

    def _index(self, name: str) -> int:
        if name not in self._sig["inputs"]:
            raise ValueError(f"Invalid Input name ({name}) for SignatureDef (inputs: {sorted(self._sig['inputs'])})")
        return self._sig["inputs"][name]

    def __call__(self, **kwargs) -> Dict[str, np.ndarray]:
        if len(kwargs) != len(self._sig["inputs"]):
            raise ValueError(f"Invalid number of inputs provided for running a SignatureDef, expected "
                             f"{len(self._sig['inputs'])} vs provided {len(kwargs)}")
        it = self._interpreter
        if it._model is None or it._resized:
            it.allocate_tensors()
        for name, value in kwargs.items():
            it.set_tensor(self._index(name), value)
        it.invoke()
        return {n: it.get_tensor(i) for n, i in self._sig["outputs"].items()}
