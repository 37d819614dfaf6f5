// Base64 (RFC 4648, section 4: A-Z a-z 0-9 + /, '=' padding) for binary data kept in JSON:
// the weights of graph JSON (engine/graph/json_state) and the SentencePiece model of a saved
// tokenizer (engine/data/text).
#pragma once
#include <string>
#include <string_view>

namespace kiln::io {

std::string base64_encode(std::string_view bytes);
// ValueError "data is not base64: ..." on a character outside the alphabet, padding before
// the end or a length that is not a multiple of 4.
std::string base64_decode(std::string_view text);

}  // namespace kiln::io
