/* The C API (tessera/tessera_c.h), exercised from C: devices, error reporting, a TFLite
 * model on the cpu against the TFLite interpreter's own output (byte for byte), user
 * buffers, an in-memory model, the rknpu device, and text generation against the CLI and
 * llama.cpp's tokenization.
 *
 * Usage: capi_test SHARED_DIR TESSERA_CLI. Without the shared fixtures the model checks
 * are skipped (or fail with TESSERA_REQUIRE_FIXTURES=1). */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/tessera_c.h"

static int failures = 0;
static int checks = 0;

#define CHECK(cond, ...)                                          \
  do {                                                            \
    ++checks;                                                     \
    if (!(cond)) {                                                \
      ++failures;                                                 \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                               \
      fprintf(stderr, "\n");                                      \
    }                                                             \
  } while (0)

#define CHECK_OK(expr) CHECK((expr) == TESSERA_OK, "%s: %s", #expr, tessera_last_error())

static const char* shared_dir;
static const char* cli;

static char* path_of(const char* rel) {
  size_t n = strlen(shared_dir) + strlen(rel) + 2;
  char* p = malloc(n);
  snprintf(p, n, "%s/%s", shared_dir, rel);
  return p;
}

/* The whole file, or NULL when absent. */
static unsigned char* read_all(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char* buf = malloc(n > 0 ? (size_t)n : 1);
  *size = fread(buf, 1, (size_t)n, f);
  fclose(f);
  return buf;
}

static int fixture_missing(const char* what) {
  const char* req = getenv("TESSERA_REQUIRE_FIXTURES");
  if (req && strcmp(req, "1") == 0) {
    ++failures;
    fprintf(stderr, "missing fixture %s\n", what);
  } else {
    fprintf(stderr, "skipped: fixture %s is absent\n", what);
  }
  return 0;
}

static size_t argmax_u8(const unsigned char* v, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i)
    if (v[i] > v[best]) best = i;
  return best;
}

static void test_basics(void) {
  CHECK(strlen(tessera_version()) > 0, "empty version");
  CHECK(strcmp(tessera_dtype_name(TESSERA_U8), "u8") == 0, "u8 is '%s'", tessera_dtype_name(TESSERA_U8));
  CHECK(strcmp(tessera_dtype_name(TESSERA_Q4_K), "q4_K") == 0, "q4_K is '%s'", tessera_dtype_name(TESSERA_Q4_K));
  CHECK(strcmp(tessera_status_name(TESSERA_NOT_FOUND), "not_found") == 0, "%s", tessera_status_name(TESSERA_NOT_FOUND));

  size_t n = tessera_device_count();
  CHECK(n >= 3, "%zu devices", n);
  int saw_rknpu = 0;
  for (size_t i = 0; i < n; ++i) {
    tessera_device_info d = TESSERA_DEVICE_INFO_INIT;
    CHECK_OK(tessera_device_get(i, &d));
    if (i == 0) CHECK(strcmp(d.name, "cpu") == 0, "device 0 is '%s'", d.name);
    if (strcmp(d.name, "rknpu") == 0) saw_rknpu = d.available && d.is_model;
    CHECK(strlen(d.description) > 0, "device %s has no description", d.name);
  }
  CHECK(saw_rknpu, "no available rknpu device model");
  tessera_device_info d = TESSERA_DEVICE_INFO_INIT;
  CHECK(tessera_device_get(n, &d) == TESSERA_OUT_OF_RANGE, "device %zu", n);
  CHECK(strstr(tessera_last_error(), "does not exist") != NULL, "message '%s'", tessera_last_error());

  tessera_model* m = (tessera_model*)1;
  CHECK(tessera_model_load("/nonexistent/model.tflite", &m) == TESSERA_NOT_FOUND, "missing file");
  CHECK(m == NULL, "out not cleared");
  CHECK(strstr(tessera_last_error(), "/nonexistent/model.tflite") != NULL, "message '%s'", tessera_last_error());
  CHECK(tessera_model_load(NULL, &m) == TESSERA_INVALID_ARGUMENT, "NULL path");
  tessera_model_free(NULL);
  tessera_session_free(NULL);
  tessera_lm_free(NULL);
}

/* The end of a struct's field, padded to the struct's alignment (8: size_t struct_size
 * comes first): the struct_size of a version of the struct that ended with that field. */
#define VERSION_SIZE(T, field) ((offsetof(T, field) + sizeof(((T*)0)->field) + 7) / 8 * 8)

/* Versioned info structs: an older (smaller) struct_size gets only its fields written; a size
 * that is no version is refused with a message naming it. */
static void test_struct_sizes(void) {
  tessera_device_info full = TESSERA_DEVICE_INFO_INIT;
  CHECK(full.struct_size == sizeof(tessera_device_info), "TESSERA_DEVICE_INFO_INIT sets %zu", full.struct_size);
  CHECK_OK(tessera_device_get(0, &full));
  CHECK(full.struct_size == sizeof(tessera_device_info), "struct_size changed to %zu", full.struct_size);
  CHECK(full.available == 1 && full.cores > 0, "cpu available %d, %d cores", full.available, full.cores);

  /* A version with name and description only: the fields after them are left alone. */
  tessera_device_info old;
  memset(&old, 0x5a, sizeof old);
  old.struct_size = VERSION_SIZE(tessera_device_info, description);
  CHECK(old.struct_size == 3 * sizeof(void*), "older size %zu", old.struct_size);
  CHECK_OK(tessera_device_get(0, &old));
  CHECK(old.struct_size == VERSION_SIZE(tessera_device_info, description), "struct_size changed to %zu", old.struct_size);
  CHECK(strcmp(old.name, full.name) == 0 && strcmp(old.description, full.description) == 0, "older struct: '%s'",
        old.name);
  unsigned char pattern[sizeof old];
  memset(pattern, 0x5a, sizeof pattern);
  CHECK(memcmp((const char*)&old + old.struct_size, pattern, sizeof old - old.struct_size) == 0,
        "fields beyond struct_size %zu were written", old.struct_size);

  /* Sizes that are no version: refused, the message naming the struct and the size. */
  const size_t bad[] = {0, 4, offsetof(tessera_device_info, name) + 4, sizeof(tessera_device_info) + 8, 1000000};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    tessera_device_info b = TESSERA_DEVICE_INFO_INIT;
    b.struct_size = bad[i];
    CHECK(tessera_device_get(0, &b) == TESSERA_INVALID_ARGUMENT, "struct_size %zu accepted", bad[i]);
    CHECK(strstr(tessera_last_error(), "tessera_device_info") != NULL && strstr(tessera_last_error(), "struct_size") != NULL,
          "message '%s'", tessera_last_error());
    CHECK(b.name == NULL, "a refused struct was written");
  }
}

static void test_tflite(void) {
  char* model_path = path_of("models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  char* in_path = path_of("reference/mnv1_128_cat.input.bin");
  char* ref_path = path_of("reference/mnv1_128_cat.tflite-output.bin");
  size_t in_size = 0, ref_size = 0, file_size = 0;
  unsigned char* input = read_all(in_path, &in_size);
  unsigned char* ref = read_all(ref_path, &ref_size);
  unsigned char* file = read_all(model_path, &file_size);
  if (!input || !ref || !file) {
    fixture_missing("mobilenet_v1_0.25_128_quant.tflite / reference/mnv1_128_cat.*");
    goto out;
  }

  tessera_model* m = NULL;
  CHECK_OK(tessera_model_load(model_path, &m));
  if (!m) goto out;
  CHECK(tessera_model_num_inputs(m) == 1 && tessera_model_num_outputs(m) == 1, "%zu inputs, %zu outputs",
        tessera_model_num_inputs(m), tessera_model_num_outputs(m));
  tessera_tensor_info in = TESSERA_TENSOR_INFO_INIT, outi = TESSERA_TENSOR_INFO_INIT;
  CHECK_OK(tessera_model_input_info(m, 0, &in));
  CHECK_OK(tessera_model_output_info(m, 0, &outi));
  CHECK(in.dtype == TESSERA_U8 && in.rank == 4 && in.shape[0] == 1 && in.shape[1] == 128 && in.shape[2] == 128 &&
            in.shape[3] == 3,
        "input %s rank %zu", tessera_dtype_name(in.dtype), in.rank);
  CHECK(in.bytes == (int64_t)in_size, "input takes %lld bytes, the reference input has %zu", (long long)in.bytes, in_size);
  CHECK(in.num_scales == 1 && in.scales[0] > 0 && in.num_zero_points == 1, "input quantization");
  CHECK(outi.dtype == TESSERA_U8 && outi.bytes == (int64_t)ref_size, "output %s %lld bytes",
        tessera_dtype_name(outi.dtype), (long long)outi.bytes);
  size_t idx = 99;
  CHECK_OK(tessera_model_input_index(m, in.name, &idx));
  CHECK(idx == 0, "input index %zu", idx);
  CHECK(tessera_model_output_index(m, "no such tensor", &idx) == TESSERA_NOT_FOUND, "unknown output name");
  CHECK(strstr(tessera_last_error(), outi.name) != NULL, "message lists the outputs: '%s'", tessera_last_error());
  CHECK(tessera_model_input_info(m, 1, &in) == TESSERA_OUT_OF_RANGE, "input 1");
  /* An older tessera_tensor_info (up to `bytes`): the quantization fields are not written. */
  {
    tessera_tensor_info old;
    memset(&old, 0x5a, sizeof old);
    old.struct_size = VERSION_SIZE(tessera_tensor_info, bytes);
    CHECK_OK(tessera_model_output_info(m, 0, &old));
    CHECK(old.bytes == outi.bytes && old.rank == outi.rank && strcmp(old.name, outi.name) == 0, "older tensor info");
    unsigned char pattern[sizeof old];
    memset(pattern, 0x5a, sizeof pattern);
    CHECK(memcmp((const char*)&old + old.struct_size, pattern, sizeof old - old.struct_size) == 0,
          "tensor info fields beyond struct_size %zu were written", old.struct_size);
    tessera_tensor_info bad = TESSERA_TENSOR_INFO_INIT;
    bad.struct_size = sizeof bad + sizeof(void*);
    CHECK(tessera_model_input_info(m, 0, &bad) == TESSERA_INVALID_ARGUMENT, "a newer tensor info accepted");
    CHECK(strstr(tessera_last_error(), "tessera_tensor_info") != NULL, "message '%s'", tessera_last_error());
  }

  /* The cpu against the interpreter's output, byte for byte. */
  const char* opts[] = {"threads=2", NULL};
  tessera_session* s = NULL;
  CHECK_OK(tessera_session_create(m, "cpu", opts, &s));
  if (!s) goto free_model;
  CHECK(tessera_session_set_input(s, 0, input, in_size - 1) == TESSERA_INVALID_ARGUMENT, "short input accepted");
  CHECK(strstr(tessera_last_error(), "bytes") != NULL, "message '%s'", tessera_last_error());
  CHECK_OK(tessera_session_set_input_by_name(s, in.name, input, in_size));
  CHECK_OK(tessera_session_run(s));
  unsigned char* out = malloc(ref_size);
  CHECK_OK(tessera_session_read_output(s, 0, out, ref_size));
  CHECK(memcmp(out, ref, ref_size) == 0, "cpu output differs from the TFLite interpreter's");
  size_t top = argmax_u8(out, ref_size);

  /* User buffers on a second session over an in-memory copy of the model: seeded input. */
  tessera_model* mb = NULL;
  CHECK_OK(tessera_model_load_tflite_buffer(file, file_size, &mb));
  unsigned char* rnd = malloc(in_size);
  unsigned int seed = 12345;
  for (size_t i = 0; i < in_size; ++i) {
    seed = seed * 1103515245u + 12345u;
    rnd[i] = (unsigned char)(seed >> 16);
  }
  tessera_session* sb = NULL;
  if (mb) CHECK_OK(tessera_session_create(mb, NULL, NULL, &sb));
  if (sb) {
    unsigned char* bound = calloc(ref_size, 1);
    CHECK_OK(tessera_session_bind_input(sb, 0, rnd, in_size));
    CHECK_OK(tessera_session_bind_output(sb, 0, bound, ref_size));
    CHECK(tessera_session_bind_output(sb, 0, bound, ref_size + 1) == TESSERA_INVALID_ARGUMENT, "wrong size bound");
    CHECK_OK(tessera_session_run(sb));
    /* The same input through set_input / read_output on the first session. */
    CHECK_OK(tessera_session_set_input(s, 0, rnd, in_size));
    CHECK_OK(tessera_session_run(s));
    CHECK_OK(tessera_session_read_output(s, 0, out, ref_size));
    CHECK(memcmp(out, bound, ref_size) == 0, "bound output differs from read_output");
    CHECK(memcmp(out, ref, ref_size) != 0, "a random input gave the cat's scores");
    free(bound);
  }
  tessera_session_free(sb);
  tessera_model_free(mb);
  free(rnd);

  /* A truncated model is an error with a message, not a crash. */
  tessera_model* bad = NULL;
  CHECK(tessera_model_load_tflite_buffer(file, file_size / 3, &bad) != TESSERA_OK, "truncated model loaded");
  CHECK(bad == NULL && strlen(tessera_last_error()) > 0, "no message for the truncated model");

  /* The rknpu device model classifies the cat as the cpu does. */
  tessera_session* sr = NULL;
  CHECK_OK(tessera_session_create(m, "rknpu", NULL, &sr));
  if (sr) {
    CHECK_OK(tessera_session_set_input(sr, 0, input, in_size));
    CHECK_OK(tessera_session_run(sr));
    CHECK_OK(tessera_session_read_output(sr, 0, out, ref_size));
    CHECK(argmax_u8(out, ref_size) == top, "rknpu top-1 %zu, cpu %zu", argmax_u8(out, ref_size), top);
  }
  tessera_session_free(sr);
  CHECK(tessera_session_create(m, "no-such-device", NULL, &sr) == TESSERA_NOT_FOUND, "unknown device");
  CHECK(strstr(tessera_last_error(), "no-such-device") != NULL, "message '%s'", tessera_last_error());
  free(out);
  tessera_session_free(s);
free_model:
  tessera_model_free(m);
out:
  free(input);
  free(ref);
  free(file);
  free(model_path);
  free(in_path);
  free(ref_path);
}

struct pieces {
  char text[4096];
  size_t size;
  int calls;
  int stop_after;
};

static int on_piece(const char* piece, size_t size, void* user) {
  struct pieces* p = user;
  if (p->size + size < sizeof(p->text)) {
    memcpy(p->text + p->size, piece, size);
    p->size += size;
    p->text[p->size] = '\0';
  }
  ++p->calls;
  return p->stop_after == 0 || p->calls < p->stop_after;
}

/* The tessera CLI's stdout for `generate MODEL -p PROMPT -n N` (prompt + text + newline). */
/* Records load progress; cancels at report `stop_at` (-1: never). */
struct progress_log {
  int calls;
  double last;
  int decreased;
  int stop_at;
};
static int on_progress(double fraction, void* user) {
  struct progress_log* log = (struct progress_log*)user;
  ++log->calls;
  if (fraction < log->last) log->decreased = 1;
  log->last = fraction;
  return log->stop_at < 0 || log->calls < log->stop_at;
}

static char* cli_generate(const char* model, const char* prompt, int n) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' generate '%s' -p '%s' -n %d 2>/dev/null", cli, model, prompt, n);
  FILE* f = popen(cmd, "r");
  if (!f) return NULL;
  char* buf = calloc(65536, 1);
  size_t got = fread(buf, 1, 65535, f);
  buf[got] = '\0';
  if (pclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

static void test_generate(void) {
  char* model = path_of("models/gguf/aidreams260K.gguf");
  FILE* probe = fopen(model, "rb");
  if (!probe) {
    fixture_missing("models/gguf/aidreams260K.gguf");
    free(model);
    return;
  }
  fclose(probe);
  tessera_lm* lm = NULL;
  CHECK_OK(tessera_lm_load(model, "cpu", 0, &lm));
  if (!lm) {
    free(model);
    return;
  }
  CHECK(tessera_lm_context_length(lm) > 30, "context %lld", (long long)tessera_lm_context_length(lm));
  CHECK(tessera_lm_vocab_size(lm) > 0, "vocab");

  const char* prompt = "Once upon a time";
  tessera_generate_options go;
  tessera_generate_options_init(&go);
  CHECK(go.max_tokens == 64 && go.temperature == 0.0f && go.top_k == 40, "defaults");
  go.max_tokens = 30;
  struct pieces p = {{0}, 0, 0, 0};
  char* text = NULL;
  CHECK_OK(tessera_lm_generate(lm, prompt, &go, on_piece, &p, &text));
  CHECK(text != NULL && strcmp(text, p.text) == 0, "returned text '%s', pieces '%s'", text ? text : "(null)", p.text);
  CHECK(p.calls > 0 && p.calls <= 30, "%d pieces", p.calls);
  char* expected = cli_generate(model, prompt, 30);
  CHECK(expected != NULL, "the CLI failed");
  if (expected && text) {
    char joined[8192];
    snprintf(joined, sizeof joined, "%s%s\n", prompt, text);
    CHECK(strcmp(joined, expected) == 0, "C API '%s' vs CLI '%s'", joined, expected);
  }
  free(expected);
  tessera_string_free(text);

  /* The callback stops generation; a second call starts from an empty cache. */
  struct pieces q = {{0}, 0, 0, 3};
  CHECK_OK(tessera_lm_generate(lm, prompt, &go, on_piece, &q, NULL));
  CHECK(q.calls == 3, "%d pieces after asking to stop at 3", q.calls);
  CHECK(strncmp(q.text, p.text, q.size) == 0, "restarted generation differs: '%s' vs '%s'", q.text, p.text);

  go.top_p = 2.0f;
  go.temperature = 0.5f;
  CHECK(tessera_lm_generate(lm, prompt, &go, NULL, NULL, NULL) == TESSERA_INVALID_ARGUMENT, "top_p 2 accepted");
  CHECK(strstr(tessera_last_error(), "top-p") != NULL, "message '%s'", tessera_last_error());
  /* An older tessera_generate_options holding max_tokens only: the library reads no field
   * beyond it (temperature 0.5 and top_p 2 there are not seen), the rest take their
   * defaults: greedy, the first 5 pieces of the greedy text. */
  {
    tessera_generate_options old = go;
    old.struct_size = VERSION_SIZE(tessera_generate_options, max_tokens);
    old.max_tokens = 5;
    struct pieces r = {{0}, 0, 0, 0};
    CHECK_OK(tessera_lm_generate(lm, prompt, &old, on_piece, &r, NULL));
    CHECK(r.calls > 0 && r.calls <= 5 && strncmp(r.text, p.text, r.size) == 0, "%d pieces '%s' vs greedy '%s'",
          r.calls, r.text, p.text);
    /* Inside temperature; temperature's end, not padded; none; a newer struct. */
    const size_t bad[] = {offsetof(tessera_generate_options, temperature) + 2,
                          offsetof(tessera_generate_options, temperature) + sizeof(float), 0, sizeof old + 8};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
      old.struct_size = bad[i];
      CHECK(tessera_lm_generate(lm, prompt, &old, NULL, NULL, NULL) == TESSERA_INVALID_ARGUMENT, "struct_size %zu",
            old.struct_size);
      CHECK(strstr(tessera_last_error(), "tessera_generate_options") != NULL, "message '%s'", tessera_last_error());
    }
  }

  /* Every option: a q8_0 KV cache; feeding the prompt's ids gives logits, the same again
   * after a reset (tests/runtime/generate_api_test.cpp compares them with the generator). */
  tessera_lm_options lo;
  tessera_lm_options_init(&lo);
  CHECK(lo.batch == 32 && lo.offload_layers == -1 && lo.context == 0 && lo.kv_type == NULL, "lm option defaults");
  const char* threads[] = {"threads=1", NULL};
  lo.device_options = threads;
  lo.kv_type = "q8_0";
  tessera_lm* q8 = NULL;
  char* kq8 = path_of("models/gguf/kquant/kq-llama-256d-4L-Q8_0.gguf");  /* head size 32, for q8_0 */
  CHECK_OK(tessera_lm_load_with(kq8, &lo, &q8));
  if (q8) {
    int32_t ids[64];
    size_t n = 0;
    CHECK_OK(tessera_lm_tokenize(q8, prompt, 1, ids, 64, &n));
    size_t vocab = (size_t)tessera_lm_vocab_size(q8);
    float* a = calloc(vocab, sizeof(float));
    float* b = calloc(vocab, sizeof(float));
    CHECK_OK(tessera_lm_feed(q8, ids, n, a, vocab));
    tessera_lm_reset(q8);
    CHECK_OK(tessera_lm_feed(q8, ids, n, b, vocab));
    CHECK(memcmp(a, b, vocab * sizeof(float)) == 0, "logits differ after a reset");
    int nonzero = 0;
    for (size_t i = 0; i < vocab; ++i) nonzero += a[i] != 0.0f;
    CHECK(nonzero > (int)vocab / 2, "%d nonzero logits of %zu", nonzero, vocab);
    CHECK(tessera_lm_feed(q8, ids, n, a, 3) == TESSERA_INVALID_ARGUMENT, "small logits buffer accepted");
    free(a);
    free(b);
    tessera_lm_free(q8);
  }
  free(kq8);
  /* Load progress: reports never decrease and end at 1; 0 from the callback cancels. */
  {
    struct progress_log log = {0, 0.0, 0, -1};
    tessera_lm_options po;
    tessera_lm_options_init(&po);
    CHECK(po.progress == NULL && po.progress_user == NULL, "progress defaults");
    po.progress = on_progress;
    po.progress_user = &log;
    tessera_lm* p = NULL;
    CHECK_OK(tessera_lm_load_with(model, &po, &p));
    CHECK(log.calls >= 3 && log.last == 1.0 && !log.decreased, "%d reports, last %g, decreased %d", log.calls,
          log.last, log.decreased);
    tessera_lm_free(p);
    struct progress_log stop = {0, 0.0, 0, 2};
    po.progress_user = &stop;
    p = NULL;
    CHECK(tessera_lm_load_with(model, &po, &p) == TESSERA_CANCELLED && p == NULL, "cancelled load");
    CHECK(stop.calls == 2, "%d reports after cancelling", stop.calls);
    CHECK(strcmp(tessera_status_name(TESSERA_CANCELLED), "cancelled") == 0, "%s", tessera_status_name(TESSERA_CANCELLED));
  }
  /* An older tessera_lm_options without the progress fields: the callback set beyond its
   * struct_size is never called. A size larger than the library's is refused. */
  {
    struct progress_log log = {0, 0.0, 0, -1};
    tessera_lm_options old;
    tessera_lm_options_init(&old);
    old.progress = on_progress;
    old.progress_user = &log;
    old.struct_size = offsetof(tessera_lm_options, progress);
    tessera_lm* p = NULL;
    CHECK_OK(tessera_lm_load_with(model, &old, &p));
    CHECK(p != NULL && log.calls == 0, "%d progress reports from an older struct without `progress`", log.calls);
    tessera_lm_free(p);
    old.struct_size = sizeof old + 8;
    p = NULL;
    CHECK(tessera_lm_load_with(model, &old, &p) == TESSERA_INVALID_ARGUMENT && p == NULL, "a newer struct accepted");
    CHECK(strstr(tessera_last_error(), "tessera_lm_options") != NULL && strstr(tessera_last_error(), "struct_size") != NULL,
          "message '%s'", tessera_last_error());
  }
  lo.kv_type = "q4_0";
  CHECK(tessera_lm_load_with(model, &lo, &q8) == TESSERA_INVALID_ARGUMENT, "kv_type q4_0 accepted");
  CHECK(strstr(tessera_last_error(), "kv_type") != NULL, "message '%s'", tessera_last_error());
  tessera_lm_free(lm);
  free(model);

  /* Tokenization against llama.cpp's prompt ids (models/gguf/refs/llamacpp-greedy.tsv). */
  char* tsv_path = path_of("models/gguf/refs/llamacpp-greedy.tsv");
  char* kq = path_of("models/gguf/kquant/kq-llama-256d-4L-F32.gguf");
  FILE* tsv = fopen(tsv_path, "r");
  if (!tsv) {
    fixture_missing("models/gguf/refs/llamacpp-greedy.tsv");
  } else {
    char line[8192];
    int compared = 0;
    CHECK_OK(tessera_lm_load(kq, NULL, 0, &lm));
    while (lm && fgets(line, sizeof line, tsv)) {
      char* cols[4] = {0};
      char* save = NULL;
      char* tok = strtok_r(line, "\t", &save);
      for (int c = 0; c < 4 && tok; ++c, tok = strtok_r(NULL, "\t", &save)) cols[c] = tok;
      if (!cols[2] || strcmp(cols[0], "kq-llama-256d-4L-F32.gguf") != 0) continue;
      int32_t want[256], got[256];
      size_t nwant = 0, ngot = 0;
      for (char* s = strtok_r(cols[2], " ", &save); s && nwant < 256; s = strtok_r(NULL, " ", &save))
        want[nwant++] = (int32_t)strtol(s, NULL, 10);
      CHECK_OK(tessera_lm_tokenize(lm, cols[1], 1, got, 256, &ngot));
      CHECK(ngot == nwant && memcmp(got, want, nwant * sizeof(int32_t)) == 0, "tokens of '%s' differ from llama.cpp's",
            cols[1]);
      size_t small = 0;
      CHECK(tessera_lm_tokenize(lm, cols[1], 1, got, 1, &small) == TESSERA_OUT_OF_RANGE && small == nwant,
            "capacity 1: count %zu", small);
      ++compared;
    }
    CHECK(compared == 2, "%d prompts compared", compared);
    fclose(tsv);
    tessera_lm_free(lm);
  }
  free(tsv_path);
  free(kq);
}

/* Detection in one call: YOLOv8n on Grace Hopper (the person, class 0, and the tie, class 27,
 * best first, boxes in the photo's pixels), a capacity smaller than what is found, and a
 * classifier refused with the reason. */
static void test_detect(void) {
  char* v8 = path_of("models/tflite/corpus/yolov8n_full_integer_quant.tflite");
  char* mnv1 = path_of("models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  char* image = path_of("images/grace_hopper.bmp");
  FILE* probe = fopen(v8, "rb");
  FILE* probe2 = fopen(image, "rb");
  if (!probe || !probe2) {
    fixture_missing("models/tflite/corpus/yolov8n_full_integer_quant.tflite / images/grace_hopper.bmp");
    if (probe) fclose(probe);
    if (probe2) fclose(probe2);
    goto out;
  }
  fclose(probe);
  fclose(probe2);
  tessera_model* m = NULL;
  CHECK_OK(tessera_model_load(v8, &m));
  if (!m) goto out;
  /* The class names the export carries: person is class 0, tie 27, 80 in all. */
  CHECK(tessera_model_num_labels(m) == 80, "%zu labels, want COCO's 80", tessera_model_num_labels(m));
  CHECK(tessera_model_label(m, 0) && strcmp(tessera_model_label(m, 0), "person") == 0, "label 0: %s",
        tessera_model_label(m, 0) ? tessera_model_label(m, 0) : "(null)");
  CHECK(tessera_model_label(m, 27) && strcmp(tessera_model_label(m, 27), "tie") == 0, "label 27");
  CHECK(tessera_model_label(m, 80) == NULL && tessera_model_label(NULL, 0) == NULL && tessera_model_num_labels(NULL) == 0,
        "labels past the end or of no model");
  tessera_session* s = NULL;
  CHECK_OK(tessera_session_create(m, "cpu", NULL, &s));
  if (s) {
    tessera_detection found[8];
    size_t count = 0;
    CHECK_OK(tessera_session_detect(s, image, 0.3f, found, 8, &count));
    CHECK(count == 2, "%zu detections at 0.3, want the person and the tie", count);
    if (count == 2) {
      CHECK(found[0].class_id == 0 && found[0].score > 0.85f && found[0].left < 15 && found[0].right > 500,
            "person: class %lld score %.3f box %.1f..%.1f", (long long)found[0].class_id, found[0].score, found[0].left,
            found[0].right);
      CHECK(found[1].class_id == 27 && found[1].score < found[0].score && found[1].left > 200 && found[1].right < 320 &&
                found[1].top > 380 && found[1].bottom < 560,
            "tie: class %lld score %.3f box %.1f %.1f %.1f %.1f", (long long)found[1].class_id, found[1].score,
            found[1].left, found[1].top, found[1].right, found[1].bottom);
    }
    /* Capacity 1: the count says 2, only found[0] is written. */
    tessera_detection one[2];
    memset(one, 0x5a, sizeof one);
    unsigned char pattern[sizeof one[1]];
    memset(pattern, 0x5a, sizeof pattern);
    CHECK_OK(tessera_session_detect(s, image, 0.3f, one, 1, &count));
    CHECK(count == 2 && one[0].class_id == 0 && memcmp(&one[1], pattern, sizeof pattern) == 0,
          "capacity 1: count %zu, first class %lld", count, (long long)one[0].class_id);
    CHECK_OK(tessera_session_detect(s, image, 0.3f, NULL, 0, &count));
    CHECK(count == 2, "count only: %zu", count);
    CHECK(tessera_session_detect(s, image, 2.0f, found, 8, &count) == TESSERA_INVALID_ARGUMENT, "threshold 2 accepted");
    CHECK(tessera_session_detect(s, image, 0.3f, NULL, 4, &count) == TESSERA_INVALID_ARGUMENT, "NULL out accepted");
    tessera_session_free(s);
  }
  tessera_model_free(m);
  /* A classifier is no detector. */
  m = NULL;
  CHECK_OK(tessera_model_load(mnv1, &m));
  if (m) {
    /* Its labels file packed by TFLite's metadata writer: background first, 1001 lines. */
    CHECK(tessera_model_num_labels(m) == 1001 && strcmp(tessera_model_label(m, 0), "background") == 0,
          "%zu packed labels", tessera_model_num_labels(m));
    s = NULL;
    CHECK_OK(tessera_session_create(m, "cpu", NULL, &s));
    if (s) {
      size_t count = 7;
      CHECK(tessera_session_detect(s, image, 0.3f, NULL, 0, &count) == TESSERA_UNSUPPORTED, "a classifier detected");
      CHECK(strstr(tessera_last_error(), "is not an object detector") != NULL, "message '%s'", tessera_last_error());
      CHECK(count == 0, "count %zu after an error", count);
      tessera_session_free(s);
    }
    tessera_model_free(m);
  }
out:
  free(v8);
  free(mnv1);
  free(image);
}

/* tessera_quantize_tflite: TFLite Micro's float hello_world (x -> sin x) quantized from 16
 * calibration points, loaded back from memory and run: within 0.2 of sin x; a NULL model and
 * a quantized model are refused with the reason. */
static void test_quantize(void) {
  char* hello = path_of("models/tflite/corpus/micro_hello_world_float.tflite");
  size_t size = 0;
  unsigned char* bytes = read_all(hello, &size);
  if (!bytes) {
    fixture_missing("models/tflite/corpus/micro_hello_world_float.tflite");
    free(hello);
    return;
  }
  float xs[16];
  const void* inputs[16];
  size_t sizes[16];
  for (int i = 0; i < 16; ++i) {
    xs[i] = 0.39f * (float)i + 0.01f;
    inputs[i] = &xs[i];
    sizes[i] = sizeof(float);
  }
  void* q = NULL;
  size_t q_size = 0;
  CHECK_OK(tessera_quantize_tflite(bytes, size, inputs, sizes, 16, 1, 0, &q, &q_size));
  CHECK(q && q_size > 0, "no quantized model");
  if (q) {
    tessera_model* m = NULL;
    CHECK_OK(tessera_model_load_tflite_buffer(q, q_size, &m));
    tessera_session* s = NULL;
    if (m) CHECK_OK(tessera_session_create(m, "cpu", NULL, &s));
    if (s) {
      const float x = 1.2f;
      float y = 0;
      CHECK_OK(tessera_session_set_input(s, 0, &x, sizeof x));
      CHECK_OK(tessera_session_run(s));
      CHECK_OK(tessera_session_read_output(s, 0, &y, sizeof y));
      CHECK(fabsf(y - sinf(x)) < 0.2f, "y = %f at x = %f, sin x = %f", y, x, sinf(x));
      tessera_session_free(s);
    }
    tessera_model_free(m);
    tessera_buffer_free(q);
  }
  CHECK(tessera_quantize_tflite(NULL, 0, inputs, sizes, 16, 1, 0, &q, &q_size) == TESSERA_INVALID_ARGUMENT, "NULL model");
  CHECK(tessera_quantize_tflite(bytes, size, inputs, sizes, 0, 1, 0, &q, &q_size) == TESSERA_INVALID_ARGUMENT,
        "no calibration run: %s", tessera_last_error());
  CHECK(strstr(tessera_last_error(), "no calibration input") != NULL, "%s", tessera_last_error());
  free(bytes);
  free(hello);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: capi_test SHARED_DIR TESSERA_CLI\n");
    return 2;
  }
  shared_dir = argv[1];
  cli = argv[2];
  test_basics();
  test_struct_sizes();
  test_tflite();
  test_detect();
  test_generate();
  test_quantize();
  printf("capi_test: %d checks, %d failed\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
