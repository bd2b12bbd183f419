// v2 tensors: JSON and binary data against the bytes they stand for, and every rejection.
#include "serve/tensor_json.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "convert/dtype.h"
#include "serve/api_error.h"

namespace tessera::serve {
namespace {

using nlohmann::json;

// The status of the ApiError `f` throws (0 when it throws none).
template <typename F>
int status_of(F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e.status();
  }
  return 0;
}

TEST(TensorJson, NestedU8DataBecomesTheSameBytesAndBack) {
  std::mt19937 rng(7);
  const TensorSpec in{"image", DType::u8, {1, 3, 4, 2}};
  std::vector<uint8_t> bytes(24);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  // Nested [1][3][4][2] as a client would write it.
  json nested = json::array();
  json l1 = json::array();
  for (int i = 0; i < 3; ++i) {
    json l2 = json::array();
    for (int j = 0; j < 4; ++j) l2.push_back({bytes[(i * 4 + j) * 2], bytes[(i * 4 + j) * 2 + 1]});
    l1.push_back(l2);
  }
  nested.push_back(l1);
  const json body = {{"id", "r1"},
                     {"inputs", {{{"name", "image"}, {"datatype", "UINT8"}, {"shape", {1, 3, 4, 2}}, {"data", nested}}}}};
  const InferRequest r = parse_infer_request(body.dump(), std::nullopt, "m", {in}, {in});
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0], bytes);
  EXPECT_EQ(r.id, "r1");
  const json back = tensor_data_json(in, bytes);
  ASSERT_EQ(back.size(), bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) EXPECT_EQ(back[i].get<int>(), bytes[i]);
}

TEST(TensorJson, FloatAndIntegerTypesRoundTripExactly) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> f(-1e6f, 1e6f);
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::i8, DType::i16, DType::i32, DType::i64, DType::boolean}) {
    SCOPED_TRACE(dtype_name(t));
    const TensorSpec spec{"x", t, {2, 5}};
    // Random values as host bytes of `t`.
    std::vector<uint8_t> bytes;
    for (int i = 0; i < 10; ++i) {
      const float v = f(rng);
      auto put = [&](auto x) {
        const auto* p = reinterpret_cast<const uint8_t*>(&x);
        bytes.insert(bytes.end(), p, p + sizeof x);
      };
      switch (t) {
        case DType::f32: put(v); break;
        case DType::f16: put(convert::f32_to_f16(v / 100)); break;
        case DType::bf16: put(convert::f32_to_bf16(v)); break;
        case DType::i8: put(static_cast<int8_t>(rng())); break;
        case DType::i16: put(static_cast<int16_t>(rng())); break;
        case DType::i32: put(static_cast<int32_t>(rng())); break;
        case DType::i64: put(static_cast<int64_t>(rng()) * 1000003 - (int64_t{1} << 40)); break;
        default: put(static_cast<uint8_t>(rng() & 1)); break;
      }
    }
    // Bytes -> JSON text -> bytes must be the identity (what `tessera run` writes is what comes back).
    const json data = json::parse(tensor_data_json(spec, bytes).dump());
    const json body = {{"inputs", {{{"name", "x"}, {"datatype", v2_datatype(t)}, {"shape", {2, 5}}, {"data", data}}}}};
    const InferRequest r = parse_infer_request(body.dump(), std::nullopt, "m", {spec}, {spec});
    EXPECT_EQ(r.inputs[0], bytes);
  }
}

TEST(TensorJson, BinaryExtensionInAndOut) {
  std::mt19937 rng(3);
  const TensorSpec a{"a", DType::f32, {3}}, b{"b", DType::u8, {4}};
  std::vector<uint8_t> ab(12), bb(4);
  for (auto& x : ab) x = static_cast<uint8_t>(rng());
  for (auto& x : bb) x = static_cast<uint8_t>(rng());
  const json header = {{"inputs",
                        {{{"name", "b"}, {"datatype", "UINT8"}, {"shape", {4}}, {"parameters", {{"binary_data_size", 4}}}},
                         {{"name", "a"}, {"datatype", "FP32"}, {"shape", {3}}, {"parameters", {{"binary_data_size", 12}}}}}},
                       {"outputs", {{{"name", "b"}, {"parameters", {{"binary_data", true}}}}}}};
  const std::string h = header.dump();
  const std::string body = h + std::string(bb.begin(), bb.end()) + std::string(ab.begin(), ab.end());
  const InferRequest r = parse_infer_request(body, h.size(), "m", {a, b}, {a, b});
  EXPECT_EQ(r.inputs[0], ab);
  EXPECT_EQ(r.inputs[1], bb);
  EXPECT_FALSE(r.wanted[0]);
  EXPECT_TRUE(r.wanted[1]);
  const InferResponse out = make_infer_response("m", r, {a, b}, {ab, bb});
  ASSERT_TRUE(out.header_length);
  const json rh = json::parse(out.body.substr(0, *out.header_length));
  ASSERT_EQ(rh["outputs"].size(), 1u);
  EXPECT_EQ(rh["outputs"][0]["parameters"]["binary_data_size"], 4);
  EXPECT_EQ(out.body.substr(*out.header_length), std::string(bb.begin(), bb.end()));
  // A binary size that disagrees with the tensor, or runs past the body.
  EXPECT_EQ(status_of([&] { parse_infer_request(body.substr(0, body.size() - 1), h.size(), "m", {a, b}, {a, b}); }), 400);
  EXPECT_EQ(status_of([&] { parse_infer_request(body + "x", h.size(), "m", {a, b}, {a, b}); }), 400);
  EXPECT_EQ(status_of([&] { parse_infer_request(body, body.size() + 1, "m", {a, b}, {a, b}); }), 400);
}

TEST(TensorJson, BadRequestsAreRejectedWithTheRightStatus) {
  const TensorSpec in{"x", DType::u8, {1, 2}};
  auto req = [](json input) { return json{{"inputs", {input}}}.dump(); };
  auto parse = [&](const std::string& body) { parse_infer_request(body, std::nullopt, "m", {in}, {in}); };
  const json good = {{"name", "x"}, {"datatype", "UINT8"}, {"shape", {1, 2}}, {"data", {1, 2}}};
  EXPECT_EQ(status_of([&] { parse(req(good)); }), 0);
  EXPECT_EQ(status_of([&] { parse("{\"inputs\": [ {\"name\": "); }), 400);    // malformed JSON
  EXPECT_EQ(status_of([&] { parse("[1, 2]"); }), 400);                        // not an object
  EXPECT_EQ(status_of([&] { parse("{}"); }), 400);                            // no inputs
  json j = good;
  j["shape"] = {2, 1};
  EXPECT_EQ(status_of([&] { parse(req(j)); }), 422);  // wrong shape
  j = good;
  j["datatype"] = "FP32";
  EXPECT_EQ(status_of([&] { parse(req(j)); }), 422);  // wrong datatype
  j = good;
  j["data"] = {1, 2, 3};
  EXPECT_EQ(status_of([&] { parse(req(j)); }), 422);  // too many elements
  j["data"] = {1};
  EXPECT_EQ(status_of([&] { parse(req(j)); }), 422);  // too few
  j["data"] = {1, 256};
  EXPECT_EQ(status_of([&] { parse(req(j)); }), 422);  // out of the UINT8 range
  j["data"] = {1, 2.5};
  EXPECT_EQ(status_of([&] { parse(req(j)); }), 422);  // not an integer
  j["data"] = {1, "2"};
  EXPECT_EQ(status_of([&] { parse(req(j)); }), 422);  // not a number
  j = good;
  j["name"] = "y";
  EXPECT_EQ(status_of([&] { parse(req(j)); }), 422);  // no such input
  EXPECT_EQ(status_of([&] { parse(json{{"inputs", json::array()}}.dump()); }), 422);  // missing input
  EXPECT_EQ(status_of([&] { parse(json{{"inputs", {good, good}}}.dump()); }), 422);  // given twice
  j = good;
  j["shape"] = {1, "2"};
  EXPECT_EQ(status_of([&] { parse(req(j)); }), 400);  // ill-typed shape
  EXPECT_EQ(status_of([&] {
              parse(json{{"inputs", {good}}, {"outputs", {{{"name", "nope"}}}}}.dump());
            }),
            422);  // unknown output
  // A huge shape is refused by the shape check before any size is computed from it.
  j = good;
  j["shape"] = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_EQ(status_of([&] { parse(req(j)); }), 422);
}

TEST(TensorJson, MessagesNameTheModelAndTheInput) {
  const TensorSpec in{"pixels", DType::u8, {1, 2}};
  const json body = {{"inputs", {{{"name", "pixels"}, {"datatype", "UINT8"}, {"shape", {1, 3}}, {"data", {1, 2, 3}}}}}};
  try {
    parse_infer_request(body.dump(), std::nullopt, "mobilenet", {in}, {in});
    FAIL() << "no error";
  } catch (const ApiError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("mobilenet"), std::string::npos) << m;
    EXPECT_NE(m.find("pixels"), std::string::npos) << m;
    EXPECT_NE(m.find("[1,2]"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace tessera::serve
