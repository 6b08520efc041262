/// @file lesson.cuh
/// @brief Everything a lesson's harness (main.cu) uses from the lab library, and the standard
/// headers the harnesses share, in one include. What a harness needs beyond it (CUB, cuBLAS
/// through lab/cublas.hpp, NVTX, system headers) it includes itself.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lab/bf16.cuh"
#include "lab/check.hpp"
#include "lab/column_sums.cuh"
#include "lab/cub_call.hpp"
#include "lab/data.hpp"
#include "lab/declared.cuh"
#include "lab/device.hpp"
#include "lab/fill.cuh"
#include "lab/format.hpp"
#include "lab/graph.hpp"
#include "lab/guard.hpp"
#include "lab/harness.hpp"
#include "lab/memory.hpp"
#include "lab/outputs.cuh"
#include "lab/presets.hpp"
#include "lab/protocol.cuh"
#include "lab/ratio.hpp"
#include "lab/read_only.cuh"
#include "lab/reduce.cuh"
#include "lab/reference.hpp"
#include "lab/sparse_changes.cuh"
#include "lab/speedups.hpp"
#include "lab/stats.hpp"
#include "lab/sum_reference.cuh"
#include "lab/timed_calls.hpp"
#include "lab/timing.hpp"
#include "lab/validate.hpp"
#include "lab/variant.hpp"
