// Registration of the plain (float and integer) reference kernels, one call per family.
#include "backend/cpu/kernel.h"

namespace tessera::cpu {

void register_elementwise_kernels(KernelTable& t);   // elementwise.cpp
void register_unary_kernels(KernelTable& t);         // unary.cpp
void register_linear_kernels(KernelTable& t);        // linear.cpp
void register_conv_kernels(KernelTable& t);          // conv.cpp
void register_reduce_kernels(KernelTable& t);        // reduce.cpp
void register_norm_kernels(KernelTable& t);          // norm.cpp
void register_movement_kernels(KernelTable& t);      // movement.cpp
void register_gather_resize_kernels(KernelTable& t); // gather_resize.cpp
void register_quant_plain_kernels(KernelTable& t);   // quant_plain.cpp
void register_detection_kernels(KernelTable& t);     // detection.cpp (f32 and quantized inputs)
void register_attention_kernels(KernelTable& t);     // attention.cpp
void register_transpose_conv_kernels(KernelTable& t); // transpose_conv.cpp (f32 and quantized)
void register_svdf_kernels(KernelTable& t);          // svdf.cpp (f32 and integer)
void register_lstm_kernels(KernelTable& t);          // lstm.cpp (f32 and integer 8x8_16)
void register_compare_select_kernels(KernelTable& t); // compare_select.cpp (plain and quantized)

void register_plain_kernels(KernelTable& t) {
  register_elementwise_kernels(t);
  register_unary_kernels(t);
  register_linear_kernels(t);
  register_conv_kernels(t);
  register_reduce_kernels(t);
  register_norm_kernels(t);
  register_movement_kernels(t);
  register_gather_resize_kernels(t);
  register_quant_plain_kernels(t);
  register_detection_kernels(t);
  register_attention_kernels(t);
  register_transpose_conv_kernels(t);
  register_svdf_kernels(t);
  register_lstm_kernels(t);
  register_compare_select_kernels(t);
}

}  // namespace tessera::cpu
