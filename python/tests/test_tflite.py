"""tessera.tflite.Interpreter: the tflite_runtime.interpreter API, its details against the
models' known tensors, its outputs against `tessera run`'s bytes, its errors, and the
label_image example against `tessera classify`."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tessera
from conftest import REPO, fixture
from tessera.image import Image
from tessera.tflite import Interpreter

MNV1 = "models/tflite/mobilenet_v1_0.25_128_quant.tflite"
MNV2 = "models/tflite/mobilenet_v2_1.0_224_quant.tflite"
SSD = "models/tflite/ssd_mobilenet_v1_coco_quant.tflite"
HELLO = "models/tflite/hello_world_int8.tflite"
DETAIL_KEYS = ["name", "index", "shape", "shape_signature", "dtype", "quantization", "quantization_parameters",
               "sparsity_parameters"]


def cli_run(cli, model, inputs, tmp_path, device="cpu"):
    """`tessera run`'s output files' bytes for the given input arrays."""
    args = [cli, "run", str(model), "--output", str(tmp_path / "out"), "--device", device]
    for k, x in enumerate(inputs):
        x.tofile(tmp_path / f"in{k}.bin")
        args += ["--input", str(tmp_path / f"in{k}.bin")]
    subprocess.run(args, check=True, capture_output=True)
    outs = []
    k = 0
    while (tmp_path / f"out.{k}.bin").exists():
        outs.append((tmp_path / f"out.{k}.bin").read_bytes())
        k += 1
    return outs


def test_details_have_tflites_keys_dtypes_and_quantization():
    it = Interpreter(model_path=str(fixture(MNV2)))
    it.allocate_tensors()
    (inp,) = it.get_input_details()
    (out,) = it.get_output_details()
    assert list(inp) == DETAIL_KEYS and list(out) == DETAIL_KEYS
    assert inp["name"] == "input" and inp["index"] == 0
    assert inp["dtype"] is np.uint8 and out["dtype"] is np.uint8
    assert inp["shape"].dtype == np.int32 and inp["shape"].tolist() == [1, 224, 224, 3]
    assert inp["shape_signature"].tolist() == [1, 224, 224, 3]
    assert inp["quantization"] == (0.0078125, 128)
    q = inp["quantization_parameters"]
    assert q["scales"].dtype == np.float32 and q["scales"].tolist() == [0.0078125]
    assert q["zero_points"].dtype == np.int32 and q["zero_points"].tolist() == [128]
    assert q["quantized_dimension"] == 0 and inp["sparsity_parameters"] == {}
    assert out["index"] == 173 and out["shape"].tolist() == [1, 1001]
    assert out["quantization"][1] == 0 and out["quantization"][0] > 0
    # Indices are the model's tensor indices: not 0..n-1 for the SSD detector.
    ssd = Interpreter(model_path=str(fixture(SSD)))
    assert [d["index"] for d in ssd.get_input_details()] == [175]
    assert [d["index"] for d in ssd.get_output_details()] == [167, 168, 169, 170]
    assert [d["dtype"] for d in ssd.get_output_details()] == [np.float32] * 4
    assert ssd.get_output_details()[0]["quantization"] == (0.0, 0)
    # A dynamic batch shows as -1 in shape_signature, as TFLite has it.
    hello = Interpreter(model_path=str(fixture(HELLO)))
    d = hello.get_input_details()[0]
    assert d["dtype"] is np.int8 and d["shape"].tolist() == [1, 1] and d["shape_signature"].tolist() == [-1, 1]


@pytest.mark.parametrize("model,device", [(MNV1, "cpu"), (MNV1, "rknpu"), (MNV1, "tile"), (MNV2, "cpu")])
def test_outputs_equal_tessera_runs_bytes(cli, tmp_path, model, device):
    path = fixture(model)
    it = Interpreter(model_path=str(path), num_threads=2, device=device)
    it.allocate_tensors()
    inp = it.get_input_details()[0]
    x = np.random.default_rng(11).integers(0, 256, size=tuple(inp["shape"]), dtype=np.uint8)
    it.set_tensor(inp["index"], x)
    it.invoke()
    got = it.get_tensor(it.get_output_details()[0]["index"])
    assert got.dtype == np.uint8 and got.shape == tuple(it.get_output_details()[0]["shape"])
    assert [got.tobytes()] == cli_run(cli, path, [x], tmp_path, device)
    assert np.array_equal(it.get_tensor(inp["index"]), x)  # the input as set


def test_ssd_four_outputs_and_model_content_equal_the_cli(cli, tmp_path):
    path = fixture(SSD)
    it = Interpreter(model_content=path.read_bytes())
    it.allocate_tensors()
    inp = it.get_input_details()[0]
    x = np.fromfile(fixture("reference/ssd_table.input.bin"), np.uint8).reshape(tuple(inp["shape"]))
    it.set_tensor(inp["index"], x)
    it.invoke()
    got = [it.get_tensor(d["index"]).tobytes() for d in it.get_output_details()]
    assert got == cli_run(cli, path, [x], tmp_path)
    for k, d in enumerate(it.get_output_details()):  # and TFLite's own outputs
        assert got[k] == fixture(f"reference/ssd_table.tflite-output.{k}.bin").read_bytes()


def test_resize_tensor_input_batches_rows():
    it = Interpreter(model_path=str(fixture(HELLO)))
    it.allocate_tensors()
    i, o = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    xs = np.array([[-128], [0], [5], [100], [127]], np.int8)
    rows = []
    for x in xs:
        it.set_tensor(i, x.reshape(1, 1))
        it.invoke()
        rows.append(it.get_tensor(o))
    it.resize_tensor_input(i, [5, 1], strict=True)  # the batch is -1 in shape_signature
    assert it.get_input_details()[0]["shape"].tolist() == [5, 1]
    it.allocate_tensors()
    assert it.get_output_details()[0]["shape"].tolist() == [5, 1]
    it.set_tensor(i, xs)
    it.invoke()
    assert it.get_tensor(o).tobytes() == np.concatenate(rows).tobytes()


def test_resize_tensor_input_follows_shape_arithmetic():
    # The dynamic-input chain SHAPE -> GATHER / STRIDED_SLICE -> MUL -> PACK -> CONCATENATION
    # -> RESHAPE -> ADD (written by tests/import/tflite/dynamic_shape_test.cpp): x [B,L,6] ->
    # y = x reshaped to [B,2L,3] + [0.25,-1.5,3]. The RESHAPE must follow the resized input.
    it = Interpreter(model_path=str(REPO / "fuzz/regressions/tflite_fuzz/reshape_chain_dynamic"))
    i, o = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    assert it.get_input_details()[0]["shape_signature"].tolist() == [-1, -1, 6]
    it.resize_tensor_input(i, [3, 5, 6], strict=True)
    it.allocate_tensors()
    assert it.get_output_details()[0]["shape"].tolist() == [3, 10, 3]
    x = np.random.default_rng(3).uniform(-4, 4, (3, 5, 6)).astype(np.float32)
    it.set_tensor(i, x)
    it.invoke()
    want = (x.reshape(3, 10, 3).astype(np.float64) + [0.25, -1.5, 3.0]).astype(np.float32)
    assert it.get_tensor(o).tobytes() == want.tobytes()


def test_signature_runner():
    it = Interpreter(model_path=str(fixture(HELLO)))
    assert it.get_signature_list() == {"serving_default": {"inputs": ["dense_input"], "outputs": ["dense_2"]}}
    runner = it.get_signature_runner()
    assert list(runner.get_input_details()) == ["dense_input"]
    x = np.array([[5]], np.int8)
    out = runner(dense_input=x)
    assert list(out) == ["dense_2"] and out["dense_2"].dtype == np.int8 and out["dense_2"].shape == (1, 1)
    it2 = Interpreter(model_path=str(fixture(HELLO)))
    it2.allocate_tensors()
    it2.set_tensor(it2.get_input_details()[0]["index"], x)
    it2.invoke()
    assert np.array_equal(it2.get_tensor(it2.get_output_details()[0]["index"]), out["dense_2"])
    with pytest.raises(ValueError, match="Invalid signature_key"):
        it.get_signature_runner("nope")
    with pytest.raises(ValueError, match="Invalid Input name"):
        runner(wrong=x)
    # A model without signature defs has TFLite's placeholder 'serving_default'.
    mn = Interpreter(model_path=str(fixture(MNV1)))
    assert mn.get_signature_list() == {"serving_default": {"inputs": ["input"],
                                                           "outputs": [mn.get_output_details()[0]["name"]]}}


def test_errors():
    path = str(fixture(MNV1))
    with pytest.raises(ValueError):
        Interpreter()
    with pytest.raises(ValueError):
        Interpreter(model_path=path, model_content=b"x")
    with pytest.raises((ValueError, OSError)):
        Interpreter(model_path="/nonexistent/model.tflite")
    with pytest.raises(ValueError):
        Interpreter(model_content=b"not a model at all")
    it = Interpreter(model_path=path)
    inp = it.get_input_details()[0]
    x = np.zeros((1, 128, 128, 3), np.uint8)
    with pytest.raises(RuntimeError, match="allocate_tensors"):
        it.invoke()
    with pytest.raises(RuntimeError, match="allocate_tensors"):
        it.set_tensor(inp["index"], x)
    it.allocate_tensors()
    with pytest.raises(ValueError, match="Got value of type FLOAT32 but expected type UINT8"):
        it.set_tensor(inp["index"], x.astype(np.float32))
    with pytest.raises(ValueError, match="Dimension mismatch"):
        it.set_tensor(inp["index"], np.zeros((1, 64, 64, 3), np.uint8))
    with pytest.raises(ValueError, match="Dimension mismatch"):
        it.set_tensor(inp["index"], np.zeros((128, 128, 3), np.uint8))
    with pytest.raises(ValueError, match="not an input or output"):
        it.set_tensor(12345, x)
    with pytest.raises(ValueError, match="is an output"):
        it.set_tensor(it.get_output_details()[0]["index"], x)
    with pytest.raises(ValueError, match="not an input or output"):
        it.get_tensor(3)
    # The stored shape changes nothing; a shape an op cannot take fails in allocate_tensors.
    it.resize_tensor_input(inp["index"], [1, 128, 128, 3])
    it.invoke()
    with pytest.raises(ValueError, match="ResizeInputTensorStrict"):
        it.resize_tensor_input(inp["index"], [2, 128, 128, 3], strict=True)
    it.resize_tensor_input(inp["index"], [2, 128, 128, 3])
    with pytest.raises(RuntimeError, match="allocate_tensors"):
        it.invoke()
    with pytest.raises(RuntimeError, match="reshape"):
        it.allocate_tensors()
    with pytest.raises(tessera.Error, match="no-such-device"):
        Interpreter(model_path=path, device="no-such-device").allocate_tensors()
    with pytest.warns(RuntimeWarning, match="experimental_delegates"):
        Interpreter(model_path=path, experimental_delegates=["libedgetpu.so.1"])


def test_image_resize_is_classifys():
    m = tessera.load(fixture(MNV2))
    img = Image.open(fixture("images/grace_hopper.bmp")).resize((224, 224))
    x = np.expand_dims(img, axis=0)
    assert x.dtype == np.uint8 and x.shape == (1, 224, 224, 3)
    assert np.array_equal(x, m.image_input(fixture("images/grace_hopper.bmp")))
    with pytest.raises(FileNotFoundError):
        Image.open("/nonexistent.bmp")


def test_detect_finds_the_person_and_the_tie():
    # YOLOv8n on Grace Hopper through Model.detect: the library letterboxes the photo,
    # runs and decodes (COCO's 80 classes: person 0, tie 27), boxes in the photo's pixels.
    m = tessera.load(fixture("models/tflite/corpus/yolov8n_full_integer_quant.tflite"))
    found = m.detect(fixture("images/grace_hopper.bmp"), threshold=0.3)
    assert [d["class_id"] for d in found] == [0, 27]
    # The class names the Ultralytics export carries in its metadata.
    assert len(m.labels) == 80 and [m.labels[d["class_id"]] for d in found] == ["person", "tie"]
    assert [d["label"] for d in found] == ["person", "tie"]
    person, tie = found
    assert person["score"] > 0.85 and person["score"] > tie["score"]
    left, top, right, bottom = tie["box"]
    assert 200 < left < right < 320 and 380 < top < bottom < 560
    assert len(m.detect(fixture("images/grace_hopper.bmp"), threshold=0.25, max_detections=1)) == 1
    # The letterboxed input: grey 114 in the side columns, quantized with the input's parameters.
    x = m.image_input(fixture("images/grace_hopper.bmp"))
    assert x.shape == (1, 640, 640, 3)
    assert len(np.unique(x[0, :, 0, :])) == 1 and len(np.unique(x[0, :, 639, :])) == 1
    assert len(np.unique(x[0, 320, 100:540, 0])) > 10
    with pytest.raises(tessera.Error, match="is not an object detector"):
        tessera.load(fixture(MNV2)).detect(fixture("images/grace_hopper.bmp"))
    # A classifier with ImageNet's labels packed by TFLite's metadata writer (a background
    # line first); a model without any: [].
    labels = tessera.load(fixture(MNV2)).labels
    assert len(labels) == 1001 and labels[0] == "background" and labels[653] == "military uniform"
    assert tessera.load(fixture("models/tflite/person_detect.tflite")).labels == []


def top5(text):
    """The table rows (index, score, label) of classify's or label_image's output."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.split()[:3] == ["index", "score", "label"])
    return [l.strip() for l in lines[start + 1:start + 6]]


@pytest.mark.parametrize("device", ["cpu", "rknpu"])
def test_label_image_example_prints_classifys_top5(cli, device):
    model, image, labels = fixture(MNV2), fixture("images/grace_hopper.bmp"), fixture("labels/imagenet_labels.txt")
    ours = subprocess.run([sys.executable, str(REPO / "examples/python/label_image.py"), "--model_file", str(model),
                           "--image", str(image), "--label_file", str(labels), "--device", device],
                          check=True, capture_output=True, text=True, env=dict(os.environ))
    theirs = subprocess.run([cli, "classify", str(model), str(image), "--labels", str(labels), "--top", "5",
                             "--device", device], check=True, capture_output=True, text=True)
    rows = top5(ours.stdout)
    assert rows == top5(theirs.stdout)
    assert rows[0].startswith("653") and "military uniform" in rows[0]
