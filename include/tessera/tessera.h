// Tessera's public C++ API in one include: models and sessions (tessera/model.h), text
// generation (tessera/generate.h), devices, graphs and formats underneath.
// Link with the CMake target Tessera::tessera (find_package(Tessera)) or `pkg-config tessera`.
#pragma once

#include "tessera/cpu_model.h"
#include "tessera/detect.h"
#include "tessera/quantize.h"
#include "tessera/generate.h"
#include "tessera/model.h"
#include "tessera/session.h"
#include "tessera/tokenizer.h"
#include "tessera/version.h"
