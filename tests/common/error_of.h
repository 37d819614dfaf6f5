// The message of the kiln::Error that f() throws, or "(no error)", for tests that check what an
// error says (EXPECT_NE(error_of([&] { ... }).find("layer 'fc1'"), npos)).
#pragma once
#include <string>

#include "engine/core/error.h"

namespace kiln::test {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace kiln::test
