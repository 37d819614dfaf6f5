// A count with its noun for messages: "1 file", "3 files", "1 entry" / "2 entries".
#pragma once
#include <string>

namespace kiln {

// `n` and `singular`, or `plural` (default: `singular` + "s") unless n is 1.
inline std::string count_of(long long n, const std::string& singular, const std::string& plural = "") {
  return std::to_string(n) + " " + (n == 1 ? singular : plural.empty() ? singular + "s" : plural);
}

}  // namespace kiln
