#include "engine/data/text/tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "engine/core/error.h"
#include "engine/io/base64.h"
#include "engine/data/text/utf8.h"
#ifdef KILN_HAVE_SENTENCEPIECE
#include "engine/data/text/sentencepiece_tokenizer.h"
#endif

namespace kiln::data {

namespace {

constexpr const char* kPad = "<pad>";
constexpr const char* kUnk = "<unk>";

std::vector<std::string> pieces_of(const std::string& kind, std::string_view text, bool lowercase) {
  return kind == "word" ? word_pieces(text, lowercase) : char_pieces(text, lowercase);
}

// word and char: a vocabulary of pieces, <pad> and <unk> first.
class VocabTokenizer : public Tokenizer {
 public:
  VocabTokenizer(std::string kind, bool lowercase, int64_t min_frequency, std::vector<std::string> vocab)
      : kind_(std::move(kind)), lowercase_(lowercase), min_frequency_(min_frequency), vocab_(std::move(vocab)) {
    for (size_t i = 0; i < vocab_.size(); ++i) ids_.emplace(vocab_[i], static_cast<int64_t>(i));
  }
  std::string kind() const override { return kind_; }
  int64_t vocab_size() const override { return static_cast<int64_t>(vocab_.size()); }
  std::vector<int64_t> encode(std::string_view text) const override {
    std::vector<int64_t> ids;
    for (const std::string& p : pieces_of(kind_, text, lowercase_)) {
      auto it = ids_.find(p);
      ids.push_back(it == ids_.end() ? kUnkId : it->second);
    }
    return ids;
  }
  std::string piece(int64_t id) const override {
    KILN_CHECK(id >= 0 && id < vocab_size(), IndexError, "token id ", id, " is outside the vocabulary [0, ",
               vocab_size(), ")");
    return vocab_[static_cast<size_t>(id)];
  }
  std::string to_json() const override {
    nlohmann::json j = {{"kiln_tokenizer", 1},     {"kind", kind_},   {"lowercase", lowercase_},
                        {"min_frequency", min_frequency_}, {"vocab", vocab_}};
    return j.dump(1);
  }

 private:
  std::string kind_;
  bool lowercase_;
  int64_t min_frequency_;
  std::vector<std::string> vocab_;
  std::unordered_map<std::string, int64_t> ids_;
};

std::unique_ptr<Tokenizer> train_vocab(const std::vector<std::string_view>& texts, const TokenizerOptions& o) {
  std::unordered_map<std::string, int64_t> counts;
  for (std::string_view t : texts)
    for (std::string& p : pieces_of(o.kind, t, o.lowercase)) ++counts[std::move(p)];
  std::vector<std::pair<std::string, int64_t>> order(counts.begin(), counts.end());
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<std::string> vocab = {kPad, kUnk};
  for (auto& [p, n] : order) {
    if (static_cast<int64_t>(vocab.size()) >= o.vocab_size || n < o.min_frequency) break;
    if (p == kPad || p == kUnk) continue;  // a text's literal "<pad>" is split by word_pieces anyway
    vocab.push_back(p);
  }
  return std::make_unique<VocabTokenizer>(o.kind, o.lowercase, o.min_frequency, std::move(vocab));
}

#ifndef KILN_HAVE_SENTENCEPIECE
[[noreturn]] void no_sentencepiece() {
  throw ValueError(
      "the sentencepiece tokenizer is not in this build of Kiln (KILN_SENTENCEPIECE=OFF): install "
      "libsentencepiece-dev (installer/quickstart.sh does) and configure again, or use --tokenizer word|char");
}
#endif

}  // namespace

bool sentencepiece_available() {
#ifdef KILN_HAVE_SENTENCEPIECE
  return true;
#else
  return false;
#endif
}

std::vector<std::string> word_pieces(std::string_view text, bool lowercase) {
  const std::u32string cps = decode_utf8(text, "text");
  std::vector<std::string> out;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) out.push_back(std::move(word));
    word.clear();
  };
  for (char32_t cp : cps) {
    if (is_separator(cp)) {
      flush();
    } else if (is_punctuation(cp)) {
      flush();
      append_utf8(word, cp);
      flush();
    } else {
      append_utf8(word, lowercase ? to_lower(cp) : cp);
    }
  }
  flush();
  return out;
}

std::vector<std::string> char_pieces(std::string_view text, bool lowercase) {
  const std::u32string cps = decode_utf8(text, "text");
  std::vector<std::string> out;
  out.reserve(cps.size());
  for (char32_t cp : cps) {
    std::string s;
    append_utf8(s, lowercase ? to_lower(cp) : cp);
    out.push_back(std::move(s));
  }
  return out;
}

std::unique_ptr<Tokenizer> train_tokenizer(const std::vector<std::string_view>& texts, const TokenizerOptions& o) {
  KILN_CHECK(o.kind == "word" || o.kind == "char" || o.kind == "sentencepiece", ValueError, "unknown tokenizer '",
             o.kind, "' (known: word, char, sentencepiece)");
  KILN_CHECK(o.vocab_size >= 3, ValueError, "vocabulary size ", o.vocab_size, " is below 3 (<pad>, <unk> and a piece)");
  KILN_CHECK(o.min_frequency >= 1, ValueError, "min frequency ", o.min_frequency, " is below 1");
  KILN_CHECK(!texts.empty(), ValueError, "no training texts to fit the ", o.kind, " tokenizer on");
  if (o.kind != "sentencepiece") return train_vocab(texts, o);
  KILN_CHECK(o.model_type == "unigram" || o.model_type == "bpe", ValueError, "unknown SentencePiece model type '",
             o.model_type, "' (known: unigram, bpe)");
#ifdef KILN_HAVE_SENTENCEPIECE
  return train_sentencepiece(texts, o);
#else
  no_sentencepiece();
#endif
}

std::unique_ptr<Tokenizer> tokenizer_from_json(std::string_view text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw IoError(source + ": not JSON (" + e.what() + ")");
  }
  KILN_CHECK(j.is_object() && j.contains("kiln_tokenizer"), IoError, source,
             ": not a Kiln tokenizer (no \"kiln_tokenizer\" key)");
  try {
    KILN_CHECK(j.at("kiln_tokenizer") == 1, IoError, source, ": tokenizer format ", j.at("kiln_tokenizer").dump(),
               " is not 1 (written by a newer Kiln?)");
    const std::string kind = j.at("kind").get<std::string>();
    if (kind == "sentencepiece") {
#ifdef KILN_HAVE_SENTENCEPIECE
      std::string proto;
      try {
        proto = io::base64_decode(j.at("model").get<std::string>());
      } catch (const ValueError& e) {
        throw IoError(source + ": the SentencePiece model: " + e.what());
      }
      return sentencepiece_from_proto(proto, j.at("model_type").get<std::string>(), source);
#else
      no_sentencepiece();
#endif
    }
    KILN_CHECK(kind == "word" || kind == "char", IoError, source, ": unknown tokenizer kind '", kind, "'");
    auto vocab = j.at("vocab").get<std::vector<std::string>>();
    KILN_CHECK(vocab.size() >= 2 && vocab[0] == kPad && vocab[1] == kUnk, IoError, source,
               ": the vocabulary does not start with <pad>, <unk>");
    std::unordered_map<std::string, size_t> seen;
    for (size_t i = 0; i < vocab.size(); ++i) {
      auto [it, inserted] = seen.emplace(vocab[i], i);
      KILN_CHECK(inserted, IoError, source, ": vocabulary entry ", i, " ('", vocab[i], "') repeats entry ", it->second);
    }
    return std::make_unique<VocabTokenizer>(kind, j.at("lowercase").get<bool>(), j.at("min_frequency").get<int64_t>(),
                                            std::move(vocab));
  } catch (const nlohmann::json::exception& e) {
    throw IoError(source + ": malformed tokenizer (" + e.what() + ")");
  }
}

void save_tokenizer(const Tokenizer& tokenizer, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  KILN_CHECK(out, IoError, path, ": cannot write");
  out << tokenizer.to_json() << "\n";
  out.close();
  KILN_CHECK(out, IoError, path, ": write error");
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in, IoError, path, ": cannot open (no such file?)");
  std::stringstream ss;
  ss << in.rdbuf();
  return tokenizer_from_json(ss.str(), path);
}

}  // namespace kiln::data
