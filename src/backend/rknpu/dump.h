// TESSERA_DUMP=rknpu: after each execute, every task's register stream (raw and decoded)
// and every buffer the program touched are written under $TESSERA_DUMP_DIR (default
// ./rknpu_dump/run<N>/), for debugging against a board or Mesa's dumps.
#pragma once

#include <cstdint>
#include <map>

#include "backend/rknpu/program.h"

namespace tessera::rknpu {

bool dump_enabled();
Status dump_program(const RknpuProgram& p, const std::map<TensorId, BoInfo>& bo_of, Transport* t, int64_t run);

}  // namespace tessera::rknpu
