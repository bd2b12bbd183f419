/* Tessera's C API: load a TFLite or GGUF model, run it in sessions on a device, generate
 * text with a GGUF language model, list the devices. Only C types cross this interface.
 *
 * Errors: every function that can fail returns a tessera_status; TESSERA_OK is 0. The
 * message of the last failure on the calling thread (naming what is wrong and where) is
 * tessera_last_error(); it stays valid until the next failing call on that thread.
 *
 * Ownership: objects made by tessera_*_create / _load are freed with the matching _free
 * function (which accepts NULL). Strings and arrays returned through info structs belong
 * to the object they describe and live as long as it does.
 *
 * Thread safety: a tessera_model is immutable and may be shared by sessions on any number
 * of threads; a tessera_session and a tessera_lm are used by one thread at a time. The
 * device list and tessera_last_error may be used from any thread.
 *
 * Versioned structs: every options and info struct begins with `size_t struct_size`, which the
 * caller sets to sizeof the struct as its header declares it (the TESSERA_*_INIT initializers
 * and the *_init functions do). Fields are only ever appended, so a program built against an
 * older header passes a smaller size: the library reads (options) or writes (info) only the
 * fields within it, an option beyond it takes its default. A size that is no version of the
 * struct (0, a size inside a field, one larger than this library's struct) is refused with
 * TESSERA_INVALID_ARGUMENT and a message naming the struct, the size and the sizes known.
 *
 * Link with the CMake target Tessera::c (find_package(Tessera)) or `pkg-config --libs tessera`:
 * both link the shared library libtessera.so. */
#ifndef TESSERA_TESSERA_C_H
#define TESSERA_TESSERA_C_H

#include <stddef.h>
#include <stdint.h>

#include "tessera/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tessera_status {
  TESSERA_OK = 0,
  TESSERA_INVALID_ARGUMENT = 1, /* something malformed: a file, a shape, an option, a NULL */
  TESSERA_NOT_FOUND = 2,        /* a named thing (file, device, tensor) does not exist */
  TESSERA_UNSUPPORTED = 3,      /* valid, but not implemented for this op, dtype or device */
  TESSERA_OUT_OF_MEMORY = 4,    /* a device's capacity or largest allocation exceeded */
  TESSERA_OUT_OF_RANGE = 5,     /* an index, region or offset outside its bounds */
  TESSERA_IO_ERROR = 6,         /* file system or kernel interface failure */
  TESSERA_INTERNAL = 7,         /* a broken invariant inside Tessera (a bug) */
  TESSERA_CANCELLED = 8         /* a callback of the caller's asked to stop (load progress) */
} tessera_status;

/* Element types, in the order of tessera::DType. */
typedef enum tessera_dtype {
  TESSERA_F32 = 0, TESSERA_F16, TESSERA_BF16, TESSERA_I8, TESSERA_U8, TESSERA_I16, TESSERA_I32,
  TESSERA_I64, TESSERA_BOOL, TESSERA_Q8_0, TESSERA_Q4_0, TESSERA_Q4_1, TESSERA_Q5_0, TESSERA_Q5_1,
  TESSERA_Q2_K, TESSERA_Q3_K, TESSERA_Q4_K, TESSERA_Q5_K, TESSERA_Q6_K, TESSERA_IQ4_NL, TESSERA_IQ4_XS
} tessera_dtype;

TESSERA_API const char* tessera_version(void);
/* The message of the last failed call on this thread ("" when none failed yet). */
TESSERA_API const char* tessera_last_error(void);
/* "ok", "invalid_argument", "not_found", ... (the enumerator's name in lower case). */
TESSERA_API const char* tessera_status_name(tessera_status status);
TESSERA_API const char* tessera_dtype_name(tessera_dtype dtype);

/* ---- devices ---- */
typedef struct tessera_device_info {
  size_t struct_size;      /* sizeof(tessera_device_info), set by the caller */
  const char* name;        /* the spec for tessera_session_create: "cpu", "tile:wormhole_n150" */
  const char* description;
  int is_model;            /* 1: a device model, its device times are modelled */
  int available;           /* 0: it could not be created here; error says why */
  const char* error;
  int64_t capacity_bytes;
  int cores;
} tessera_device_info;

#define TESSERA_DEVICE_INFO_INIT {sizeof(tessera_device_info), NULL, NULL, 0, 0, NULL, 0, 0}

TESSERA_API size_t tessera_device_count(void);
/* `out->struct_size` set by the caller (TESSERA_DEVICE_INFO_INIT). Strings stay valid until
 * the process ends. */
TESSERA_API tessera_status tessera_device_get(size_t index, tessera_device_info* out);

/* ---- models ---- */
typedef struct tessera_model tessera_model;

typedef struct tessera_tensor_info {
  size_t struct_size;          /* sizeof(tessera_tensor_info), set by the caller */
  const char* name;
  tessera_dtype dtype;
  size_t rank;
  const int64_t* shape;        /* rank dims */
  int64_t bytes;               /* row-major host bytes of the tensor */
  size_t num_scales;           /* 0: not quantized; 1: per tensor; more: per channel */
  const float* scales;
  const int64_t* zero_points;  /* num_scales entries (or 0 when the file gives none) */
  size_t num_zero_points;
  int quant_axis;              /* -1: per tensor */
} tessera_tensor_info;

#define TESSERA_TENSOR_INFO_INIT {sizeof(tessera_tensor_info), NULL, TESSERA_F32, 0, NULL, 0, 0, NULL, NULL, 0, 0}

/* A .tflite model, or a .gguf llama model's 1-token decode step. */
TESSERA_API tessera_status tessera_model_load(const char* path, tessera_model** out);
/* A .tflite model in memory; the bytes are copied. */
TESSERA_API tessera_status tessera_model_load_tflite_buffer(const void* data, size_t size, tessera_model** out);
TESSERA_API void tessera_model_free(tessera_model* model);
/* The info functions take `out->struct_size` set by the caller (TESSERA_TENSOR_INFO_INIT). */
TESSERA_API size_t tessera_model_num_inputs(const tessera_model* model);
TESSERA_API size_t tessera_model_num_outputs(const tessera_model* model);
TESSERA_API tessera_status tessera_model_input_info(const tessera_model* model, size_t index, tessera_tensor_info* out);
TESSERA_API tessera_status tessera_model_output_info(const tessera_model* model, size_t index, tessera_tensor_info* out);
TESSERA_API tessera_status tessera_model_input_index(const tessera_model* model, const char* name, size_t* index);
TESSERA_API tessera_status tessera_model_output_index(const tessera_model* model, const char* name, size_t* index);
/* The class names the model file carries (Ultralytics exports' metadata, or the labels file
 * TFLite's metadata writer packs into a model), one per line as written, the first possibly a
 * background class: how many (0: none, or model NULL), and name `index` (NULL past the end),
 * valid while the model lives. */
TESSERA_API size_t tessera_model_num_labels(const tessera_model* model);
TESSERA_API const char* tessera_model_label(const tessera_model* model, size_t index);

/* An image file (BMP, JPEG, PNG) decoded, resized and converted to input `index` (its
 * dtype, quantization and layout) into `dst`, exactly the input's byte size. */
TESSERA_API tessera_status tessera_model_image_input(const tessera_model* model, const char* image_path, size_t index, void* dst,
                                         size_t bytes);

/* ---- sessions ---- */
typedef struct tessera_session tessera_session;

/* Prepares `model` on `device` (NULL: "cpu"). `options` is NULL or a NULL-terminated list
 * of "KEY=VALUE" device options (e.g. "threads=2"). The session keeps the model alive. */
TESSERA_API tessera_status tessera_session_create(const tessera_model* model, const char* device, const char* const* options,
                                      tessera_session** out);
TESSERA_API void tessera_session_free(tessera_session* session);
/* Copies exactly the input's byte size (tessera_tensor_info.bytes). */
TESSERA_API tessera_status tessera_session_set_input(tessera_session* session, size_t index, const void* data, size_t bytes);
TESSERA_API tessera_status tessera_session_set_input_by_name(tessera_session* session, const char* name, const void* data,
                                                 size_t bytes);
/* User buffers: a bound input is read at every run, a bound output written at the end of
 * every run; the caller keeps them valid. data == NULL removes the binding. */
TESSERA_API tessera_status tessera_session_bind_input(tessera_session* session, size_t index, const void* data, size_t bytes);
TESSERA_API tessera_status tessera_session_bind_output(tessera_session* session, size_t index, void* data, size_t bytes);
TESSERA_API tessera_status tessera_session_run(tessera_session* session);
/* Copies output `index` of the last run into `dst` (exactly its byte size). */
TESSERA_API tessera_status tessera_session_read_output(const tessera_session* session, size_t index, void* dst, size_t bytes);

/* Object detection in one call (include/tessera/detect.h says how each kind is decoded): the
 * image file prepared for input 0 (letterboxed for a YOLO export, resized for an SSD model),
 * run, and the detections with score >= `threshold` (0..1), best first, boxes in the image's
 * pixels; YOLO boxes go through per-class non-maximum suppression at IoU 0.45, at most 300.
 * Writes min(found, capacity) detections to `out` (NULL allowed with capacity 0) and the
 * number found to `*count`. Errors: the model is no detector (why), the image, threshold. */
typedef struct tessera_detection {
  int64_t class_id; /* index into the model's classes */
  float score;
  float left, top, right, bottom;
} tessera_detection;
TESSERA_API tessera_status tessera_session_detect(tessera_session* session, const char* image_path, float threshold,
                                                  tessera_detection* out, size_t capacity, size_t* count);

/* ---- text generation (GGUF llama / qwen2) ---- */
typedef struct tessera_lm tessera_lm;

typedef struct tessera_generate_options {
  size_t struct_size;    /* sizeof(tessera_generate_options) */
  int64_t max_tokens;    /* default 64 */
  float temperature;     /* 0: greedy (default) */
  int top_k;             /* default 40 */
  float top_p;           /* default 0.95 */
  float repeat_penalty;  /* default 1 (off) */
  int repeat_last_n;     /* default 64 */
  uint64_t seed;         /* default 0 */
} tessera_generate_options;

/* The defaults (those of tessera::GenerateOptions), struct_size included. */
#define TESSERA_GENERATE_OPTIONS_INIT {sizeof(tessera_generate_options), 64, 0.0f, 40, 0.95f, 1.0f, 64, 0}
static inline void tessera_generate_options_init(tessera_generate_options* options) {
  const tessera_generate_options defaults = TESSERA_GENERATE_OPTIONS_INIT;
  *options = defaults;
}

/* Called with each generated piece of text (not NUL-terminated; `size` bytes); return
 * nonzero to continue, 0 to stop. */
typedef int (*tessera_piece_callback)(const char* piece, size_t size, void* user);

/* Called while a model loads with the fraction done (0 to 1, never decreasing, 1 at the
 * end); return nonzero to continue, 0 to cancel (the load then fails with TESSERA_CANCELLED). */
typedef int (*tessera_progress_callback)(double fraction, void* user);

/* `device` NULL: "cpu"; `context` 0: the file's context length (at most 4096). */
TESSERA_API tessera_status tessera_lm_load(const char* path, const char* device, int64_t context, tessera_lm** out);
/* The options of tessera_lm_load_with; TESSERA_LM_OPTIONS_INIT and tessera_lm_options_init
 * give the defaults (those of tessera::LanguageModelOptions) and struct_size. */
typedef struct tessera_lm_options {
  size_t struct_size;          /* sizeof(tessera_lm_options) */
  const char* device;          /* NULL: "cpu" (default) */
  const char* const* device_options; /* NULL or a NULL-terminated list of "KEY=VALUE" (e.g. "threads=2") */
  int64_t context;             /* KV cache rows; 0: the file's context length, at most 4096 (default) */
  int64_t batch;               /* prompt tokens per step; default 32 */
  int64_t offload_layers;      /* >= 0: the first N layers on `device`, the rest on the cpu; -1 (default): all on `device` where supported */
  const char* kv_type;         /* KV cache of the cpu layers: "f16" (default, also for NULL), "f32" or "q8_0" */
  const char* chat_template;   /* NULL or "": the file's; else a family name or a Jinja file */
  tessera_progress_callback progress; /* NULL (default) or called while the model loads */
  void* progress_user;         /* passed to `progress` */
} tessera_lm_options;

#define TESSERA_LM_OPTIONS_INIT {sizeof(tessera_lm_options), NULL, NULL, 0, 32, -1, NULL, NULL, NULL, NULL}
static inline void tessera_lm_options_init(tessera_lm_options* options) {
  const tessera_lm_options defaults = TESSERA_LM_OPTIONS_INIT;
  *options = defaults;
}
/* As tessera_lm_load with every option (`options` NULL: the defaults). */
TESSERA_API tessera_status tessera_lm_load_with(const char* path, const tessera_lm_options* options, tessera_lm** out);
TESSERA_API void tessera_lm_free(tessera_lm* lm);
/* Generates from an empty cache. `callback` may be NULL. When `text` is not NULL it
 * receives the whole generated text, NUL-terminated, to be freed with tessera_string_free. */
TESSERA_API tessera_status tessera_lm_generate(tessera_lm* lm, const char* prompt, const tessera_generate_options* options,
                                   tessera_piece_callback callback, void* user, char** text);
TESSERA_API void tessera_string_free(char* text);
/* Token ids of `text`; *count receives how many there are even when capacity is smaller
 * (then nothing beyond capacity is written and the status is TESSERA_OUT_OF_RANGE). */
TESSERA_API tessera_status tessera_lm_tokenize(const tessera_lm* lm, const char* text, int add_bos, int32_t* ids,
                                   size_t capacity, size_t* count);
/* Feeds `count` ids after the tokens in the KV cache; when `logits` is not NULL, copies the
 * logits after the last one into it (`capacity` floats, at least tessera_lm_vocab_size). */
TESSERA_API tessera_status tessera_lm_feed(tessera_lm* lm, const int32_t* ids, size_t count, float* logits, size_t capacity);
/* Empties the KV cache. */
TESSERA_API void tessera_lm_reset(tessera_lm* lm);
TESSERA_API int64_t tessera_lm_vocab_size(const tessera_lm* lm);
TESSERA_API int64_t tessera_lm_context_length(const tessera_lm* lm);

/* Post-training int8 quantization of a float TFLite model held in memory (docs/quantize.md,
 * as `tessera quantize`): `runs` calibration runs of `inputs_per_run` raw input tensors each
 * (run r's input k at inputs[r * inputs_per_run + k], sizes[...] bytes: float32 row-major,
 * as the float model takes them); `int8_io` non-zero for int8 model inputs and outputs.
 * On success *out receives the quantized model's bytes (free with tessera_buffer_free) and
 * *out_size their count. */
TESSERA_API tessera_status tessera_quantize_tflite(const void* model, size_t model_size, const void* const* inputs,
                                                   const size_t* sizes, size_t runs, size_t inputs_per_run, int int8_io,
                                                   void** out, size_t* out_size);
TESSERA_API void tessera_buffer_free(void* buffer);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_TESSERA_C_H */
