/* Classifies an image with a TFLite model through Tessera's C API.
 *   classify_c MODEL.tflite IMAGE [DEVICE]
 * Prints the best class: index and dequantized score. */
#include <stdio.h>
#include <stdlib.h>

#include <tessera/tessera_c.h>

static int fail(const char* what) {
  fprintf(stderr, "classify_c: %s: %s\n", what, tessera_last_error());
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: classify_c MODEL.tflite IMAGE [DEVICE]\n");
    return 2;
  }
  tessera_model* model = NULL;
  tessera_session* session = NULL;
  tessera_tensor_info in = TESSERA_TENSOR_INFO_INIT, out = TESSERA_TENSOR_INFO_INIT;
  if (tessera_model_load(argv[1], &model) != TESSERA_OK) return fail("load");
  if (tessera_model_input_info(model, 0, &in) != TESSERA_OK || tessera_model_output_info(model, 0, &out) != TESSERA_OK)
    return fail("info");
  if (out.dtype != TESSERA_U8 || out.num_scales != 1) {
    fprintf(stderr, "classify_c: this example reads u8 scores\n");
    return 1;
  }
  unsigned char* input = malloc((size_t)in.bytes);
  unsigned char* scores = malloc((size_t)out.bytes);
  if (tessera_model_image_input(model, argv[2], 0, input, (size_t)in.bytes) != TESSERA_OK) return fail("image");
  if (tessera_session_create(model, argc > 3 ? argv[3] : "cpu", NULL, &session) != TESSERA_OK) return fail("session");
  /* User buffers: the session reads `input` and writes `scores` at every run. */
  if (tessera_session_bind_input(session, 0, input, (size_t)in.bytes) != TESSERA_OK ||
      tessera_session_bind_output(session, 0, scores, (size_t)out.bytes) != TESSERA_OK)
    return fail("bind");
  if (tessera_session_run(session) != TESSERA_OK) return fail("run");
  size_t best = 0;
  for (size_t i = 1; i < (size_t)out.bytes; ++i)
    if (scores[i] > scores[best]) best = i;
  printf("%zu %.4f\n", best, out.scales[0] * ((double)scores[best] - (double)out.zero_points[0]));
  tessera_session_free(session);
  tessera_model_free(model);
  free(input);
  free(scores);
  return 0;
}
