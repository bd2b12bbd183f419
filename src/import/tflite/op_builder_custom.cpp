// Custom operators: TFLite_Detection_PostProcess (the SSD post-processing that object
// detectors end with), mapped onto `detection_postprocess`. Any other custom code is an
// error naming it.
//
// Its options are a FlexBuffer map in Operator.custom_options (TFLite's
// detection_postprocess.cc Init reads them): read here with the flatbuffers library's
// flexbuffers reader after its verifier has accepted the bytes.
#include <flatbuffers/flexbuffers.h>

#include <cmath>
#include <string>

#include "import/tflite/import_context.h"

namespace tessera::tflite {

namespace T = ::tflite;

namespace {

constexpr const char* kDetectionPostProcess = "TFLite_Detection_PostProcess";
// detection_postprocess.cc: detections_per_class when the map does not give it.
constexpr int64_t kDefaultDetectionsPerClass = 100;

// A number from the options map; `required` keys must be present.
Result<double> number(const OpSite& s, const flexbuffers::Map& m, const char* key, bool required, double fallback) {
  const flexbuffers::Reference r = m[key];
  if (r.IsNull()) {
    if (required) return s.fail(std::string("custom options: '") + key + "' is missing");
    return fallback;
  }
  if (!r.IsNumeric() && !r.IsBool())
    return s.fail(std::string("custom options: '") + key + "' is not a number (FlexBuffer type " +
                  std::to_string(static_cast<int>(r.GetType())) + ")");
  const double v = r.IsBool() ? (r.AsBool() ? 1.0 : 0.0) : r.AsDouble();
  if (!std::isfinite(v)) return s.fail(std::string("custom options: '") + key + "' is not finite");
  return v;
}

Result<int64_t> integer(const OpSite& s, const flexbuffers::Map& m, const char* key, bool required, int64_t fallback) {
  TS_ASSIGN_OR_RETURN(double v, number(s, m, key, required, static_cast<double>(fallback)));
  if (v != std::floor(v) || std::fabs(v) > 1e9)
    return s.fail(std::string("custom options: '") + key + "' = " + std::to_string(v) + " is not an integer in range");
  return static_cast<int64_t>(v);
}

Status build_detection_postprocess(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(3, 3, 4));
  const auto* opts = s.op->custom_options();
  if (!opts || opts->size() == 0) return s.fail("custom options (a FlexBuffer map) are missing");
  if (!flexbuffers::VerifyBuffer(opts->data(), opts->size()))
    return s.fail("custom options: the FlexBuffer verifier rejected " + std::to_string(opts->size()) + " bytes");
  const flexbuffers::Reference root = flexbuffers::GetRoot(opts->data(), opts->size());
  if (!root.IsMap()) return s.fail("custom options: the FlexBuffer root is not a map");
  const flexbuffers::Map m = root.AsMap();
  AttrMap attrs;
  TS_ASSIGN_OR_RETURN(int64_t max_detections, integer(s, m, "max_detections", true, 0));
  TS_ASSIGN_OR_RETURN(int64_t num_classes, integer(s, m, "num_classes", true, 0));
  attrs[attr::max_detections.name] = max_detections;
  attrs[attr::num_classes.name] = num_classes;
  TS_ASSIGN_OR_RETURN(int64_t per_detection, integer(s, m, "max_classes_per_detection", true, 1));
  TS_ASSIGN_OR_RETURN(int64_t per_class, integer(s, m, "detections_per_class", false, kDefaultDetectionsPerClass));
  TS_ASSIGN_OR_RETURN(int64_t regular, integer(s, m, "use_regular_nms", false, 0));
  attrs["max_classes_per_detection"] = per_detection;
  attrs["detections_per_class"] = per_class;
  attrs["use_regular_nms"] = int64_t{regular != 0};
  for (const char* key : {"nms_score_threshold", "nms_iou_threshold", "y_scale", "x_scale", "h_scale", "w_scale"}) {
    TS_ASSIGN_OR_RETURN(double v, number(s, m, key, true, 0.0));
    // TFLite reads these with AsFloat: keep the float value.
    attrs[key] = static_cast<double>(static_cast<float>(v));
  }
  std::vector<TensorId> ins, outs;
  for (int k = 0; k < 3; ++k) {
    TS_ASSIGN_OR_RETURN(TensorId id, s.input(k));
    ins.push_back(id);
  }
  // TFLite sizes the outputs in the operator's Prepare; converters often declare them with
  // no shape ([]). Such outputs take the shapes the options give (boxes [1, M, 4], classes
  // and scores [1, M], count [1]); a declared shape must match them (checked by add()).
  const int64_t rows = max_detections * per_detection;
  const Shape shapes[4] = {{1, rows, 4}, {1, rows}, {1, rows}, {1}};
  for (int k = 0; k < 4; ++k) {
    TS_ASSIGN_OR_RETURN(TensorId id, s.output(k));
    Tensor& t = s.cx.graph.tensor(id);
    if (t.dtype != DType::f32)
      return s.fail("output " + std::to_string(k) + " '" + t.name + "' must be f32, got " + dtype_name(t.dtype));
    if (t.shape.empty() && rows > 0 && per_detection > 0) t.shape = shapes[k];  // else add() reports the options
    outs.push_back(id);
  }
  return s.add(OpKind::detection_postprocess, std::move(ins), std::move(outs), std::move(attrs));
}

}  // namespace

Status build_custom_operator(OpSite& s) {
  const T::OperatorCode* oc = s.cx.model->operator_codes()->Get(s.op->opcode_index());
  const std::string code = oc->custom_code() ? oc->custom_code()->str() : std::string();
  if (code == kDetectionPostProcess) return build_detection_postprocess(s);
  return error(StatusCode::unsupported, "tflite op ", s.index, ": operator CUSTOM '", code, "' is not supported");
}

}  // namespace tessera::tflite
