// SPDX-License-Identifier: Apache-2.0
#pragma once
// Messages built by appending to one string. `"a" + s`, `s1 + s2` and `s = "a"` make GCC >= 13
// emit calls to std::string::_M_replace_cold (GLIBCXX_3.4.31), which a manylinux_2_28 wheel
// may not need when it is built with a newer GCC than that policy's.
#include <string>
#include <string_view>

namespace minifw::core {

template <class... Parts>
std::string cat(const Parts&... parts) {
  std::string out;
  (out.append(std::string_view(parts)), ...);
  return out;
}

}  // namespace minifw::core
