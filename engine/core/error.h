// Exceptions thrown by the engine. Every error carries its context (op name,
// shapes, file path) in the message; the CLI and Studio print what() as is.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace kiln {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct ShapeError : Error { using Error::Error; };    // shapes do not fit an op
struct DTypeError : Error { using Error::Error; };    // dtype not supported / mismatched
struct DeviceError : Error { using Error::Error; };   // unknown device, mixed devices, driver
struct IoError : Error { using Error::Error; };       // file missing, corrupt or malformed
struct ValueError : Error { using Error::Error; };    // bad argument value
struct IndexError : Error { using Error::Error; };    // index out of range

namespace detail {
template <class... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace kiln

// KILN_CHECK(cond, ErrorType, message parts...) throws ErrorType(message) when !cond.
#define KILN_CHECK(cond, Err, ...)                                  \
  do {                                                              \
    if (!(cond)) throw ::kiln::Err(::kiln::detail::str_cat(__VA_ARGS__)); \
  } while (0)
