// The importer's entry points when the TFLite schema was absent at build time.
#include "import/tflite/tflite_importer.h"

namespace tessera::tflite {

bool tflite_available() { return false; }

Result<Graph> load_tflite_file(const std::string& path) {
  return error(StatusCode::unsupported, "model '", path,
               "': built without TFLite support (the TFLite schema was not found at build time; "
               "configure with -DTESSERA_SHARED_DIR pointing at the fixtures folder)");
}

Result<Graph> load_tflite_buffer(const ConstData&) {
  return error(StatusCode::unsupported,
               "built without TFLite support (the TFLite schema was not found at build time)");
}

}  // namespace tessera::tflite
