// The one exception type of the model layer: a file that cannot be used as asked. The message is a
// single line naming the file, the tensor or key, and what was expected versus what was found.
#pragma once
#include <stdexcept>
#include <string>

namespace ztvm {

struct ModelError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace ztvm
