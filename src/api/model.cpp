// The embedding API for models (include/tessera/model.h): a loaded, immutable Model and
// ModelSession, a thin layer over Graph and Session with names, infos and user buffers.
#include "tessera/model.h"
#include "tessera/backend/plan.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "import/gguf/llama_model.h"
#include "import/tflite/image.h"
#include "import/tflite/tflite_importer.h"

namespace tessera {

std::vector<DeviceSummary> list_devices() {
  std::vector<DeviceSummary> out;
  for (const DeviceInfo& info : device_registry()) {
    std::vector<std::string> presets = info.presets.empty() ? std::vector<std::string>{""} : info.presets;
    for (const std::string& preset : presets) {
      DeviceSummary s;
      s.name = preset.empty() ? info.name : info.name + ":" + preset;
      s.description = info.summary;
      auto dev = create_device(s.name);
      if (!dev.ok()) {
        s.available = false;
        s.error = dev.status().message();
      } else {
        const DeviceProperties& p = (*dev)->properties();
        s.description = p.description;
        s.is_model = p.is_model;
        s.capacity_bytes = p.capacity_bytes;
        s.cores = p.cores;
        s.properties = p.extra;
      }
      out.push_back(std::move(s));
    }
  }
  return out;
}

namespace {

Result<TensorInfo> info_of(const Tensor& t) {
  TensorInfo i;
  i.name = t.name;
  i.dtype = t.dtype;
  i.shape = t.shape;
  i.quant = t.quant;
  TS_ASSIGN_OR_RETURN(i.bytes, t.host_bytes());
  return i;
}

Result<size_t> find_index(const std::vector<TensorInfo>& list, const std::string& name, const char* what) {
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].name == name) return i;
  std::string names;
  for (const auto& t : list) names += (names.empty() ? "'" : ", '") + t.name + "'";
  return error(StatusCode::not_found, "the model has no ", what, " named '", name, "' (its ", what, "s: ", names,
               ")");
}

}  // namespace

Result<std::shared_ptr<const Model>> Model::make(Graph g, std::string name,
                                                 std::vector<std::vector<int64_t>> dynamic_dims) {
  TS_RETURN_IF_ERROR(g.validate().with_context("model '" + name + "'"));
  std::shared_ptr<Model> m(new Model());
  m->name_ = std::move(name);
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    TS_ASSIGN_OR_RETURN(TensorInfo i, info_of(g.tensor(g.inputs[k])));
    if (k < dynamic_dims.size()) i.dynamic_dims = std::move(dynamic_dims[k]);
    m->inputs_.push_back(std::move(i));
  }
  for (TensorId id : g.outputs) {
    TS_ASSIGN_OR_RETURN(TensorInfo i, info_of(g.tensor(id)));
    m->outputs_.push_back(std::move(i));
  }
  m->graph_ = std::move(g);
  return std::shared_ptr<const Model>(std::move(m));
}

std::vector<std::string> labels_for_classes(std::vector<std::string> lines, int64_t classes) {
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (static_cast<int64_t>(lines.size()) == classes + 1) lines.erase(lines.begin());
  if (static_cast<int64_t>(lines.size()) != classes) {
    std::vector<std::string> named;
    for (const std::string& n : lines)
      if (!n.empty() && n != "???") named.push_back(n);
    if (static_cast<int64_t>(named.size()) == classes) return named;
  }
  return lines;
}

const char* model_format_name(ModelFormat f) { return f == ModelFormat::gguf ? "gguf" : "tflite"; }

Result<ModelFormat> model_format(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) return error(StatusCode::not_found, "model file '", path, "' does not exist");
  if (std::filesystem::is_directory(st))
    return error(StatusCode::invalid_argument, "model file '", path, "' is a directory");
  char head[8] = {};
  std::ifstream f(path, std::ios::binary);
  f.read(head, sizeof head);
  if (f.gcount() >= 4 && std::string_view(head, 4) == "GGUF") return ModelFormat::gguf;
  if (f.gcount() == 8 && std::string_view(head + 4, 4) == "TFL3") return ModelFormat::tflite;
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".tflite") return ModelFormat::tflite;
  if (ext == ".gguf") return ModelFormat::gguf;
  return error(StatusCode::unsupported, "model '", path, "': no importer for '", ext,
               "' files (Tessera reads .tflite and .gguf)");
}

namespace {

tflite::ImportOptions import_options(const ModelLoadOptions& opts) {
  tflite::ImportOptions o;
  for (const InputShape& s : opts.input_shapes) o.input_shapes.push_back({s.input, Shape(s.shape.begin(), s.shape.end())});
  o.any_dim = opts.any_dim;
  return o;
}

}  // namespace

Result<std::shared_ptr<const Model>> Model::load(const std::string& path, const ModelLoadOptions& opts) {
  TS_ASSIGN_OR_RETURN(ModelFormat format, model_format(path));
  if (format == ModelFormat::tflite) {
    tflite::ImportReport report;
    TS_ASSIGN_OR_RETURN(Graph g, tflite::load_tflite_file(path, import_options(opts), &report));
    TS_ASSIGN_OR_RETURN(auto m, make(std::move(g), path, std::move(report.dynamic_dims)));
    std::const_pointer_cast<Model>(m)->labels_ = std::move(report.labels);
    return m;
  }
  if (!opts.input_shapes.empty())
    return error(StatusCode::invalid_argument, "model '", path, "': input shapes apply to TFLite models, not GGUF");
  TS_ASSIGN_OR_RETURN(auto llama, gguf::LlamaModel::open(path));
  TS_ASSIGN_OR_RETURN(Graph g, llama->build_step(1));
  return make(std::move(g), path);
}

Result<std::shared_ptr<const Model>> Model::from_tflite_buffer(const ConstData& bytes, const ModelLoadOptions& opts) {
  tflite::ImportReport report;
  TS_ASSIGN_OR_RETURN(Graph g, tflite::load_tflite_buffer(bytes, import_options(opts), &report));
  TS_ASSIGN_OR_RETURN(auto m, make(std::move(g), "tflite buffer", std::move(report.dynamic_dims)));
  std::const_pointer_cast<Model>(m)->labels_ = std::move(report.labels);
  return m;
}

Result<std::shared_ptr<const Model>> Model::from_graph(Graph g, std::string name) {
  return make(std::move(g), std::move(name));
}

Result<size_t> Model::input_index(const std::string& name) const { return find_index(inputs_, name, "input"); }
Result<size_t> Model::output_index(const std::string& name) const { return find_index(outputs_, name, "output"); }

Result<std::vector<uint8_t>> Model::image_input(const std::string& image_path, size_t index) const {
  if (index >= graph_.inputs.size())
    return error(StatusCode::out_of_range, "input ", index, " does not exist (the model has ", graph_.inputs.size(), ")");
  TS_ASSIGN_OR_RETURN(tflite::Image img, tflite::read_image(image_path));
  auto det = detector_info(graph_);
  const bool yolo = det.ok() && det->kind != DetectorKind::ssd;
  return tflite::image_to_input(img, graph_.tensor(graph_.inputs[index]),
                                yolo ? tflite::PixelRange::yolo : tflite::PixelRange::model_default);
}

Result<std::vector<Detection>> ModelSession::detect(const std::string& image_path, const DetectOptions& o) {
  const Graph& g = model_->graph();
  auto det = detector_info(g);
  if (!det.ok()) return det.status().with_context("model '" + model_->name() + "'");
  if (g.inputs.size() != 1)
    return error(StatusCode::unsupported, "model '", model_->name(), "' has ", g.inputs.size(),
                 " inputs; detect feeds one image");
  if (bound_in_[0].first)
    return error(StatusCode::invalid_argument, "detect: input 0 is bound to a buffer (bind_input), which run() would read "
                 "instead of the image; bind nullptr first");
  TS_ASSIGN_OR_RETURN(tflite::Image img, tflite::read_image(image_path));
  const tflite::PixelRange range = det->kind == DetectorKind::ssd ? tflite::PixelRange::model_default : tflite::PixelRange::yolo;
  TS_ASSIGN_OR_RETURN(std::vector<uint8_t> input, tflite::image_to_input(img, g.tensor(g.inputs[0]), range));
  TS_RETURN_IF_ERROR(set_input(0, input.data(), static_cast<int64_t>(input.size())));
  TS_RETURN_IF_ERROR(run());
  return read_detections(*session_, img.width, img.height, o);
}

Result<std::unique_ptr<ModelSession>> ModelSession::create(std::shared_ptr<const Model> model,
                                                           const SessionOptions& opts) {
  if (!model) return error(StatusCode::invalid_argument, "ModelSession::create: no model");
  std::unique_ptr<ModelSession> s(new ModelSession());
  // The graph copy shares the model's weights (ConstData holds its owner); nothing large is copied.
  TS_ASSIGN_OR_RETURN(s->session_, Session::create(model->graph(), opts));
  s->model_ = std::move(model);
  s->bound_in_.assign(s->model_->inputs().size(), {nullptr, 0});
  s->bound_out_.assign(s->model_->outputs().size(), {nullptr, 0});
  return s;
}

ModelSession::~ModelSession() = default;

Status ModelSession::check_index(size_t index, bool input) const {
  size_t n = input ? num_inputs() : num_outputs();
  if (index >= n)
    return error(StatusCode::out_of_range, input ? "input " : "output ", index, " does not exist (the model has ", n,
                 input ? " inputs)" : " outputs)");
  return Status::Ok();
}

Status ModelSession::check_bytes(const TensorInfo& t, int64_t bytes, const char* what) const {
  if (bytes != t.bytes)
    return error(StatusCode::invalid_argument, what, " '", t.name, "' ", dtype_name(t.dtype), shape_str(t.shape),
                 " takes ", t.bytes, " bytes, got ", bytes);
  return Status::Ok();
}

Status ModelSession::set_input(size_t index, const void* data, int64_t bytes) {
  TS_RETURN_IF_ERROR(check_index(index, true));
  if (!data) return error(StatusCode::invalid_argument, "input ", index, " '", input_info(index).name, "': no data");
  return session_->set_input(index, data, bytes);
}

Status ModelSession::set_input(const std::string& name, const void* data, int64_t bytes) {
  TS_ASSIGN_OR_RETURN(size_t i, model_->input_index(name));
  return set_input(i, data, bytes);
}

Status ModelSession::bind_input(size_t index, const void* data, int64_t bytes) {
  TS_RETURN_IF_ERROR(check_index(index, true));
  if (data) TS_RETURN_IF_ERROR(check_bytes(input_info(index), bytes, "input"));
  bound_in_[index] = {data, data ? bytes : 0};
  return Status::Ok();
}

Status ModelSession::bind_output(size_t index, void* data, int64_t bytes) {
  TS_RETURN_IF_ERROR(check_index(index, false));
  if (data) TS_RETURN_IF_ERROR(check_bytes(output_info(index), bytes, "output"));
  bound_out_[index] = {data, data ? bytes : 0};
  return Status::Ok();
}

Status ModelSession::run() {
  for (size_t i = 0; i < bound_in_.size(); ++i)
    if (bound_in_[i].first) TS_RETURN_IF_ERROR(session_->set_input(i, bound_in_[i].first, bound_in_[i].second));
  TS_RETURN_IF_ERROR(session_->run());
  for (size_t i = 0; i < bound_out_.size(); ++i)
    if (bound_out_[i].first) TS_RETURN_IF_ERROR(read_output(i, bound_out_[i].first, bound_out_[i].second));
  return Status::Ok();
}

Result<std::vector<uint8_t>> ModelSession::output(size_t index) const {
  TS_RETURN_IF_ERROR(check_index(index, false));
  return session_->output(index);
}

Result<std::vector<uint8_t>> ModelSession::output(const std::string& name) const {
  TS_ASSIGN_OR_RETURN(size_t i, model_->output_index(name));
  return output(i);
}

Status ModelSession::read_output(size_t index, void* dst, int64_t bytes) const {
  TS_RETURN_IF_ERROR(check_index(index, false));
  TS_RETURN_IF_ERROR(check_bytes(output_info(index), bytes, "output"));
  if (!dst) return error(StatusCode::invalid_argument, "output ", index, ": no destination buffer");
  TS_ASSIGN_OR_RETURN(std::vector<uint8_t> v, session_->output(index));
  if (static_cast<int64_t>(v.size()) != bytes)
    return error(StatusCode::internal, "output ", index, " has ", v.size(), " bytes, expected ", bytes);
  std::memcpy(dst, v.data(), v.size());
  return Status::Ok();
}

}  // namespace tessera
