#!/usr/bin/env python3
"""label_image for Tessera: TensorFlow Lite's Python label_image example
(tensorflow/lite/examples/python/label_image.py), with Tessera in place of tflite_runtime
and PIL. Only the two imports below differ from a tflite_runtime script:

    import tflite_runtime.interpreter as tflite   ->  import tessera.tflite as tflite
    from PIL import Image                         ->  from tessera.image import Image

    python3 examples/python/label_image.py \\
        --model_file ../shared/models/tflite/mobilenet_v2_1.0_224_quant.tflite \\
        --image ../shared/images/grace_hopper.bmp \\
        --label_file ../shared/labels/imagenet_labels.txt [--device rknpu]

prints the top 5 as `tessera classify MODEL IMAGE --labels FILE --top 5` does (index,
dequantized score, label), then the invoke time.
"""
import argparse
import time

import numpy as np

import tessera.tflite as tflite
from tessera.image import Image


def load_labels(filename):
    with open(filename, "r") as f:
        return [line.strip() for line in f.readlines()]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("-i", "--image", default="/tmp/grace_hopper.bmp", help="image to be classified")
    parser.add_argument("-m", "--model_file", default="/tmp/mobilenet_v1_1.0_224_quant.tflite",
                        help=".tflite model to be executed")
    parser.add_argument("-l", "--label_file", default="/tmp/labels.txt", help="name of file containing labels")
    parser.add_argument("--input_mean", default=127.5, type=float, help="input_mean")
    parser.add_argument("--input_std", default=127.5, type=float, help="input standard deviation")
    parser.add_argument("--num_threads", default=None, type=int, help="number of threads")
    parser.add_argument("-e", "--ext_delegate", help="external_delegate_library path")
    parser.add_argument("-k", "--top_k", default=5, type=int, help="how many results to print")
    parser.add_argument("--device", default="cpu", help="Tessera device: cpu, tile, rknpu")
    args = parser.parse_args()

    ext_delegate = None
    if args.ext_delegate is not None:
        ext_delegate = [args.ext_delegate]  # Tessera warns and ignores delegates

    interpreter = tflite.Interpreter(model_path=args.model_file, experimental_delegates=ext_delegate,
                                     num_threads=args.num_threads, device=args.device)
    interpreter.allocate_tensors()

    input_details = interpreter.get_input_details()
    output_details = interpreter.get_output_details()

    # check the type of the input tensor
    floating_model = input_details[0]["dtype"] == np.float32

    # NxHxWxC, H:1, W:2
    height = input_details[0]["shape"][1]
    width = input_details[0]["shape"][2]
    img = Image.open(args.image).resize((width, height))

    # add N dim
    input_data = np.expand_dims(img, axis=0)

    if floating_model:
        input_data = (np.float32(input_data) - args.input_mean) / args.input_std

    interpreter.set_tensor(input_details[0]["index"], input_data)

    start_time = time.time()
    interpreter.invoke()
    stop_time = time.time()

    output_data = interpreter.get_tensor(output_details[0]["index"])
    results = np.squeeze(output_data)
    scale, zero_point = output_details[0]["quantization"]
    if scale:
        results = np.float32(scale) * (results.astype(np.float32) - np.float32(zero_point))  # as tessera classify

    top_k = np.argsort(-results, kind="stable")[:args.top_k]  # ties: the lower index first, as the CLI
    labels = load_labels(args.label_file)
    print("{:>6}  {:>8}  {}".format("index", "score", "label"))
    for i in top_k:
        print("{:6d}  {:8.4f}  {}".format(int(i), float(results[i]), labels[i] if i < len(labels) else ""))

    print("time: {:.3f}ms".format((stop_time - start_time) * 1000))
