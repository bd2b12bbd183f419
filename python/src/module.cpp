// tessera._tessera: the Python binding of the embedding API (include/tessera/model.h,
// generate.h). numpy arrays in and out; errors raise tessera.Error carrying Tessera's
// message and status code name. The pure-Python layer is python/tessera/__init__.py.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "tessera/generate.h"
#include "tessera/backend/plan.h"
#include "tessera/graph.h"
#include "tessera/model.h"
#include "tessera/quantize.h"
#include "tessera/version.h"

namespace py = pybind11;

namespace {

using namespace tessera;

// A Tessera status as a C++ exception, translated to tessera.Error below.
struct TesseraError {
  std::string code;
  std::string message;
};

PyObject* g_error_type = nullptr;

// The code as an identifier: "invalid_argument", "not_found", "io_error", "internal", ...
std::string code_name(StatusCode c) {
  switch (c) {
    case StatusCode::io_error: return "io_error";
    case StatusCode::internal: return "internal";
    default: break;
  }
  std::string s = status_code_name(c);
  for (char& ch : s)
    if (ch == ' ') ch = '_';
  return s;
}

[[noreturn]] void raise(const Status& s) { throw TesseraError{code_name(s.code()), s.message()}; }
void check(const Status& s) {
  if (!s.ok()) raise(s);
}
template <typename T>
T take(Result<T> r) {
  if (!r.ok()) raise(r.status());
  return std::move(*r);
}

// numpy dtype of a Tessera dtype; nullopt for types numpy has no name for (bf16, GGUF blocks).
std::optional<py::dtype> numpy_dtype(DType t) {
  switch (t) {
    case DType::f32: return py::dtype::of<float>();
    case DType::f16: return py::dtype("float16");
    case DType::i8: return py::dtype::of<int8_t>();
    case DType::u8: return py::dtype::of<uint8_t>();
    case DType::i16: return py::dtype::of<int16_t>();
    case DType::i32: return py::dtype::of<int32_t>();
    case DType::i64: return py::dtype::of<int64_t>();
    case DType::boolean: return py::dtype::of<bool>();
    default: return std::nullopt;
  }
}

py::dict tensor_info_dict(const TensorInfo& t) {
  py::dict d;
  d["name"] = t.name;
  d["dtype"] = dtype_name(t.dtype);
  d["shape"] = py::tuple(py::cast(t.shape));
  d["bytes"] = t.bytes;
  d["scale"] = t.quant.scale;
  d["zero_point"] = t.quant.zero_point;
  d["quant_axis"] = t.quant.axis;
  return d;
}

// A Python bytes object copied once into graph constants: the Model keeps the copy alive
// (ConstData's owner), whatever happens to the Python object.
ConstData copied_bytes(const py::bytes& content) {
  std::string_view view = content;
  return ConstData::from_vector(std::vector<uint8_t>(view.begin(), view.end()));
}

SessionOptions session_options(const std::string& device, std::optional<int> threads,
                               const std::map<std::string, std::string>& options) {
  SessionOptions so;
  so.device = device;
  so.device_options = options;
  if (threads) {
    if (*threads < 1) raise(error(StatusCode::invalid_argument, "threads must be >= 1, got ", *threads));
    so.device_options["threads"] = std::to_string(*threads);
  }
  return so;
}

// A model and one session on one device: what tessera.load returns.
class PyModel {
 public:
  PyModel(const std::string& path, const std::string& device, std::optional<int> threads,
          const std::map<std::string, std::string>& options) {
    std::shared_ptr<const Model> model;
    {
      py::gil_scoped_release release;
      model = take(Model::load(path));
    }
    init(std::move(model), session_options(device, threads, options));
  }
  PyModel(std::shared_ptr<const Model> model, SessionOptions so) { init(std::move(model), std::move(so)); }

  std::string device() const { return device_; }
  std::vector<std::string> labels() const { return s_->model().labels(); }
  py::list infos(bool inputs) const {
    py::list l;
    for (const auto& t : inputs ? s_->model().inputs() : s_->model().outputs()) l.append(tensor_info_dict(t));
    return l;
  }

  // Sets input `i` from `obj`: a C-contiguous array of the input's dtype is passed to the
  // session as it is (no copy on the Python side); other arrays are converted first.
  void set_input(size_t i, const py::handle& obj) {
    const TensorInfo& t = s_->input_info(i);
    auto dt = numpy_dtype(t.dtype);
    if (!dt) raise(error(StatusCode::unsupported, "input ", i, " '", t.name, "' is ", dtype_name(t.dtype),
                         ", which has no numpy dtype"));
    py::array a = py::array::ensure(obj);
    if (!a) raise(error(StatusCode::invalid_argument, "input ", i, " '", t.name, "': not an array"));
    if (!a.dtype().is(*dt)) {
      if (a.dtype().kind() != dt->kind() || a.itemsize() != dt->itemsize())
        raise(error(StatusCode::invalid_argument, "input ", i, " '", t.name, "' takes ", dtype_name(t.dtype),
                    " values (numpy ", std::string(py::str(*dt)), "), got ", std::string(py::str(a.dtype()))));
    }
    std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
    if (shape != t.shape)
      raise(error(StatusCode::invalid_argument, "input ", i, " '", t.name, "' has shape ", shape_str(t.shape),
                  ", got an array of shape ", shape_str(shape)));
    py::array c = py::array::ensure(a, py::array::c_style);
    check(s_->set_input(i, c.data(), static_cast<int64_t>(c.nbytes())));
  }

  // run(x), run([x0, x1]) or run({"name": x}); returns one array for a single-output
  // model, else a list in output order.
  py::object run(const py::object& inputs) {
    const size_t n = s_->num_inputs();
    if (py::isinstance<py::dict>(inputs)) {
      py::dict d = inputs.cast<py::dict>();
      if (d.size() != n) raise(error(StatusCode::invalid_argument, "run: the model has ", n, " inputs, got ", d.size()));
      for (auto [k, v] : d) set_input(take(s_->model().input_index(py::str(k).cast<std::string>())), v);
    } else if ((py::isinstance<py::list>(inputs) || py::isinstance<py::tuple>(inputs))) {
      py::sequence seq = inputs.cast<py::sequence>();
      if (seq.size() != n) raise(error(StatusCode::invalid_argument, "run: the model has ", n, " inputs, got ", seq.size()));
      for (size_t i = 0; i < n; ++i) set_input(i, seq[i]);
    } else {
      if (n != 1) raise(error(StatusCode::invalid_argument, "run: the model has ", n, " inputs; pass a list or a dict"));
      set_input(0, inputs);
    }
    {
      py::gil_scoped_release release;
      check(s_->run());
    }
    py::list outs;
    for (size_t i = 0; i < s_->num_outputs(); ++i) outs.append(output(i));
    if (outs.size() == 1) return outs[0];
    return outs;
  }

  // Output `i` of the last run, read straight into a new numpy array.
  py::array output(size_t i) const {
    if (i >= s_->num_outputs())
      raise(error(StatusCode::out_of_range, "output ", i, " does not exist (the model has ", s_->num_outputs(), ")"));
    const TensorInfo& t = s_->output_info(i);
    auto dt = numpy_dtype(t.dtype);
    py::array a = dt ? py::array(*dt, t.shape) : py::array(py::dtype::of<uint8_t>(), std::vector<int64_t>{t.bytes});
    check(s_->read_output(i, a.mutable_data(), t.bytes));
    return a;
  }

  // An image file converted to input `i` (resized; dtype, quantization and layout).
  py::array image_input(const std::string& path, size_t i) const {
    std::vector<uint8_t> bytes;
    {
      py::gil_scoped_release release;
      bytes = take(s_->model().image_input(path, i));
    }
    const TensorInfo& t = s_->input_info(i);
    auto dt = numpy_dtype(t.dtype);
    if (!dt) raise(error(StatusCode::unsupported, "input ", i, " '", t.name, "' is ", dtype_name(t.dtype)));
    py::array a(*dt, t.shape);
    std::memcpy(a.mutable_data(), bytes.data(), bytes.size());
    return a;
  }

  // Object detection in one call (tessera/detect.h): the image prepared for input 0
  // (letterboxed for YOLO), run, decoded; a list of dicts, best score first.
  py::list detect(const std::string& path, float threshold, float iou, int max_detections) {
    DetectOptions o;
    o.threshold = threshold;
    o.iou = iou;
    o.max_detections = max_detections;
    std::vector<Detection> found;
    {
      py::gil_scoped_release release;
      found = take(s_->detect(path, o));
    }
    // The class names the model file carries, matched to the detector's classes.
    std::vector<std::string> names;
    if (!s_->model().labels().empty())
      if (auto info = detector_info(s_->model().graph()); info.ok())
        names = labels_for_classes(s_->model().labels(), info->classes);
    py::list out;
    for (const Detection& d : found) {
      py::dict e;
      e["class_id"] = d.class_id;
      if (d.class_id >= 0 && d.class_id < static_cast<int64_t>(names.size())) e["label"] = names[d.class_id];
      e["score"] = d.score;
      e["box"] = py::make_tuple(d.left, d.top, d.right, d.bottom);
      out.append(e);
    }
    return out;
  }

  py::dict inspect() const {
    const Plan& plan = s_->session().plan();
    py::dict d;
    d["model"] = s_->model().name();
    d["device"] = device_;
    d["inputs"] = infos(true);
    d["outputs"] = infos(false);
    py::list devices;
    for (const Device* dev : plan.devices) devices.append(dev->properties().name);
    d["devices"] = devices;
    py::list nodes;
    for (size_t i = 0; i < plan.graph.nodes().size(); ++i) {
      const Node& n = plan.graph.nodes()[i];
      py::dict nd;
      nd["name"] = n.name;
      nd["op"] = op_name(n.op);
      const int dev = i < plan.nodes.size() ? plan.nodes[i].device : -1;
      nd["device"] = dev >= 0 && dev < static_cast<int>(plan.devices.size()) ? plan.devices[dev]->properties().name
                                                                              : std::string();
      nd["note"] = i < plan.nodes.size() ? plan.nodes[i].note : std::string();
      nodes.append(nd);
    }
    d["nodes"] = nodes;
    d["transfers"] = plan.transfers;
    d["programs"] = s_->session().program_summaries();
    d["report"] = plan.report(false);
    return d;
  }

  py::dict profile() const {
    const RunProfile& p = s_->session().profile();
    py::dict d;
    d["host_seconds"] = p.host_seconds;
    d["modelled_seconds"] = p.modelled_seconds;
    d["transfer_bytes"] = p.transfer_bytes;
    d["board_cpu"] = p.board_cpu;  // the board cpu model's name ("rk3588-a76"), empty without one
    d["board_io_seconds"] = p.board_io_seconds;
    py::list nodes;
    for (const auto& n : p.nodes) {
      py::dict nd;
      nd["label"] = n.label;
      nd["device"] = n.device;
      nd["host_seconds"] = n.host_seconds;
      nd["modelled_seconds"] = n.modelled_seconds;
      nd["board_seconds"] = n.board_seconds;  // < 0: not modelled (tessera/cpu_model.h)
      nodes.append(nd);
    }
    d["nodes"] = nodes;
    return d;
  }

 private:
  void init(std::shared_ptr<const Model> model, SessionOptions so) {
    device_ = so.device;
    py::gil_scoped_release release;
    s_ = take(ModelSession::create(std::move(model), so));
  }
  std::string device_;
  std::unique_ptr<ModelSession> s_;
};

// The pieces of one generate() call, produced by a worker thread running the C++
// generation and consumed by the Python iterator (which waits without the GIL).
class PieceStream {
 public:
  PieceStream(std::shared_ptr<LanguageModel> lm, std::string prompt, GenerateOptions opts) : lm_(std::move(lm)) {
    worker_ = std::thread([this, prompt = std::move(prompt), opts] {
      auto r = lm_->generate(prompt, opts, [this](std::string_view piece) {
        std::lock_guard<std::mutex> lock(mu_);
        queue_.emplace_back(piece);
        cv_.notify_all();
        return !stop_;
      });
      std::lock_guard<std::mutex> lock(mu_);
      if (!r.ok()) status_ = r.status();
      else result_ = std::move(*r);
      finished_ = true;
      cv_.notify_all();
    });
  }
  ~PieceStream() { close(); }

  // The next piece; raises StopIteration at the end, tessera.Error on failure.
  std::string next() {
    std::unique_lock<std::mutex> lock(mu_);
    {
      py::gil_scoped_release release;
      cv_.wait(lock, [&] { return !queue_.empty() || finished_; });
    }
    if (!queue_.empty()) {
      std::string p = std::move(queue_.front());
      queue_.pop_front();
      return p;
    }
    lock.unlock();
    join();
    if (!status_.ok()) raise(status_);
    throw py::stop_iteration();
  }

  // Stops generation after the current token and waits for the worker.
  void close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    py::gil_scoped_release release;
    join();
  }

  py::dict stats() {
    std::lock_guard<std::mutex> lock(mu_);
    py::dict d;
    if (!finished_) return d;
    d["text"] = result_.text;
    d["tokens"] = result_.tokens;
    d["prompt_tokens"] = result_.prompt_tokens;
    d["prompt_seconds"] = result_.prompt_seconds;
    d["generate_seconds"] = result_.generate_seconds;
    d["stopped_at_eos"] = result_.stopped_at_eos;
    d["context_full"] = result_.context_full;
    d["stop_reason"] = stop_reason_name(result_.stop_reason);
    return d;
  }

 private:
  void join() {
    std::lock_guard<std::mutex> lock(join_mu_);
    if (worker_.joinable()) worker_.join();
  }
  std::shared_ptr<LanguageModel> lm_;
  std::thread worker_;
  std::mutex mu_, join_mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  bool finished_ = false, stop_ = false;
  Status status_;
  GenerateResult result_;
};

// An image file (BMP, JPEG, PNG) decoded and resized bilinearly to width x height, as
// `tessera classify` prepares a u8 [1,H,W,C] input: the pixels of Model::image_input for a
// one-op model (a u8 -> u8 cast) whose input has that shape. C is 3 (RGB) or 1 (grey).
py::array read_image(const std::string& path, int64_t width, int64_t height, int64_t channels) {
  if (width < 1 || height < 1 || (channels != 1 && channels != 3))
    raise(error(StatusCode::invalid_argument, "read_image: width and height must be >= 1 and channels 1 or 3, got ",
                width, "x", height, "x", channels));
  std::vector<uint8_t> pixels;
  {
    py::gil_scoped_release release;
    Graph g;
    Tensor in;
    in.name = "image";
    in.shape = {1, height, width, channels};
    in.dtype = DType::u8;
    in.role = Role::input;
    TensorId x = g.add_tensor(std::move(in));
    TensorId y = take(g.add_op(OpKind::cast, {x}, {}, "pixels", DType::u8));
    g.tensor(y).role = Role::output;
    g.inputs = {x};
    g.outputs = {y};
    auto model = take(Model::from_graph(std::move(g), "image"));
    pixels = take(model->image_input(path, 0));
  }
  py::array_t<uint8_t> a({height, width, channels});
  std::memcpy(a.mutable_data(), pixels.data(), pixels.size());
  return a;
}

GenerateOptions generate_options(int64_t max_tokens, float temperature, int top_k, float top_p, float repeat_penalty,
                                 int repeat_last_n, uint64_t seed, std::vector<std::string> stop = {}) {
  GenerateOptions o;
  o.stop = std::move(stop);
  o.max_tokens = max_tokens;
  o.temperature = temperature;
  o.top_k = top_k;
  o.top_p = top_p;
  o.repeat_penalty = repeat_penalty;
  o.repeat_last_n = repeat_last_n;
  o.seed = seed;
  return o;
}

}  // namespace

PYBIND11_MODULE(_tessera, m) {
  m.doc() = "Tessera: an inference runtime for NPUs (TFLite and GGUF models on cpu, tile and rknpu devices)";
  m.attr("__version__") = TESSERA_VERSION_STRING;

  py::object error_type = py::reinterpret_steal<py::object>(
      PyErr_NewExceptionWithDoc("tessera.Error", "A Tessera error: the message names what is wrong and where; "
                                "`code` is the status (invalid_argument, not_found, unsupported, ...).",
                                PyExc_RuntimeError, nullptr));
  m.attr("Error") = error_type;
  g_error_type = error_type.ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const TesseraError& e) {
      py::object exc = py::reinterpret_borrow<py::object>(g_error_type)(e.message);
      exc.attr("code") = e.code;
      PyErr_SetObject(g_error_type, exc.ptr());
    }
  });

  m.def("devices", [] {
    py::list l;
    for (const DeviceSummary& d : list_devices()) {
      py::dict dd;
      dd["name"] = d.name;
      dd["description"] = d.description;
      dd["is_model"] = d.is_model;
      dd["available"] = d.available;
      dd["error"] = d.error;
      dd["capacity_bytes"] = d.capacity_bytes;
      dd["cores"] = d.cores;
      py::dict props;
      for (const auto& [k, v] : d.properties) props[py::str(k)] = v;
      dd["properties"] = props;
      l.append(dd);
    }
    return l;
  }, "Every built-in device and preset, as dicts");

  m.def(
      "_quantize",
      [](const py::bytes& model, const std::vector<std::vector<py::bytes>>& runs, bool int8_io, bool shared_add_params) {
        const std::string mb = model;
        std::vector<uint8_t> bytes(mb.begin(), mb.end());
        std::vector<CalibrationRun> calibration;
        for (const auto& run : runs) {
          calibration.emplace_back();
          for (const py::bytes& b : run) {
            const std::string sb = b;
            calibration.back().emplace_back(sb.begin(), sb.end());
          }
        }
        QuantizeOptions o;
        o.int8_io = int8_io;
        o.shared_add_params = shared_add_params;
        QuantizeReport rep;
        Result<std::vector<uint8_t>> out = error(StatusCode::internal, "not run");
        {
          py::gil_scoped_release release;
          out = quantize_tflite(bytes, calibration, o, &rep);
        }
        std::vector<uint8_t> q = take(std::move(out));
        return py::make_tuple(py::bytes(reinterpret_cast<const char*>(q.data()), q.size()), rep.notes);
      },
      py::arg("model"), py::arg("runs"), py::arg("int8_io"), py::arg("shared_add_params"),
      "Post-training int8 quantization of a float TFLite model's bytes (tessera/quantize.h): (bytes, notes)");

  m.def("read_image", &read_image, py::arg("path"), py::arg("width"), py::arg("height"), py::arg("channels") = 3,
        "An image file (BMP, JPEG, PNG) as uint8 [height, width, channels], resized bilinearly as "
        "`tessera classify` does");

  py::class_<PyModel>(m, "Model", "A model prepared on one device (see tessera.load)")
      .def(py::init<const std::string&, const std::string&, std::optional<int>,
                    const std::map<std::string, std::string>&>(),
           py::arg("path"), py::arg("device") = "cpu", py::arg("threads") = py::none(),
           py::arg("options") = std::map<std::string, std::string>{})
      .def_static("from_tflite_buffer", [](const py::bytes& content, const std::string& device,
                                          std::optional<int> threads,
                                          const std::map<std::string, std::string>& options) {
             ConstData bytes = copied_bytes(content);
             SessionOptions so = session_options(device, threads, options);
             std::shared_ptr<const Model> model;
             {
               py::gil_scoped_release release;
               model = take(Model::from_tflite_buffer(std::move(bytes)));
             }
             return std::make_unique<PyModel>(std::move(model), std::move(so));
           }, py::arg("content"), py::arg("device") = "cpu", py::arg("threads") = py::none(),
           py::arg("options") = std::map<std::string, std::string>{},
           "A .tflite model held in memory (bytes), prepared on `device`")
      .def_static("from_tflite_buffer_resized", [](const py::bytes& content,
                                                  const std::map<std::string, std::vector<int64_t>>& shapes,
                                                  const std::string& device, std::optional<int> threads,
                                                  const std::map<std::string, std::string>& options) {
             // The model imported again with new shapes for the named inputs (any dim, as
             // TFLite's ResizeInputTensor): intermediate shapes, the shape arithmetic in
             // front of a RESHAPE and the outputs follow; a shape an op cannot take is an
             // error naming the op.
             ConstData bytes = copied_bytes(content);
             SessionOptions so = session_options(device, threads, options);
             ModelLoadOptions lo;
             lo.any_dim = true;
             for (const auto& [name, shape] : shapes) lo.input_shapes.push_back({name, shape});
             std::shared_ptr<const Model> model;
             {
               py::gil_scoped_release release;
               model = take(Model::from_tflite_buffer(std::move(bytes), lo));
             }
             return std::make_unique<PyModel>(std::move(model), std::move(so));
           }, py::arg("content"), py::arg("shapes"), py::arg("device") = "cpu", py::arg("threads") = py::none(),
           py::arg("options") = std::map<std::string, std::string>{})
      .def_property_readonly("device", &PyModel::device)
      .def_property_readonly("inputs", [](const PyModel& p) { return p.infos(true); })
      .def_property_readonly("outputs", [](const PyModel& p) { return p.infos(false); })
      .def_property_readonly("labels", &PyModel::labels,
                             "Class names the model file carries (Ultralytics metadata, or a labels file packed by "
                             "TFLite's metadata writer, first line possibly a background class); [] if none")
      .def("run", &PyModel::run, py::arg("inputs"))
      .def("output", &PyModel::output, py::arg("index"))
      .def("image_input", &PyModel::image_input, py::arg("path"), py::arg("index") = 0)
      .def("detect", &PyModel::detect, py::arg("path"), py::arg("threshold") = 0.3f, py::arg("iou") = 0.45f,
           py::arg("max_detections") = 300,
           "Objects in an image file: [{'class_id', 'score', 'box': (left, top, right, bottom)}], best first, "
           "boxes in the image's pixels (SSD post-process models and YOLOv8 / YOLOv5 exports)")
      .def("inspect", &PyModel::inspect)
      .def("profile", &PyModel::profile);

  py::class_<LanguageModel, std::shared_ptr<LanguageModel>>(m, "LanguageModel", "A GGUF llama / qwen2 model")
      .def(py::init([](const std::string& path, const std::string& device, int64_t context, int64_t batch,
                       std::optional<int> threads, const std::string& kv_type, int64_t offload_layers,
                       const std::string& chat_template, bool mmap, py::object progress) {
             LanguageModelOptions lo;
             lo.session = session_options(device, threads, {});
             lo.context = context;
             lo.batch = batch;
             lo.offload_layers = offload_layers;
             lo.chat_template = chat_template;
             lo.mmap = mmap;
             if (kv_type == "f16") lo.kv_type = DType::f16;
             else if (kv_type == "f32") lo.kv_type = DType::f32;
             else if (kv_type == "q8_0") lo.kv_type = DType::q8_0;
             else raise(error(StatusCode::invalid_argument, "kv_type takes 'f16', 'f32' or 'q8_0', got '", kv_type, "'"));
             // progress(fraction) is called while the file loads; returning False cancels
             // (tessera.Error "cancelled"), an exception it raises is raised from here.
             std::optional<py::error_already_set> raised;
             if (!progress.is_none())
               lo.session.progress = [&progress, &raised](double f) {
                 py::gil_scoped_acquire gil;
                 try {
                   py::object r = progress(f);
                   return r.is_none() || r.cast<bool>();
                 } catch (py::error_already_set& e) {
                   raised.emplace(std::move(e));
                   return false;
                 }
               };
             Result<std::unique_ptr<LanguageModel>> lm = [&] {
               py::gil_scoped_release release;
               return LanguageModel::load(path, lo);
             }();
             if (raised) throw std::move(*raised);
             return std::shared_ptr<LanguageModel>(take(std::move(lm)));
           }),
           py::arg("path"), py::arg("device") = "cpu", py::arg("context") = 0, py::arg("batch") = 32,
           py::arg("threads") = py::none(), py::arg("kv_type") = "f16", py::arg("offload_layers") = -1,
           py::arg("chat_template") = "", py::arg("mmap") = false, py::arg("progress") = py::none())
      .def("tokenize", &LanguageModel::tokenize, py::arg("text"), py::arg("add_bos") = true,
           py::arg("parse_special") = false)
      .def("detokenize", &LanguageModel::detokenize, py::arg("ids"))
      .def("feed", [](LanguageModel& lm, const std::vector<int32_t>& ids) {
             std::vector<float> logits;
             {
               py::gil_scoped_release release;
               logits = take(lm.feed(ids));
             }
             py::array_t<float> a(static_cast<py::ssize_t>(logits.size()));
             std::memcpy(a.mutable_data(), logits.data(), logits.size() * sizeof(float));
             return a;
           }, py::arg("ids"), "Feeds ids after the cached tokens; the logits [vocab] after the last one")
      .def("reset", &LanguageModel::reset, "Empties the KV cache")
      .def_property_readonly("position", &LanguageModel::position)
      .def("render_chat", [](const LanguageModel& lm, const std::vector<std::pair<std::string, std::string>>& messages,
                             bool add_assistant) {
             std::vector<ChatMessage> m;
             for (const auto& [role, content] : messages) m.push_back({role, content});
             return take(lm.render_chat(m, add_assistant));
           }, py::arg("messages"), py::arg("add_assistant") = true,
           "A conversation [(role, content), ...] written with the model's chat template")
      .def_property_readonly("chat_template", [](const LanguageModel& lm) {
             ChatTemplateInfo t = take(lm.chat_template());
             py::dict d;
             d["name"] = t.name;
             d["from_file"] = t.from_file;
             d["stop_strings"] = t.stop_strings;
             d["stop_tokens"] = t.stop_tokens;
             return d;
           })
      .def_property_readonly("vocab_size", &LanguageModel::vocab_size)
      .def_property_readonly("context_length", &LanguageModel::context_length)
      .def_property_readonly("layers", &LanguageModel::layers)
      .def_property_readonly("architecture", &LanguageModel::architecture)
      .def("_stream", [](std::shared_ptr<LanguageModel> lm, const std::string& prompt, int64_t max_tokens,
                         float temperature, int top_k, float top_p, float repeat_penalty, int repeat_last_n,
                         uint64_t seed, std::vector<std::string> stop) {
             return std::make_unique<PieceStream>(
                 std::move(lm), prompt,
                 generate_options(max_tokens, temperature, top_k, top_p, repeat_penalty, repeat_last_n, seed,
                                  std::move(stop)));
           }, py::arg("prompt"), py::arg("max_tokens"), py::arg("temperature"), py::arg("top_k"), py::arg("top_p"),
           py::arg("repeat_penalty"), py::arg("repeat_last_n"), py::arg("seed"),
           py::arg("stop") = std::vector<std::string>{}, py::keep_alive<0, 1>());

  py::class_<PieceStream>(m, "PieceStream", "Text pieces of one generation, as they are produced")
      .def("__iter__", [](PieceStream& s) -> PieceStream& { return s; })
      .def("__next__", &PieceStream::next)
      .def("close", &PieceStream::close)
      .def_property_readonly("stats", &PieceStream::stats);
}
