// libkiln_sentencepiece.so: SentencePiece behind a C ABI (sentencepiece_plugin.h says why).
// Built as a MODULE library only with KILN_SENTENCEPIECE; the engine loads it at run time.
#include "engine/data/text/sentencepiece_plugin.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

char* copy_out(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p) std::memcpy(p, s.data(), s.size()), p[s.size()] = '\0';
  return p;
}

class Sentences : public sentencepiece::SentenceIterator {
 public:
  Sentences(const char* const* texts, const size_t* lengths, size_t n) : texts_(texts), lengths_(lengths), n_(n) {
    load();
  }
  bool done() const override { return i_ >= n_; }
  void Next() override {
    ++i_;
    load();
  }
  const std::string& value() const override { return current_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  void load() {
    if (i_ < n_) current_.assign(texts_[i_], lengths_[i_]);
  }
  const char* const* texts_;
  const size_t* lengths_;
  size_t n_, i_ = 0;
  std::string current_;
};

const sentencepiece::SentencePieceProcessor& sp(const void* p) {
  return *static_cast<const sentencepiece::SentencePieceProcessor*>(p);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int kiln_sp_abi_version(void) { return KILN_SP_ABI_VERSION; }

__attribute__((visibility("default"))) int kiln_sp_train(const char* const* texts, const size_t* lengths, size_t n,
                                                         const char* model_type, int64_t vocab_size, char** proto,
                                                         size_t* proto_len, char** error) {
  try {
    const std::unordered_map<std::string, std::string> args = {
        {"model_type", model_type},
        {"vocab_size", std::to_string(vocab_size)},
        {"hard_vocab_limit", "false"},  // fewer pieces than asked when the texts hold fewer
        {"pad_id", "0"},
        {"unk_id", "1"},
        {"bos_id", "-1"},
        {"eos_id", "-1"},
        {"character_coverage", "0.9995"},   // SentencePiece's default
        {"max_sentence_length", "100000"},  // bytes; mails are long "sentences"
        {"num_threads", "2"},
        {"minloglevel", "2"}};  // no progress log on stderr
    Sentences sentences(texts, lengths, n);
    std::string out;
    const auto status = sentencepiece::SentencePieceTrainer::Train(args, &sentences, &out);
    if (!status.ok()) {
      *error = copy_out(status.ToString());
      return 1;
    }
    *proto = static_cast<char*>(std::malloc(out.size() ? out.size() : 1));
    std::memcpy(*proto, out.data(), out.size());
    *proto_len = out.size();
    return 0;
  } catch (const std::exception& e) {
    *error = copy_out(e.what());
    return 1;
  }
}

__attribute__((visibility("default"))) void* kiln_sp_load(const char* proto, size_t proto_len, char** error) {
  try {
    auto* p = new sentencepiece::SentencePieceProcessor;
    const auto status = p->LoadFromSerializedProto(std::string_view(proto, proto_len));
    if (!status.ok()) {
      *error = copy_out(status.ToString());
      delete p;
      return nullptr;
    }
    return p;
  } catch (const std::exception& e) {
    *error = copy_out(e.what());
    return nullptr;
  }
}

__attribute__((visibility("default"))) void kiln_sp_unload(void* processor) {
  delete static_cast<sentencepiece::SentencePieceProcessor*>(processor);
}
__attribute__((visibility("default"))) int kiln_sp_piece_size(const void* p) { return sp(p).GetPieceSize(); }
__attribute__((visibility("default"))) int kiln_sp_pad_id(const void* p) { return sp(p).pad_id(); }
__attribute__((visibility("default"))) int kiln_sp_unk_id(const void* p) { return sp(p).unk_id(); }

__attribute__((visibility("default"))) int kiln_sp_encode(const void* p, const char* text, size_t len, int32_t** ids,
                                                          size_t* n, char** error) {
  try {
    std::vector<int> v;
    const auto status = sp(p).Encode(std::string_view(text, len), &v);
    if (!status.ok()) {
      *error = copy_out(status.ToString());
      return 1;
    }
    *ids = static_cast<int32_t*>(std::malloc((v.size() ? v.size() : 1) * sizeof(int32_t)));
    for (size_t i = 0; i < v.size(); ++i) (*ids)[i] = v[i];
    *n = v.size();
    return 0;
  } catch (const std::exception& e) {
    *error = copy_out(e.what());
    return 1;
  }
}

__attribute__((visibility("default"))) char* kiln_sp_id_to_piece(const void* p, int id) {
  if (id < 0 || id >= sp(p).GetPieceSize()) return nullptr;
  return copy_out(sp(p).IdToPiece(id));
}

__attribute__((visibility("default"))) void kiln_sp_free(void* p) { std::free(p); }

}  // extern "C"
