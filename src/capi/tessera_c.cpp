// The C API (include/tessera/tessera_c.h) over the C++ embedding API. No exception or C++
// type crosses it: every entry point catches what the C++ side might throw (allocation
// failure) and turns it into a status with a message.
#include "tessera/tessera_c.h"

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "tessera/generate.h"
#include "tessera/backend/plan.h"
#include "tessera/model.h"
#include "tessera/quantize.h"
#include "tessera/version.h"

struct tessera_model {
  std::shared_ptr<const tessera::Model> model;
};
struct tessera_session {
  std::shared_ptr<const tessera::Model> model;
  std::unique_ptr<tessera::ModelSession> session;
};
struct tessera_lm {
  std::unique_ptr<tessera::LanguageModel> lm;
};

namespace {

using tessera::Status;
using tessera::StatusCode;

static_assert(static_cast<int>(tessera::DType::q6_k) == TESSERA_Q6_K, "tessera_dtype follows tessera::DType");
static_assert(static_cast<int>(tessera::DType::iq4_xs) == TESSERA_IQ4_XS, "tessera_dtype follows tessera::DType");
static_assert(static_cast<int>(tessera::DType::boolean) == TESSERA_BOOL, "tessera_dtype follows tessera::DType");
static_assert(static_cast<int>(StatusCode::internal) == TESSERA_INTERNAL, "tessera_status follows StatusCode");
static_assert(static_cast<int>(StatusCode::cancelled) == TESSERA_CANCELLED, "tessera_status follows StatusCode");
static_assert(static_cast<int>(StatusCode::out_of_range) == TESSERA_OUT_OF_RANGE, "tessera_status follows StatusCode");

thread_local std::string g_last_error;

tessera_status fail(const Status& s) {
  g_last_error = s.message();
  return static_cast<tessera_status>(s.code());
}
tessera_status fail(StatusCode code, const std::string& msg) { return fail(Status(code, msg)); }
tessera_status done(const Status& s) { return s.ok() ? TESSERA_OK : fail(s); }

// Runs `f` (returning tessera_status), turning any exception into TESSERA_INTERNAL.
template <typename F>
tessera_status guarded(const char* fn, F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return fail(StatusCode::out_of_memory, std::string(fn) + ": out of host memory");
  } catch (const std::exception& e) {
    return fail(StatusCode::internal, std::string(fn) + ": " + e.what());
  } catch (...) {
    return fail(StatusCode::internal, std::string(fn) + ": unknown exception");
  }
}

#define TESSERA_C_REQUIRE(cond, fn, what) \
  if (!(cond)) return fail(StatusCode::invalid_argument, std::string(fn) + ": " + what)

// Versioned structs (tessera_c.h): the sizes a struct may have are those of its versions,
// each the struct up to the end of one of its fields (fields are only ever appended), padded
// to the struct's alignment. The library reads or writes the fields that lie wholly within
// the caller's size.
constexpr size_t padded(size_t end, size_t align) { return (end + align - 1) / align * align; }
#define TESSERA_C_END(T, f) (offsetof(T, f) + sizeof(T::f))

struct StructSizes {
  const char* name;  // the C type, for messages
  size_t align;
  size_t full;               // sizeof: this library's version
  std::vector<size_t> ends;  // each field's end after struct_size, in order

  bool known(size_t size) const {
    for (size_t e : ends)
      if (padded(e, align) == size) return true;
    return false;
  }
  std::string list() const {
    std::string s;
    size_t last = 0;
    for (size_t e : ends) {
      const size_t p = padded(e, align);
      if (p == last) continue;
      s += (s.empty() ? "" : ", ") + std::to_string(p);
      last = p;
    }
    return s;
  }
};

template <typename T>
StructSizes sizes_of(const char* name, std::initializer_list<size_t> ends) {
  return StructSizes{name, alignof(T), sizeof(T), std::vector<size_t>(ends)};
}

const StructSizes& device_info_sizes() {
  using T = tessera_device_info;
  static const StructSizes s = sizes_of<T>(
      "tessera_device_info", {TESSERA_C_END(T, name), TESSERA_C_END(T, description), TESSERA_C_END(T, is_model),
                              TESSERA_C_END(T, available), TESSERA_C_END(T, error), TESSERA_C_END(T, capacity_bytes),
                              TESSERA_C_END(T, cores)});
  return s;
}
const StructSizes& tensor_info_sizes() {
  using T = tessera_tensor_info;
  static const StructSizes s = sizes_of<T>(
      "tessera_tensor_info",
      {TESSERA_C_END(T, name), TESSERA_C_END(T, dtype), TESSERA_C_END(T, rank), TESSERA_C_END(T, shape),
       TESSERA_C_END(T, bytes), TESSERA_C_END(T, num_scales), TESSERA_C_END(T, scales), TESSERA_C_END(T, zero_points),
       TESSERA_C_END(T, num_zero_points), TESSERA_C_END(T, quant_axis)});
  return s;
}
const StructSizes& generate_options_sizes() {
  using T = tessera_generate_options;
  static const StructSizes s = sizes_of<T>(
      "tessera_generate_options",
      {TESSERA_C_END(T, max_tokens), TESSERA_C_END(T, temperature), TESSERA_C_END(T, top_k), TESSERA_C_END(T, top_p),
       TESSERA_C_END(T, repeat_penalty), TESSERA_C_END(T, repeat_last_n), TESSERA_C_END(T, seed)});
  return s;
}
const StructSizes& lm_options_sizes() {
  using T = tessera_lm_options;
  static const StructSizes s = sizes_of<T>(
      "tessera_lm_options",
      {TESSERA_C_END(T, device), TESSERA_C_END(T, device_options), TESSERA_C_END(T, context), TESSERA_C_END(T, batch),
       TESSERA_C_END(T, offload_layers), TESSERA_C_END(T, kv_type), TESSERA_C_END(T, chat_template),
       TESSERA_C_END(T, progress), TESSERA_C_END(T, progress_user)});
  return s;
}

// OK when `size` (the caller's `what`->struct_size) is a version of the struct.
Status check_size(const char* fn, const char* what, size_t size, const StructSizes& sizes) {
  if (sizes.known(size)) return Status::Ok();
  return Status(StatusCode::invalid_argument,
                std::string(fn) + ": " + what + "->struct_size is " + std::to_string(size) + ", which is no size of " +
                    sizes.name + " this library knows (" + sizes.list() + "; sizeof(" + sizes.name +
                    ") in Tessera " + TESSERA_VERSION_STRING + " is " + std::to_string(sizes.full) +
                    "): set it to sizeof(" + sizes.name + ")");
}

// An info struct filled whole in `full`, copied to the caller's `out` up to its struct_size.
template <typename T>
void copy_out(T full, T* out) {
  const size_t size = out->struct_size;
  full.struct_size = size;
  std::memcpy(static_cast<void*>(out), &full, size);
}

// An options struct of the caller's size over the defaults `full`.
template <typename T>
T copy_in(const T* in, T full) {
  std::memcpy(static_cast<void*>(&full), in, in->struct_size);
  full.struct_size = sizeof(T);
  return full;
}

// Device list, made once; its strings live until the process ends.
const std::vector<tessera::DeviceSummary>& devices() {
  static const std::vector<tessera::DeviceSummary> list = tessera::list_devices();
  return list;
}

void fill_info(const tessera::TensorInfo& t, tessera_tensor_info* out) {
  out->struct_size = sizeof(tessera_tensor_info);
  out->name = t.name.c_str();
  out->dtype = static_cast<tessera_dtype>(t.dtype);
  out->rank = t.shape.size();
  out->shape = t.shape.data();
  out->bytes = t.bytes;
  out->num_scales = t.quant.scale.size();
  out->scales = t.quant.scale.empty() ? nullptr : t.quant.scale.data();
  out->num_zero_points = t.quant.zero_point.size();
  out->zero_points = t.quant.zero_point.empty() ? nullptr : t.quant.zero_point.data();
  out->quant_axis = t.quant.axis;
}

}  // namespace

extern "C" {

const char* tessera_version(void) { return TESSERA_VERSION_STRING; }
const char* tessera_last_error(void) { return g_last_error.c_str(); }
const char* tessera_status_name(tessera_status status) {
  static const char* const names[] = {"ok",           "invalid_argument", "not_found", "unsupported",
                                      "out_of_memory", "out_of_range",     "io_error",  "internal",
                                      "cancelled"};
  if (status < TESSERA_OK || status > TESSERA_CANCELLED) return "unknown";
  return names[status];
}
const char* tessera_dtype_name(tessera_dtype dtype) {
  if (dtype < TESSERA_F32 || dtype > TESSERA_IQ4_XS) return "unknown";
  return tessera::dtype_name(static_cast<tessera::DType>(dtype));
}

size_t tessera_device_count(void) {
  try {
    return devices().size();
  } catch (...) {
    return 0;
  }
}

tessera_status tessera_device_get(size_t index, tessera_device_info* out) {
  return guarded("tessera_device_get", [&] {
    TESSERA_C_REQUIRE(out, "tessera_device_get", "out is NULL");
    const auto& list = devices();
    if (index >= list.size())
      return fail(StatusCode::out_of_range, "tessera_device_get: device " + std::to_string(index) +
                                                " does not exist (there are " + std::to_string(list.size()) + ")");
    if (Status st = check_size("tessera_device_get", "out", out->struct_size, device_info_sizes()); !st.ok())
      return fail(st);
    const auto& d = list[index];
    tessera_device_info info = TESSERA_DEVICE_INFO_INIT;
    info.name = d.name.c_str();
    info.description = d.description.c_str();
    info.is_model = d.is_model ? 1 : 0;
    info.available = d.available ? 1 : 0;
    info.error = d.error.c_str();
    info.capacity_bytes = d.capacity_bytes;
    info.cores = d.cores;
    copy_out(info, out);
    return TESSERA_OK;
  });
}

tessera_status tessera_model_load(const char* path, tessera_model** out) {
  return guarded("tessera_model_load", [&] {
    TESSERA_C_REQUIRE(path && out, "tessera_model_load", "path or out is NULL");
    *out = nullptr;
    auto m = tessera::Model::load(path);
    if (!m.ok()) return fail(m.status());
    *out = new tessera_model{std::move(*m)};
    return TESSERA_OK;
  });
}

tessera_status tessera_model_load_tflite_buffer(const void* data, size_t size, tessera_model** out) {
  return guarded("tessera_model_load_tflite_buffer", [&] {
    TESSERA_C_REQUIRE(data && out, "tessera_model_load_tflite_buffer", "data or out is NULL");
    *out = nullptr;
    const auto* p = static_cast<const uint8_t*>(data);
    auto m = tessera::Model::from_tflite_buffer(tessera::ConstData::from_vector(std::vector<uint8_t>(p, p + size)));
    if (!m.ok()) return fail(m.status());
    *out = new tessera_model{std::move(*m)};
    return TESSERA_OK;
  });
}

void tessera_model_free(tessera_model* model) { delete model; }
size_t tessera_model_num_inputs(const tessera_model* model) { return model ? model->model->inputs().size() : 0; }
size_t tessera_model_num_outputs(const tessera_model* model) { return model ? model->model->outputs().size() : 0; }

size_t tessera_model_num_labels(const tessera_model* model) { return model ? model->model->labels().size() : 0; }

const char* tessera_model_label(const tessera_model* model, size_t index) {
  if (!model || index >= model->model->labels().size()) return nullptr;
  return model->model->labels()[index].c_str();
}

static tessera_status tensor_info(const char* fn, const tessera_model* model, size_t index, tessera_tensor_info* out,
                                  bool input) {
  return guarded(fn, [&] {
    TESSERA_C_REQUIRE(model && out, fn, "model or out is NULL");
    if (Status st = check_size(fn, "out", out->struct_size, tensor_info_sizes()); !st.ok()) return fail(st);
    const auto& list = input ? model->model->inputs() : model->model->outputs();
    if (index >= list.size())
      return fail(StatusCode::out_of_range, std::string(fn) + ": " + (input ? "input " : "output ") +
                                                std::to_string(index) + " does not exist (the model has " +
                                                std::to_string(list.size()) + ")");
    tessera_tensor_info info = TESSERA_TENSOR_INFO_INIT;
    fill_info(list[index], &info);
    copy_out(info, out);
    return TESSERA_OK;
  });
}

tessera_status tessera_model_input_info(const tessera_model* model, size_t index, tessera_tensor_info* out) {
  return tensor_info("tessera_model_input_info", model, index, out, true);
}
tessera_status tessera_model_output_info(const tessera_model* model, size_t index, tessera_tensor_info* out) {
  return tensor_info("tessera_model_output_info", model, index, out, false);
}

tessera_status tessera_model_input_index(const tessera_model* model, const char* name, size_t* index) {
  return guarded("tessera_model_input_index", [&] {
    TESSERA_C_REQUIRE(model && name && index, "tessera_model_input_index", "model, name or index is NULL");
    auto i = model->model->input_index(name);
    if (!i.ok()) return fail(i.status());
    *index = *i;
    return TESSERA_OK;
  });
}
tessera_status tessera_model_output_index(const tessera_model* model, const char* name, size_t* index) {
  return guarded("tessera_model_output_index", [&] {
    TESSERA_C_REQUIRE(model && name && index, "tessera_model_output_index", "model, name or index is NULL");
    auto i = model->model->output_index(name);
    if (!i.ok()) return fail(i.status());
    *index = *i;
    return TESSERA_OK;
  });
}

tessera_status tessera_model_image_input(const tessera_model* model, const char* image_path, size_t index, void* dst,
                                         size_t bytes) {
  return guarded("tessera_model_image_input", [&] {
    TESSERA_C_REQUIRE(model && image_path && dst, "tessera_model_image_input", "model, image_path or dst is NULL");
    auto v = model->model->image_input(image_path, index);
    if (!v.ok()) return fail(v.status());
    if (v->size() != bytes)
      return fail(StatusCode::invalid_argument, "tessera_model_image_input: input " + std::to_string(index) +
                                                    " takes " + std::to_string(v->size()) + " bytes, got " +
                                                    std::to_string(bytes));
    std::memcpy(dst, v->data(), bytes);
    return TESSERA_OK;
  });
}

tessera_status tessera_session_create(const tessera_model* model, const char* device, const char* const* options,
                                      tessera_session** out) {
  return guarded("tessera_session_create", [&] {
    TESSERA_C_REQUIRE(model && out, "tessera_session_create", "model or out is NULL");
    *out = nullptr;
    tessera::SessionOptions so;
    so.device = device ? device : "cpu";
    for (size_t i = 0; options && options[i]; ++i) {
      std::string kv = options[i];
      size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        return fail(StatusCode::invalid_argument,
                    "tessera_session_create: option " + std::to_string(i) + " '" + kv + "' is not KEY=VALUE");
      so.device_options[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    auto s = tessera::ModelSession::create(model->model, so);
    if (!s.ok()) return fail(s.status());
    *out = new tessera_session{model->model, std::move(*s)};
    return TESSERA_OK;
  });
}

void tessera_session_free(tessera_session* session) { delete session; }

tessera_status tessera_session_set_input(tessera_session* session, size_t index, const void* data, size_t bytes) {
  return guarded("tessera_session_set_input", [&] {
    TESSERA_C_REQUIRE(session && data, "tessera_session_set_input", "session or data is NULL");
    return done(session->session->set_input(index, data, static_cast<int64_t>(bytes)));
  });
}
tessera_status tessera_session_set_input_by_name(tessera_session* session, const char* name, const void* data,
                                                 size_t bytes) {
  return guarded("tessera_session_set_input_by_name", [&] {
    TESSERA_C_REQUIRE(session && name && data, "tessera_session_set_input_by_name", "session, name or data is NULL");
    return done(session->session->set_input(std::string(name), data, static_cast<int64_t>(bytes)));
  });
}
tessera_status tessera_session_bind_input(tessera_session* session, size_t index, const void* data, size_t bytes) {
  return guarded("tessera_session_bind_input", [&] {
    TESSERA_C_REQUIRE(session, "tessera_session_bind_input", "session is NULL");
    return done(session->session->bind_input(index, data, static_cast<int64_t>(bytes)));
  });
}
tessera_status tessera_session_bind_output(tessera_session* session, size_t index, void* data, size_t bytes) {
  return guarded("tessera_session_bind_output", [&] {
    TESSERA_C_REQUIRE(session, "tessera_session_bind_output", "session is NULL");
    return done(session->session->bind_output(index, data, static_cast<int64_t>(bytes)));
  });
}
tessera_status tessera_session_run(tessera_session* session) {
  return guarded("tessera_session_run", [&] {
    TESSERA_C_REQUIRE(session, "tessera_session_run", "session is NULL");
    return done(session->session->run());
  });
}
tessera_status tessera_session_read_output(const tessera_session* session, size_t index, void* dst, size_t bytes) {
  return guarded("tessera_session_read_output", [&] {
    TESSERA_C_REQUIRE(session && dst, "tessera_session_read_output", "session or dst is NULL");
    return done(session->session->read_output(index, dst, static_cast<int64_t>(bytes)));
  });
}

tessera_status tessera_session_detect(tessera_session* session, const char* image_path, float threshold,
                                      tessera_detection* out, size_t capacity, size_t* count) {
  return guarded("tessera_session_detect", [&] {
    TESSERA_C_REQUIRE(session && image_path && count, "tessera_session_detect", "session, image_path or count is NULL");
    TESSERA_C_REQUIRE(out || capacity == 0, "tessera_session_detect", "out is NULL with a capacity of " + std::to_string(capacity));
    *count = 0;
    tessera::DetectOptions o;
    o.threshold = threshold;
    auto found = session->session->detect(image_path, o);
    if (!found.ok()) return fail(found.status());
    *count = found->size();
    for (size_t i = 0; i < found->size() && i < capacity; ++i) {
      const tessera::Detection& d = (*found)[i];
      out[i] = tessera_detection{d.class_id, d.score, d.left, d.top, d.right, d.bottom};
    }
    return TESSERA_OK;
  });
}

tessera_status tessera_lm_load(const char* path, const char* device, int64_t context, tessera_lm** out) {
  return guarded("tessera_lm_load", [&] {
    TESSERA_C_REQUIRE(path && out, "tessera_lm_load", "path or out is NULL");
    *out = nullptr;
    tessera::LanguageModelOptions lo;
    lo.session.device = device ? device : "cpu";
    lo.context = context;
    auto lm = tessera::LanguageModel::load(path, lo);
    if (!lm.ok()) return fail(lm.status());
    *out = new tessera_lm{std::move(*lm)};
    return TESSERA_OK;
  });
}

tessera_status tessera_lm_load_with(const char* path, const tessera_lm_options* options, tessera_lm** out) {
  return guarded("tessera_lm_load_with", [&] {
    TESSERA_C_REQUIRE(path && out, "tessera_lm_load_with", "path or out is NULL");
    *out = nullptr;
    tessera_lm_options o = TESSERA_LM_OPTIONS_INIT;
    if (options) {
      if (Status st = check_size("tessera_lm_load_with", "options", options->struct_size, lm_options_sizes()); !st.ok())
        return fail(st);
      o = copy_in(options, o);
    }
    tessera::LanguageModelOptions lo;
    lo.session.device = o.device ? o.device : "cpu";
    for (const char* const* kv = o.device_options; kv && *kv; ++kv) {
      const std::string s = *kv;
      const size_t eq = s.find('=');
      TESSERA_C_REQUIRE(eq != std::string::npos && eq > 0, "tessera_lm_load_with", "device option '" + s + "' is not KEY=VALUE");
      lo.session.device_options[s.substr(0, eq)] = s.substr(eq + 1);
    }
    lo.context = o.context;
    lo.batch = o.batch;
    lo.offload_layers = o.offload_layers;
    const std::string kv = o.kv_type ? o.kv_type : "f16";
    TESSERA_C_REQUIRE(kv == "f16" || kv == "f32" || kv == "q8_0", "tessera_lm_load_with",
                      "kv_type takes \"f16\", \"f32\" or \"q8_0\", got \"" + kv + "\"");
    lo.kv_type = kv == "f16" ? tessera::DType::f16 : kv == "f32" ? tessera::DType::f32 : tessera::DType::q8_0;
    lo.chat_template = o.chat_template ? o.chat_template : "";
    if (o.progress)
      lo.session.progress = [cb = o.progress, user = o.progress_user](double f) { return cb(f, user) != 0; };
    auto lm = tessera::LanguageModel::load(path, lo);
    if (!lm.ok()) return fail(lm.status());
    *out = new tessera_lm{std::move(*lm)};
    return TESSERA_OK;
  });
}

void tessera_lm_free(tessera_lm* lm) { delete lm; }

tessera_status tessera_lm_feed(tessera_lm* lm, const int32_t* ids, size_t count, float* logits, size_t capacity) {
  return guarded("tessera_lm_feed", [&] {
    TESSERA_C_REQUIRE(lm && (ids || count == 0), "tessera_lm_feed", "lm or ids is NULL");
    TESSERA_C_REQUIRE(count > 0, "tessera_lm_feed", "no ids to feed");
    const size_t vocab = static_cast<size_t>(lm->lm->vocab_size());
    TESSERA_C_REQUIRE(!logits || capacity >= vocab, "tessera_lm_feed",
                      "logits holds " + std::to_string(capacity) + " floats; the vocabulary has " + std::to_string(vocab));
    auto r = lm->lm->feed(std::vector<int32_t>(ids, ids + count));
    if (!r.ok()) return fail(r.status());
    if (logits) std::memcpy(logits, r->data(), vocab * sizeof(float));
    return TESSERA_OK;
  });
}

void tessera_lm_reset(tessera_lm* lm) {
  if (lm) lm->lm->reset();
}

tessera_status tessera_lm_generate(tessera_lm* lm, const char* prompt, const tessera_generate_options* options,
                                   tessera_piece_callback callback, void* user, char** text) {
  return guarded("tessera_lm_generate", [&] {
    TESSERA_C_REQUIRE(lm && prompt, "tessera_lm_generate", "lm or prompt is NULL");
    if (text) *text = nullptr;
    tessera_generate_options o = TESSERA_GENERATE_OPTIONS_INIT;
    if (options) {
      if (Status st = check_size("tessera_lm_generate", "options", options->struct_size, generate_options_sizes());
          !st.ok())
        return fail(st);
      o = copy_in(options, o);
    }
    tessera::GenerateOptions go;
    go.max_tokens = o.max_tokens;
    go.temperature = o.temperature;
    go.top_k = o.top_k;
    go.top_p = o.top_p;
    go.repeat_penalty = o.repeat_penalty;
    go.repeat_last_n = o.repeat_last_n;
    go.seed = o.seed;
    tessera::TokenCallback cb;
    if (callback) cb = [&](std::string_view piece) { return callback(piece.data(), piece.size(), user) != 0; };
    auto r = lm->lm->generate(prompt, go, cb);
    if (!r.ok()) return fail(r.status());
    if (text) {
      char* s = static_cast<char*>(std::malloc(r->text.size() + 1));
      if (!s) return fail(StatusCode::out_of_memory, "tessera_lm_generate: out of host memory");
      std::memcpy(s, r->text.data(), r->text.size());
      s[r->text.size()] = '\0';
      *text = s;
    }
    return TESSERA_OK;
  });
}

void tessera_string_free(char* text) { std::free(text); }

tessera_status tessera_quantize_tflite(const void* model, size_t model_size, const void* const* inputs, const size_t* sizes,
                                       size_t runs, size_t inputs_per_run, int int8_io, void** out, size_t* out_size) {
  return guarded("tessera_quantize_tflite", [&] {
    TESSERA_C_REQUIRE(model && out && out_size, "tessera_quantize_tflite", "model, out or out_size is NULL");
    TESSERA_C_REQUIRE(runs == 0 || (inputs && sizes), "tessera_quantize_tflite", "inputs or sizes is NULL");
    *out = nullptr;
    *out_size = 0;
    const auto* m = static_cast<const uint8_t*>(model);
    std::vector<uint8_t> bytes(m, m + model_size);
    std::vector<tessera::CalibrationRun> calibration(runs);
    for (size_t r = 0; r < runs; ++r)
      for (size_t k = 0; k < inputs_per_run; ++k) {
        const size_t i = r * inputs_per_run + k;
        TESSERA_C_REQUIRE(inputs[i] || sizes[i] == 0, "tessera_quantize_tflite", "a calibration input is NULL");
        const auto* p = static_cast<const uint8_t*>(inputs[i]);
        calibration[r].emplace_back(p, p + sizes[i]);
      }
    tessera::QuantizeOptions o;
    o.int8_io = int8_io != 0;
    auto q = tessera::quantize_tflite(bytes, calibration, o);
    if (!q.ok()) return fail(q.status());
    void* buf = std::malloc(q->empty() ? 1 : q->size());
    if (!buf) return fail(StatusCode::out_of_memory, "tessera_quantize_tflite: out of host memory");
    std::memcpy(buf, q->data(), q->size());
    *out = buf;
    *out_size = q->size();
    return TESSERA_OK;
  });
}

void tessera_buffer_free(void* buffer) { std::free(buffer); }

tessera_status tessera_lm_tokenize(const tessera_lm* lm, const char* text, int add_bos, int32_t* ids,
                                   size_t capacity, size_t* count) {
  return guarded("tessera_lm_tokenize", [&] {
    TESSERA_C_REQUIRE(lm && text && count, "tessera_lm_tokenize", "lm, text or count is NULL");
    TESSERA_C_REQUIRE(ids || capacity == 0, "tessera_lm_tokenize", "ids is NULL with a nonzero capacity");
    std::vector<int32_t> v = lm->lm->tokenize(text, add_bos != 0);
    *count = v.size();
    if (v.size() > capacity)
      return fail(StatusCode::out_of_range, "tessera_lm_tokenize: " + std::to_string(v.size()) +
                                                " tokens do not fit in " + std::to_string(capacity));
    if (!v.empty()) std::memcpy(ids, v.data(), v.size() * sizeof(int32_t));
    return TESSERA_OK;
  });
}

int64_t tessera_lm_vocab_size(const tessera_lm* lm) { return lm ? lm->lm->vocab_size() : 0; }
int64_t tessera_lm_context_length(const tessera_lm* lm) { return lm ? lm->lm->context_length() : 0; }

}  // extern "C"
