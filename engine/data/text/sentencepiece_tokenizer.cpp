#include "engine/data/text/sentencepiece_tokenizer.h"

#include <dlfcn.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "engine/core/error.h"
#include "engine/data/csv_reader.h"
#include "engine/data/text/sentencepiece_plugin.h"
#include "engine/io/base64.h"

namespace kiln::data {

namespace {

// Line breaks, tabs and other ASCII controls as spaces: SentencePiece reads one sentence per line.
std::string one_line(std::string_view text) {
  std::string s(text);
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return s;
}

// The plugin's functions (sentencepiece_plugin.h), loaded once per process.
struct Plugin {
  decltype(&kiln_sp_abi_version) abi_version;
  decltype(&kiln_sp_train) train;
  decltype(&kiln_sp_load) load;
  decltype(&kiln_sp_unload) unload;
  decltype(&kiln_sp_piece_size) piece_size;
  decltype(&kiln_sp_pad_id) pad_id;
  decltype(&kiln_sp_unk_id) unk_id;
  decltype(&kiln_sp_encode) encode;
  decltype(&kiln_sp_id_to_piece) id_to_piece;
  decltype(&kiln_sp_free) free;
};

// KILN_SENTENCEPIECE_PLUGIN, else kiln/libkiln_sentencepiece.so in the folder of libkiln, the
// plugin folder of the backends too (registry.cpp's backend_plugin_dir): the build's lib/kiln,
// the install's libdir/kiln.
std::string plugin_path() {
  if (const char* env = std::getenv("KILN_SENTENCEPIECE_PLUGIN"); env && *env) return env;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&plugin_path), &info) && info.dli_fname)
    return (std::filesystem::path(info.dli_fname).parent_path() / "kiln" / "libkiln_sentencepiece.so").string();
  return "kiln/libkiln_sentencepiece.so";
}

const Plugin& plugin() {
  static std::once_flag once;
  static Plugin p{};
  static std::string failure;
  std::call_once(once, [] {
    const std::string path = plugin_path();
    // RTLD_DEEPBIND: the plugin and libsentencepiece bind to their own dependencies first, so that
    // SentencePiece's bundled protobuf is used even when the process has loaded the system's.
    // AddressSanitizer refuses RTLD_DEEPBIND (https://github.com/google/sanitizers/issues/611):
    // an ASan build loads the plugin without it, which is enough in a process that has not loaded
    // the system protobuf (the engine tests, all that CI runs under ASan) but not in `kiln`.
#if defined(__SANITIZE_ADDRESS__)
    constexpr int kDeepBind = 0;
#else
    constexpr int kDeepBind = RTLD_DEEPBIND;
#endif
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | kDeepBind);
    if (!h) {
      const char* e = dlerror();
      failure = "the sentencepiece tokenizer needs its plugin " + path + ", which does not load (" +
                (e ? e : "unknown error") +
                "); reinstall Kiln (the plugin is installed in libkiln's folder kiln/), or use --tokenizer word or char";
      return;
    }
    auto sym = [&](const char* name) {
      void* s = dlsym(h, name);
      if (!s && failure.empty()) failure = path + " is not a Kiln SentencePiece plugin (it lacks " + name + ")";
      return s;
    };
    p.abi_version = reinterpret_cast<decltype(p.abi_version)>(sym("kiln_sp_abi_version"));
    p.train = reinterpret_cast<decltype(p.train)>(sym("kiln_sp_train"));
    p.load = reinterpret_cast<decltype(p.load)>(sym("kiln_sp_load"));
    p.unload = reinterpret_cast<decltype(p.unload)>(sym("kiln_sp_unload"));
    p.piece_size = reinterpret_cast<decltype(p.piece_size)>(sym("kiln_sp_piece_size"));
    p.pad_id = reinterpret_cast<decltype(p.pad_id)>(sym("kiln_sp_pad_id"));
    p.unk_id = reinterpret_cast<decltype(p.unk_id)>(sym("kiln_sp_unk_id"));
    p.encode = reinterpret_cast<decltype(p.encode)>(sym("kiln_sp_encode"));
    p.id_to_piece = reinterpret_cast<decltype(p.id_to_piece)>(sym("kiln_sp_id_to_piece"));
    p.free = reinterpret_cast<decltype(p.free)>(sym("kiln_sp_free"));
    if (failure.empty() && p.abi_version() != KILN_SP_ABI_VERSION)
      failure = path + " is a SentencePiece plugin of ABI version " + std::to_string(p.abi_version()) + ", not " +
                std::to_string(KILN_SP_ABI_VERSION) + " (a plugin of another Kiln version)";
  });
  KILN_CHECK(failure.empty(), ValueError, failure);
  return p;
}

// A message the plugin returned, freed.
std::string take(const Plugin& p, char* s) {
  std::string out = s ? s : "unknown error";
  p.free(s);
  return out;
}

class SentencePieceTokenizer : public Tokenizer {
 public:
  SentencePieceTokenizer(std::string proto, std::string model_type, const std::string& source)
      : p_(plugin()), proto_(std::move(proto)), model_type_(std::move(model_type)) {
    char* error = nullptr;
    sp_ = p_.load(proto_.data(), proto_.size(), &error);
    KILN_CHECK(sp_ != nullptr, IoError, source, ": the SentencePiece model does not load (", take(p_, error), ")");
    if (p_.pad_id(sp_) != kPadId || p_.unk_id(sp_) != kUnkId) {
      const int pad = p_.pad_id(sp_), unk = p_.unk_id(sp_);
      p_.unload(sp_);
      throw IoError(source + ": the SentencePiece model's pad/unk ids are " + std::to_string(pad) + "/" +
                    std::to_string(unk) + ", not 0/1");
    }
  }
  ~SentencePieceTokenizer() override { p_.unload(sp_); }
  SentencePieceTokenizer(const SentencePieceTokenizer&) = delete;
  SentencePieceTokenizer& operator=(const SentencePieceTokenizer&) = delete;
  std::string kind() const override { return "sentencepiece"; }
  int64_t vocab_size() const override { return p_.piece_size(sp_); }
  std::vector<int64_t> encode(std::string_view text) const override {
    const size_t bad = invalid_utf8_offset(text);
    KILN_CHECK(bad == std::string_view::npos, IoError, "invalid UTF-8 at byte ", bad);
    const std::string line = one_line(text);
    int32_t* ids = nullptr;
    size_t n = 0;
    char* error = nullptr;
    KILN_CHECK(p_.encode(sp_, line.data(), line.size(), &ids, &n, &error) == 0, ValueError,
               "SentencePiece encoding failed: ", take(p_, error));
    std::vector<int64_t> out(ids, ids + n);
    p_.free(ids);
    return out;
  }
  std::string piece(int64_t id) const override {
    KILN_CHECK(id >= 0 && id < vocab_size(), IndexError, "token id ", id, " is outside the vocabulary [0, ",
               vocab_size(), ")");
    return take(p_, p_.id_to_piece(sp_, static_cast<int>(id)));
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
  const Plugin& p_;
  std::string proto_, model_type_;
  void* sp_ = nullptr;
};

}  // namespace

std::unique_ptr<Tokenizer> train_sentencepiece(const std::vector<std::string_view>& texts,
                                               const TokenizerOptions& o) {
  const Plugin& p = plugin();
  std::vector<std::string> lines;
  lines.reserve(texts.size());
  for (std::string_view t : texts) lines.push_back(one_line(t));
  std::vector<const char*> ptrs;
  std::vector<size_t> lengths;
  for (const std::string& l : lines) ptrs.push_back(l.data()), lengths.push_back(l.size());
  char* proto = nullptr;
  size_t proto_len = 0;
  char* error = nullptr;
  const int rc = p.train(ptrs.data(), lengths.data(), ptrs.size(), o.model_type.c_str(), o.vocab_size, &proto,
                         &proto_len, &error);
  KILN_CHECK(rc == 0, ValueError, "SentencePiece training (", o.model_type, ", vocabulary ", o.vocab_size,
             ") failed: ", take(p, error));
  std::string model(proto, proto_len);
  p.free(proto);
  return std::make_unique<SentencePieceTokenizer>(std::move(model), o.model_type, "the trained SentencePiece model");
}

std::unique_ptr<Tokenizer> sentencepiece_from_proto(const std::string& proto, const std::string& model_type,
                                                    const std::string& source) {
  return std::make_unique<SentencePieceTokenizer>(proto, model_type, source);
}

}  // namespace kiln::data
