// Tessera's embedding API for models: load a TFLite or GGUF model once, run it in sessions.
//
//   auto model = tessera::Model::load("mobilenet.tflite");          // Result<shared_ptr<const Model>>
//   tessera::SessionOptions opts;  opts.device = "rknpu";
//   auto session = tessera::ModelSession::create(*model, opts);     // plans, compiles, uploads
//   (*session)->set_input(0, pixels.data(), pixels.size());
//   (*session)->run();
//   auto scores = (*session)->output(0);                             // bytes in the model's dtype
//
// Every function reports failure through Status / Result (tessera/status.h) with a message
// naming what is wrong and where; none throws for bad input or bad files.
//
// Thread safety:
// - A Model is immutable once loaded. One Model (held by shared_ptr) may be used by any
//   number of ModelSessions on any number of threads at the same time; its weights are
//   shared, never copied per session.
// - A ModelSession is used by one thread at a time (set_input / run / output change its
//   state); create one session per thread. Sessions are independent of each other, and
//   sessions whose SessionOptions name the same device each create their own instance of it.
// - list_devices() and Model::load may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/detect.h"
#include "tessera/export.h"
#include "tessera/session.h"
#include "tessera/status.h"
#include "tessera/types.h"

namespace tessera {

// A device built into the library, with the properties of its default instance.
struct TESSERA_API DeviceSummary {
  std::string name;         // spec to pass as SessionOptions::device ("cpu", "tile:wormhole_n150")
  std::string description;  // one line
  bool is_model = false;    // a device model: device times are modelled, not measured
  int64_t capacity_bytes = 0;
  int cores = 1;
  bool available = true;    // false when creating it failed; `error` says why
  std::string error;
  std::vector<std::pair<std::string, std::string>> properties;  // device-specific facts
};
// Every device and preset built in, cpu first.
TESSERA_API std::vector<DeviceSummary> list_devices();

// The file formats Tessera loads, and the importer each goes to.
enum class ModelFormat {
  tflite,  // a TensorFlow Lite flatbuffer: Model::load (the TFLite importer)
  gguf,    // a GGUF file: LanguageModel::load (tessera/generate.h), or Model::load for its decode step
};
TESSERA_API const char* model_format_name(ModelFormat f);  // "tflite", "gguf"
// The format of a model file, the one choice of importer the CLI, the server and
// Model::load share: the magic bytes when they name a format ("GGUF" at byte 0, TFLite's
// file identifier "TFL3" at byte 4), else the extension (.tflite, .gguf), so that a
// damaged .gguf or .tflite file still reaches its importer's error. Errors: not_found
// (no such file), invalid_argument (a directory), unsupported (any other file, naming it
// and its extension).
TESSERA_API Result<ModelFormat> model_format(const std::string& path);

// A model input or output: name, element type, shape, quantization and host bytes.
struct TESSERA_API TensorInfo {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  QuantParams quant;   // empty() for float tensors
  int64_t bytes = 0;   // row-major host bytes: what set_input takes and output returns
  // Inputs: the dims the file leaves dynamic (TFLite shape_signature -1), ascending; the
  // model was loaded at `shape` (the file's, or ModelLoadOptions::input_shapes).
  std::vector<int64_t> dynamic_dims;
};

// The shape one model input is loaded at (as TFLite's ResizeInputTensor, ONNX Runtime's
// free dimension overrides): `input` is its name, or its index in decimal.
struct TESSERA_API InputShape {
  std::string input;
  std::vector<int64_t> shape;
};

// Options of Model::load / from_tflite_buffer.
struct TESSERA_API ModelLoadOptions {
  // TFLite: shapes for inputs whose dims the file leaves dynamic (TensorInfo::dynamic_dims);
  // each entry names a model input at most once, keeps its rank and the dims the file
  // fixes, and sets each dynamic dim to at least 1. Intermediate shapes, and the outputs,
  // follow. Errors (invalid_argument) name the input and the dim. Not for GGUF files.
  std::vector<InputShape> input_shapes;
  // True: any dim of those inputs may change, not only the dynamic ones (TFLite's
  // ResizeInputTensor rather than ResizeInputTensorStrict; the Python TFLite Interpreter's
  // resize_tensor_input). The rank must still agree.
  bool any_dim = false;
};

// A loaded model: its graph and the description of its inputs and outputs.
// Label lines (a labels file, or Model::labels) matched to a model's `classes` outputs, as
// `tessera classify` / `detect` read them: trailing empty lines dropped; one line more than
// the classes starts with a background class, which is dropped; a list with placeholder
// lines ("???" or empty: ids a dataset leaves unused, as COCO's 91 of which 80 are named)
// whose named lines are exactly the classes gives those, in order; otherwise the lines as
// they are (index i names class i where the list reaches).
TESSERA_API std::vector<std::string> labels_for_classes(std::vector<std::string> lines, int64_t classes);

class TESSERA_API Model {
 public:
  // Loads a .tflite file (the TFLite importer) or a .gguf llama model (its 1-token decode
  // step graph; for text generation use LanguageModel in tessera/generate.h).
  static Result<std::shared_ptr<const Model>> load(const std::string& path, const ModelLoadOptions& opts = {});
  // Imports a .tflite model held in memory; `bytes` must outlive the Model unless its
  // owner keeps it alive (ConstData::owner).
  static Result<std::shared_ptr<const Model>> from_tflite_buffer(const ConstData& bytes,
                                                                 const ModelLoadOptions& opts = {});
  // Wraps a graph built by hand or by another frontend (checked with Graph::validate).
  static Result<std::shared_ptr<const Model>> from_graph(Graph g, std::string name = "graph");

  const std::string& name() const { return name_; }  // the file's path, or the given name
  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  // Index of the input / output with this name; error not_found listing the names.
  Result<size_t> input_index(const std::string& name) const;
  Result<size_t> output_index(const std::string& name) const;
  const Graph& graph() const { return graph_; }
  // The class names the model file carries, one per line as written, or empty: the
  // 'names' of an Ultralytics export's metadata, or the labels file that TFLite's metadata
  // writer (Model Maker, TF Hub) packs into the model, whose first line may be a
  // background class (1001 names for 1000 classes).
  const std::vector<std::string>& labels() const { return labels_; }

  // An image file (BMP, JPEG, PNG) decoded and converted to input `index`: resized
  // bilinearly to the input's height and width, in its dtype, quantization and layout
  // (NHWC or NCHW), as `tessera classify` feeds vision models; for a YOLO detector
  // (tessera/detect.h) letterboxed instead and fed as pixel / 255, as `tessera detect`
  // does. The bytes suit set_input.
  Result<std::vector<uint8_t>> image_input(const std::string& image_path, size_t index = 0) const;

 private:
  Model() = default;
  static Result<std::shared_ptr<const Model>> make(Graph g, std::string name,
                                                   std::vector<std::vector<int64_t>> dynamic_dims = {});
  std::string name_;
  Graph graph_;
  std::vector<TensorInfo> inputs_, outputs_;
  std::vector<std::string> labels_;
};

// A model prepared for one device: plan, compiled programs and resident weights. Inputs
// and outputs are row-major host bytes in the tensor's dtype (TensorInfo::bytes).
class TESSERA_API ModelSession {
 public:
  static Result<std::unique_ptr<ModelSession>> create(std::shared_ptr<const Model> model,
                                                      const SessionOptions& opts = {});
  ~ModelSession();

  const Model& model() const { return *model_; }
  size_t num_inputs() const { return model_->inputs().size(); }
  size_t num_outputs() const { return model_->outputs().size(); }
  const TensorInfo& input_info(size_t i) const { return model_->inputs().at(i); }
  const TensorInfo& output_info(size_t i) const { return model_->outputs().at(i); }

  // Copies `bytes` bytes (exactly the input's size) into input `index` / the named input.
  Status set_input(size_t index, const void* data, int64_t bytes);
  Status set_input(const std::string& name, const void* data, int64_t bytes);

  // User-provided buffers: a bound input is read from `data` at every run() (the caller
  // keeps it valid and unchanged during run); a bound output is written to `data` at the
  // end of every run(). Binding nullptr removes the binding.
  Status bind_input(size_t index, const void* data, int64_t bytes);
  Status bind_output(size_t index, void* data, int64_t bytes);

  Status run();

  // Output `index` of the last run, as a new vector, or copied into `dst` (exactly its size).
  Result<std::vector<uint8_t>> output(size_t index) const;
  Result<std::vector<uint8_t>> output(const std::string& name) const;
  Status read_output(size_t index, void* dst, int64_t bytes) const;

  // The planned session underneath: devices, placement, per-op profile of the last run.
  const Session& session() const { return *session_; }

  // Object detection in one call (tessera/detect.h): the image file prepared as
  // Model::image_input prepares it, set as input 0, run, and the outputs decoded into
  // boxes in the image's pixels, best first. Errors name what is wrong (not a detector,
  // the image, the options).
  Result<std::vector<Detection>> detect(const std::string& image_path, const DetectOptions& o = {});

 private:
  ModelSession() = default;
  Status check_index(size_t index, bool input) const;
  Status check_bytes(const TensorInfo& t, int64_t bytes, const char* what) const;
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Session> session_;
  std::vector<std::pair<const void*, int64_t>> bound_in_;
  std::vector<std::pair<void*, int64_t>> bound_out_;
};

}  // namespace tessera
