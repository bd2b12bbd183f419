// Registration of the TFLite-exact quantized kernels (u8/i8/i16 with QuantParams).
// Each quantized family file adds its kernels here.
#include "backend/cpu/kernel.h"

namespace tessera::cpu {

void register_quant_conv_kernels(KernelTable& t);         // quant_conv.cpp
void register_quant_elementwise_kernels(KernelTable& t);  // quant_elementwise.cpp
void register_quant_pool_kernels(KernelTable& t);         // quant_pool.cpp
void register_quant_softmax_kernels(KernelTable& t);      // quant_softmax.cpp
void register_quant_misc_kernels(KernelTable& t);         // quant_misc.cpp
void register_tflite_extra_kernels(KernelTable& t);       // quant_tflite_extra.cpp (floor_div, sqrt, gather_nd)
void register_quant_reduce_kernels(KernelTable& t);       // quant_reduce.cpp (sum, reduce_max/min/prod)
void register_quant_matmul_kernels(KernelTable& t);      // quant_matmul.cpp (matmul i8 / i16)
void register_quant_activation_norm_kernels(KernelTable& t);  // quant_activation_norm.cpp (elu, gelu, prelu, l2_norm, log_softmax)

void register_quant_kernels(KernelTable& t) {
  register_quant_conv_kernels(t);
  register_quant_elementwise_kernels(t);
  register_quant_pool_kernels(t);
  register_quant_softmax_kernels(t);
  register_quant_misc_kernels(t);
  register_tflite_extra_kernels(t);
  register_quant_reduce_kernels(t);
  register_quant_activation_norm_kernels(t);
  register_quant_matmul_kernels(t);
}

}  // namespace tessera::cpu
