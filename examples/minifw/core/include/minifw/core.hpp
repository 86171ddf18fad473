// minifw_core: minifw's Python-independent numeric library (as libtorch is to torch).
#pragma once

#include "minifw/core/dtype.hpp"
#include "minifw/core/info.hpp"
#include "minifw/core/ops.hpp"
#include "minifw/core/tensor.hpp"
#include "minifw/core/text.hpp"
