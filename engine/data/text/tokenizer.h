// Tokenizers of text datasets: text (UTF-8) -> token ids, with a vocabulary fitted on the training
// split only and saved as JSON beside the model so that inference tokenizes the same way.
//   word           words split on Unicode whitespace and punctuation (word_pieces below), lowercase
//                  option; vocabulary: the most frequent words with at least min_frequency
//                  occurrences, at most vocab_size entries with the two specials.
//   char           one token per code point (lowercase option), vocabulary as for word.
//   sentencepiece  subword units of a SentencePiece model (Kudo & Richardson 2018; unigram or BPE)
//                  trained in memory on the training texts; needs KILN_SENTENCEPIECE
//                  (libsentencepiece-dev). The model's serialized proto is kept in the JSON.
//                  SentencePiece runs in the plugin libkiln_sentencepiece.so, loaded at first
//                  use (sentencepiece_plugin.h: Debian 12's libsentencepiece bundles a protobuf
//                  that clashes with the system's, which ONNX support loads); a missing plugin
//                  is a ValueError saying where it was looked for.
// Every kind reserves id 0 for <pad> and id 1 for <unk> (torchtext's and Keras' convention).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::data {

struct TokenizerOptions {
  std::string kind = "word";           // word | char | sentencepiece
  bool lowercase = true;               // word, char: Unicode simple lowercase (utf8.h to_lower)
  int64_t min_frequency = 1;           // word, char: fewer occurrences in the training texts -> <unk>
  int64_t vocab_size = 20000;          // most entries, <pad> and <unk> included (>= 3); sentencepiece:
                                       // its target size (fewer when the texts have fewer pieces)
  std::string model_type = "unigram";  // sentencepiece: unigram | bpe
};

class Tokenizer {
 public:
  static constexpr int64_t kPadId = 0;
  static constexpr int64_t kUnkId = 1;
  virtual ~Tokenizer() = default;
  virtual std::string kind() const = 0;       // "word", "char" or "sentencepiece"
  virtual int64_t vocab_size() const = 0;     // ids are in [0, vocab_size())
  int64_t pad_id() const { return kPadId; }
  int64_t unk_id() const { return kUnkId; }
  // The ids of `text`, unknown pieces as unk_id(). IoError "invalid UTF-8 at byte N (0xNN)" for
  // text that is not UTF-8.
  virtual std::vector<int64_t> encode(std::string_view text) const = 0;
  // The piece of `id` ("<pad>", "<unk>", a word, a character, a subword). IndexError outside the vocabulary.
  virtual std::string piece(int64_t id) const = 0;
  // The tokenizer as a JSON document (see tokenizer_from_json).
  virtual std::string to_json() const = 0;
};

// Fits a tokenizer of options.kind on `texts` (the training split's). ValueError for an unknown
// kind or model type, vocab_size < 3, min_frequency < 1, no texts; sentencepiece: ValueError when
// Kiln was built without it, and SentencePiece's own training errors.
std::unique_ptr<Tokenizer> train_tokenizer(const std::vector<std::string_view>& texts, const TokenizerOptions& options);

// Reads to_json's document: {"kiln_tokenizer": 1, "kind": ..., ...}. IoError naming `source` for
// text that is not JSON or not a Kiln tokenizer, an unknown kind or version, a vocabulary whose
// first entries are not <pad> and <unk> or that repeats an entry, a SentencePiece model that does
// not load or whose pad/unk ids are not 0/1.
std::unique_ptr<Tokenizer> tokenizer_from_json(std::string_view json, const std::string& source);
void save_tokenizer(const Tokenizer& tokenizer, const std::string& path);  // IoError when it cannot write
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path);        // IoError: missing, then as above

// The word tokenizer's pieces of `text`: runs of code points that are neither separators
// (Unicode Z*, controls) nor punctuation (ASCII punctuation and Unicode P*), each punctuation
// code point a piece of its own. Letters of any script, digits, marks and symbols (S*: $ is ASCII
// punctuation, but €, © and emoji are not) stay inside words; scripts written without spaces
// (Chinese, Japanese, Thai) give one piece per run. IoError for invalid UTF-8.
std::vector<std::string> word_pieces(std::string_view text, bool lowercase);
// The char tokenizer's pieces: each code point (lowercased when asked) as UTF-8.
std::vector<std::string> char_pieces(std::string_view text, bool lowercase);

// Whether this build has the SentencePiece tokenizer (KILN_SENTENCEPIECE).
bool sentencepiece_available();

}  // namespace kiln::data
