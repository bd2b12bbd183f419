// Registration of the plain (float and integer) reference kernels, one call per family.
#include "backend/cpu/kernel.h"

namespace tessera::cpu {

void register_elementwise_kernels(KernelTable& t);

void register_plain_kernels(KernelTable& t) {
  register_elementwise_kernels(t);
}

}  // namespace tessera::cpu
