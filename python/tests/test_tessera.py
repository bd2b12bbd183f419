"""The Python package against the shared models, the TFLite interpreter's own outputs and
the tessera CLI of the same build (byte for byte for the quantized models)."""
import re
import subprocess

import numpy as np
import pytest

import tessera
from conftest import REPO, SHARED, fixture

MNV1 = "models/tflite/mobilenet_v1_0.25_128_quant.tflite"


def test_devices_are_objects_cpu_first():
    devs = tessera.devices()
    assert devs[0].name == "cpu" and not devs[0].is_model
    names = [d.name for d in devs]
    assert "rknpu" in names and any(n.startswith("tile:") for n in names)
    rk = next(d for d in devs if d.name == "rknpu")
    assert rk.is_model and rk.available and rk.description
    assert isinstance(rk.properties, dict)


def test_inputs_outputs_and_the_interpreters_output():
    m = tessera.load(fixture(MNV1))
    assert m.device == "cpu"
    (inp,) = m.inputs
    assert inp.dtype == "u8" and inp.shape == (1, 128, 128, 3) and inp.quantized
    assert inp.scale[0] > 0 and len(inp.zero_point) == 1
    x = np.fromfile(fixture("reference/mnv1_128_cat.input.bin"), np.uint8).reshape(inp.shape)
    ref = np.fromfile(fixture("reference/mnv1_128_cat.tflite-output.bin"), np.uint8)
    out = m.run(x)
    assert out.dtype == np.uint8 and out.shape == m.outputs[0].shape
    assert out.tobytes() == ref.tobytes()
    # A list and a dict by name give the same; a non-contiguous view is converted.
    assert m.run([x]).tobytes() == ref.tobytes()
    assert m.run({inp.name: x}).tobytes() == ref.tobytes()
    flipped = np.ascontiguousarray(x[:, ::-1])
    assert m.run(flipped[:, ::-1]).tobytes() == ref.tobytes()


def test_rknpu_outputs_equal_the_cli_byte_for_byte(cli, tmp_path):
    model = fixture(MNV1)
    rng = np.random.default_rng(7)
    x = rng.integers(0, 256, size=(1, 128, 128, 3), dtype=np.uint8)
    x.tofile(tmp_path / "in.bin")
    subprocess.run([cli, "run", str(model), "--input", str(tmp_path / "in.bin"), "--output", str(tmp_path / "out"),
                    "--device", "rknpu"], check=True, capture_output=True)
    expected = (tmp_path / "out.0.bin").read_bytes()
    m = tessera.load(model, device="rknpu")
    assert m.run(x).tobytes() == expected
    info = m.inspect()
    assert "rknpu" in info["devices"]
    ops = {(n["op"], n["device"]) for n in info["nodes"]}
    assert ("conv2d", "rknpu") in ops
    assert "rknpu" in info["report"]
    prof = m.profile()
    assert prof["host_seconds"] > 0 and len(prof["nodes"]) > 0
    # The cpu's share priced on the board's Cortex-A76: the input and output conversions at least.
    assert prof["board_cpu"] == "rk3588-a76" and prof["board_io_seconds"] > 0
    for n in prof["nodes"]:
        assert (n["board_seconds"] > 0) == (n["device"] == "cpu" or n["label"].startswith("transfer")), n


def test_ssd_four_outputs_equal_the_interpreters():
    m = tessera.load(fixture("models/tflite/ssd_mobilenet_v1_coco_quant.tflite"), threads=2)
    x = np.fromfile(fixture("reference/ssd_table.input.bin"), np.uint8).reshape(m.inputs[0].shape)
    outs = m.run(x)
    assert isinstance(outs, list) and len(outs) == 4
    for k, out in enumerate(outs):
        ref = fixture(f"reference/ssd_table.tflite-output.{k}.bin").read_bytes()
        assert out.dtype == np.float32
        assert out.tobytes() == ref  # byte for byte, as the C++ detection test checks


def test_errors_are_tessera_errors_with_the_message():
    with pytest.raises(tessera.Error) as e:
        tessera.load("/nonexistent/model.tflite")
    assert e.value.code == "not_found" and "/nonexistent/model.tflite" in str(e.value)
    m = tessera.load(fixture(MNV1))
    with pytest.raises(tessera.Error) as e:
        m.run(np.zeros((1, 64, 64, 3), np.uint8))
    assert e.value.code == "invalid_argument" and "[1,128,128,3]" in str(e.value)
    with pytest.raises(tessera.Error) as e:
        m.run(np.zeros((1, 128, 128, 3), np.float32))
    assert "u8" in str(e.value)
    with pytest.raises(tessera.Error) as e:
        m.run({"no such input": np.zeros((1, 128, 128, 3), np.uint8)})
    assert e.value.code == "not_found"
    with pytest.raises(tessera.Error) as e:
        tessera.load(fixture(MNV1), device="no-such-device")
    assert "no-such-device" in str(e.value)
    assert isinstance(e.value, RuntimeError)


def cli_generate(cli, model, prompt, n):
    r = subprocess.run([cli, "generate", str(model), "-p", prompt, "-n", str(n)], check=True, capture_output=True,
                       text=True)
    return r.stdout


def test_generate_streams_what_the_cli_prints(cli):
    model = fixture("models/gguf/aidreams260K.gguf")
    prompt = "Once upon a time"
    gen = tessera.generate(model, prompt, max_tokens=40)
    pieces = list(gen)
    assert len(pieces) > 1
    assert prompt + "".join(pieces) + "\n" == cli_generate(cli, model, prompt, 40)
    assert gen.stats["text"] == "".join(pieces) and len(gen.stats["tokens"]) == len(pieces)


def test_language_model_reuse_early_stop_and_tokens():
    lm = tessera.LanguageModel(str(fixture("models/gguf/aidreams260K-Q8_0.gguf")))
    assert lm.vocab_size > 0 and lm.context_length > 0 and lm.architecture == "llama"
    full = list(tessera.generate(lm, "The robot", max_tokens=16))
    with tessera.generate(lm, "The robot", max_tokens=16) as g:
        first = [next(g), next(g), next(g)]
    assert first == full[:3]
    again = list(tessera.generate(lm, "The robot", max_tokens=16))  # a fresh cache each time
    assert again == full
    ids = lm.tokenize("The robot")
    assert lm.detokenize(ids).strip() == "The robot"
    with pytest.raises(tessera.Error) as e:
        list(tessera.generate(lm, "x", temperature=0.5, top_p=0.0))
    assert "top-p" in str(e.value)


def test_language_model_load_progress_and_cancel():
    path = str(fixture("models/gguf/qwen2-256d-2L-Q4_K_M-embQ3_K.gguf"))
    seen = []
    lm = tessera.LanguageModel(path, progress=seen.append)  # None from it continues
    assert lm.vocab_size > 0
    assert len(seen) >= 4 and seen[-1] == 1.0 and seen == sorted(seen)
    calls = []
    with pytest.raises(tessera.Error) as e:
        tessera.LanguageModel(path, progress=lambda f: calls.append(f) or len(calls) < 2)
    assert "cancelled" in str(e.value) and len(calls) == 2

    class Stop(Exception):
        pass

    def raising(f):
        raise Stop()

    with pytest.raises(Stop):  # an exception in the callback comes out of the constructor
        tessera.LanguageModel(path, progress=raising)


def test_language_model_options_feed_chat_and_stop():
    path = str(fixture("models/gguf/kquant/kq-llama-256d-4L-Q8_0.gguf"))  # head size 32, for q8_0
    lm = tessera.LanguageModel(path, kv_type="q8_0")
    ids = lm.tokenize("Once upon a time")
    logits = lm.feed(ids)
    assert logits.dtype == np.float32 and logits.shape == (lm.vocab_size,)
    assert lm.position == len(ids)
    lm.reset()
    assert lm.position == 0 and np.array_equal(lm.feed(ids), logits)
    with pytest.raises(tessera.Error) as e:
        tessera.LanguageModel(path, kv_type="q4_0")
    assert "kv_type" in str(e.value)
    lm = tessera.LanguageModel(str(fixture("models/gguf/aidreams260K.gguf")))  # pieces of whole characters
    full = "".join(tessera.generate(lm, "Once upon a time", max_tokens=30))
    stop = full[10:14]
    g = tessera.generate(lm, "Once upon a time", max_tokens=30, stop=[stop])
    assert "".join(g) == full[:full.find(stop)] and g.stats["stop_reason"] == "stop_string"
    qwen = tessera.LanguageModel(str(fixture("models/gguf/qwen2-256d-2L-Q4_K_M-embQ3_K.gguf")))
    assert qwen.chat_template["name"] == "chatml"
    text = qwen.render_chat([("user", "Hi")])
    assert text.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert qwen.tokenize("<|im_end|>", False, True) == qwen.chat_template["stop_tokens"]


def readme_python_snippets():
    text = (REPO / "README.md").read_text()
    section = text.split("### Python", 1)[1].split("\n## ", 1)[0] if "### Python" in text else ""
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_readme_python_snippets_run(monkeypatch, capsys):
    snippets = readme_python_snippets()
    assert snippets, "README.md has no ```python snippet in its Python section"
    fixture(MNV1)
    fixture("models/gguf/aidreams260K.gguf")
    monkeypatch.chdir(REPO)
    if not (REPO.parent / "shared").exists():
        pytest.skip("the README snippets read ../shared")
    for code in snippets:
        exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out


def test_quantize_a_float_model_from_arrays_and_images(tmp_path):
    hello = fixture("models/tflite/corpus/micro_hello_world_float.tflite")
    rng = np.random.default_rng(5)
    calib = [rng.uniform(0, 6.28, size=(1, 1)).astype(np.float32) for _ in range(32)]
    q = tessera.quantize(str(hello), calib, out=str(tmp_path / "hello_int8.tflite"))
    assert (tmp_path / "hello_int8.tflite").read_bytes() == q
    m = tessera.load(str(tmp_path / "hello_int8.tflite"))
    assert m.inputs[0].dtype == "f32"  # float edges: QUANTIZE / DEQUANTIZE inside
    for x in (0.5, 1.5, 3.0, 4.5):
        y = m.run(np.array([[x]], np.float32))
        assert abs(float(y.reshape(-1)[0]) - np.sin(x)) < 0.2
    # Image paths are prepared as detect feeds the model; int8 edges on request.
    yolo = fixture("models/tflite/corpus/yolov8n_int8.tflite")
    q8 = tessera.quantize(str(yolo), [str(fixture("images/grace_hopper.bmp"))], int8_io=True)
    (tmp_path / "y8.tflite").write_bytes(q8)
    y8 = tessera.load(str(tmp_path / "y8.tflite"))
    assert y8.inputs[0].dtype == "i8"
    found = y8.detect(str(fixture("images/grace_hopper.bmp")))
    assert found and found[0]["label"] == "person" and found[0]["score"] > 0.8
    with pytest.raises(tessera.Error) as e:
        tessera.quantize(str(hello), [])
    assert e.value.code == "invalid_argument" and "no calibration input" in str(e.value)
