// libFuzzer target for the text readers and tokenizers (not built by CMake or run by CI; see
// run_text.sh): the first byte picks the path, the rest is the input. 0: JSON lines
// (parse_jsonl); 1: a CSV/TSV table (parse_csv, text_index_from_table on columns "text" and
// "label"); 2: the word and char tokenizers fitted on the input's lines, then encoding it and a
// JSON round trip; 3: a tokenizer file (tokenizer_from_json). A kiln::Error is the expected answer
// to bad input; anything else escaping, a crash, an ASan report or a hang is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/error.h"
#include "engine/data/text/text_index.h"
#include "engine/data/text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t k = data[0];
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  kiln::data::TextReadOptions o;
  o.deduplicate = (k & 4) != 0;
  try {
    switch (k & 3) {
      case 0:
        (void)kiln::data::parse_jsonl(text, o, "<fuzz input>");
        break;
      case 1: {
        kiln::data::CsvOptions csv;
        csv.delimiter = (k & 8) ? '\t' : 0;
        (void)kiln::data::text_index_from_table(kiln::data::parse_csv(text, csv, "<fuzz input>"), o);
        break;
      }
      case 2: {
        std::vector<std::string_view> lines;
        for (size_t start = 0; start <= text.size();) {
          size_t end = text.find('\n', start);
          if (end == std::string::npos) end = text.size();
          lines.push_back(std::string_view(text).substr(start, end - start));
          start = end + 1;
        }
        kiln::data::TokenizerOptions t;
        t.kind = (k & 8) ? "char" : "word";
        t.lowercase = (k & 16) != 0;
        t.vocab_size = 3 + (k >> 5);
        auto tok = kiln::data::train_tokenizer(lines, t);
        const std::vector<int64_t> ids = tok->encode(text);
        for (int64_t id : ids) (void)tok->piece(id);
        auto back = kiln::data::tokenizer_from_json(tok->to_json(), "<round trip>");
        if (back->encode(text) != ids) __builtin_trap();  // the saved tokenizer must encode the same
        break;
      }
      default:
        (void)kiln::data::tokenizer_from_json(text, "<fuzz input>");
        break;
    }
  } catch (const kiln::Error&) {
    // a clear error: the expected outcome for malformed input
  }
  return 0;
}
