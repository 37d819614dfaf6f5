#include "engine/data/text/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <dlfcn.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <unordered_map>

#include "engine/core/error.h"
#include "engine/io/base64.h"
#include "engine/data/csv_reader.h"

namespace kiln::data {

namespace {

// Line breaks, tabs and other ASCII controls as spaces: SentencePiece reads one sentence per line.
std::string one_line(std::string_view text) {
  std::string s(text);
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return s;
}

// Debian 12's libsentencepiece0 carries its own protobuf-lite (3.14) and exports its symbols. In a
// process that has also loaded the system's libprotobuf (3.21; libkiln_onnx links it), the dynamic
// linker binds SentencePiece's protobuf calls to that library, whose version check then aborts
// (GOOGLE_PROTOBUF_VERIFY_VERSION). Say so before calling into SentencePiece.
void require_own_protobuf() {
  void* sym = dlsym(RTLD_DEFAULT, "_ZN6google8protobuf8internal13VerifyVersionEiiPKc");
  Dl_info info{};
  if (sym && dladdr(sym, &info) && info.dli_fname && !std::strstr(info.dli_fname, "sentencepiece"))
    throw ValueError(std::string("the sentencepiece tokenizer cannot run in this process: Debian 12's libsentencepiece "
                                 "bundles protobuf 3.14, and this process has also loaded ") +
                     info.dli_fname +
                     " (ONNX support links it), which takes over SentencePiece's protobuf calls; use --tokenizer "
                     "word or char here");
}

class Sentences : public sentencepiece::SentenceIterator {
 public:
  explicit Sentences(const std::vector<std::string_view>& texts) : texts_(texts) { load(); }
  bool done() const override { return i_ >= texts_.size(); }
  void Next() override {
    ++i_;
    load();
  }
  const std::string& value() const override { return current_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  void load() {
    if (i_ < texts_.size()) current_ = one_line(texts_[i_]);
  }
  const std::vector<std::string_view>& texts_;
  size_t i_ = 0;
  std::string current_;
};

class SentencePieceTokenizer : public Tokenizer {
 public:
  SentencePieceTokenizer(std::string proto, std::string model_type, const std::string& source)
      : proto_(std::move(proto)), model_type_(std::move(model_type)) {
    require_own_protobuf();
    const auto status = sp_.LoadFromSerializedProto(proto_);
    KILN_CHECK(status.ok(), IoError, source, ": the SentencePiece model does not load (", status.ToString(), ")");
    KILN_CHECK(sp_.pad_id() == kPadId && sp_.unk_id() == kUnkId, IoError, source,
               ": the SentencePiece model's pad/unk ids are ", sp_.pad_id(), "/", sp_.unk_id(), ", not 0/1");
  }
  std::string kind() const override { return "sentencepiece"; }
  int64_t vocab_size() const override { return sp_.GetPieceSize(); }
  std::vector<int64_t> encode(std::string_view text) const override {
    const size_t bad = invalid_utf8_offset(text);
    KILN_CHECK(bad == std::string_view::npos, IoError, "invalid UTF-8 at byte ", bad);
    const std::vector<int> ids = sp_.EncodeAsIds(one_line(text));
    return std::vector<int64_t>(ids.begin(), ids.end());
  }
  std::string piece(int64_t id) const override {
    KILN_CHECK(id >= 0 && id < vocab_size(), IndexError, "token id ", id, " is outside the vocabulary [0, ",
               vocab_size(), ")");
    return sp_.IdToPiece(static_cast<int>(id));
  }
  std::string to_json() const override {
    nlohmann::json j = {{"kiln_tokenizer", 1},
                        {"kind", "sentencepiece"},
                        {"model_type", model_type_},
                        {"vocab_size", vocab_size()},
                        {"model", io::base64_encode(proto_)}};
    return j.dump(1);
  }

 private:
  std::string proto_, model_type_;
  sentencepiece::SentencePieceProcessor sp_;
};

}  // namespace

std::unique_ptr<Tokenizer> train_sentencepiece(const std::vector<std::string_view>& texts,
                                               const TokenizerOptions& o) {
  require_own_protobuf();
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", o.model_type},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"hard_vocab_limit", "false"},  // fewer pieces than asked when the texts hold fewer
      {"pad_id", "0"},
      {"unk_id", "1"},
      {"bos_id", "-1"},
      {"eos_id", "-1"},
      {"character_coverage", "0.9995"},  // SentencePiece's default
      {"max_sentence_length", "100000"},  // bytes; mails are long "sentences"
      {"num_threads", "2"},
      {"minloglevel", "2"}};  // no progress log on stderr
  Sentences sentences(texts);
  std::string proto;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &sentences, &proto);
  KILN_CHECK(status.ok(), ValueError, "SentencePiece training (", o.model_type, ", vocabulary ", o.vocab_size,
             ") failed: ", status.ToString());
  return std::make_unique<SentencePieceTokenizer>(std::move(proto), o.model_type, "the trained SentencePiece model");
}

std::unique_ptr<Tokenizer> sentencepiece_from_proto(const std::string& proto, const std::string& model_type,
                                                    const std::string& source) {
  return std::make_unique<SentencePieceTokenizer>(proto, model_type, source);
}

}  // namespace kiln::data
