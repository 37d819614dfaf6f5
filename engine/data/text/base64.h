// Base64 (RFC 4648, section 4: A-Z a-z 0-9 + /, '=' padding) for binary data kept in JSON.
#pragma once
#include <string>
#include <string_view>

namespace kiln::data {

std::string base64_encode(std::string_view bytes);
// IoError naming `source` for a character outside the alphabet or a length that is not a multiple of 4.
std::string base64_decode(std::string_view text, const std::string& source);

}  // namespace kiln::data
