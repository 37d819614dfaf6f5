#include "app/cli/text_run.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/cli/run_files.h"
#include "app/cli/text_data.h"
#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"
#include "engine/data/dataloader.h"
#include "engine/data/tabular.h"
#include "engine/data/text/text_rows.h"
#include "engine/data/text/utf8.h"
#include "engine/graph/layout.h"

namespace kiln::cli {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

std::string fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64 (Fowler, Noll, Vo)
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  KILN_CHECK(f, IoError, path, ": cannot read it");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string shown_piece(const std::string& p) {
  return p.find_first_not_of(" \t\r\n") == std::string::npos ? "\u2423" : p;  // a blank piece as U+2423
}

}  // namespace

const std::vector<std::string>& text_model_names() {
  static const std::vector<std::string> n{"text-bow", "text-lstm", "text-transformer"};
  return n;
}

graph::Graph text_model_graph(const std::string& name, int64_t max_length, int64_t vocab_size, int64_t classes,
                              const TextModelOptions& options) {
  KILN_CHECK(std::count(text_model_names().begin(), text_model_names().end(), name) > 0, ValueError,
             "unknown text model '", name, "' (known: text-bow, text-lstm, text-transformer)");
  const int64_t dim = options.embedding_dim;
  KILN_CHECK(dim > 0 && (name != "text-transformer" || dim % 4 == 0), ValueError, name, ": embedding dimension ", dim,
             " must be positive", name == "text-transformer" ? " and a multiple of the 4 attention heads" : "");
  const bool explicit_dropout = options.dropout >= 0;
  KILN_CHECK(options.dropout < 1, ValueError, name, ": dropout ", options.dropout, " must be below 1");
  graph::Graph g;
  g.name = name;
  graph::NodeId prev = g.add_node("Input", "tokens", {{"shape", std::vector<int64_t>{max_length}},
                                                     {"dtype", std::string("i64")},
                                                     {"dim_params", std::string()}});
  auto chain = [&](const std::string& op, const std::string& node, const graph::Attributes& attrs) {
    const graph::NodeId n = g.add_node(op, node, attrs);
    g.connect({prev, 0}, {n, 0});
    prev = n;
  };
  auto dropout = [&](const std::string& node) {
    if (explicit_dropout && options.dropout > 0) chain("Dropout", node, {{"p", options.dropout}});
  };
  chain("Embedding", "embedding", {{"num_embeddings", vocab_size}, {"embedding_dim", dim}});
  if (name == "text-transformer")
    chain("PositionalEmbedding", "positions", {{"mode", std::string("learned")}, {"max_length", max_length}});
  dropout("embedding_dropout");
  if (name == "text-lstm") {
    chain("LSTM", "lstm", {{"hidden_size", dim}});
  } else if (name == "text-transformer") {
    for (int i = 0; i < 2; ++i)
      chain("TransformerEncoderLayer", "encoder" + std::to_string(i),
            {{"nhead", int64_t{4}}, {"dim_feedforward", 2 * dim}, {"dropout", explicit_dropout ? options.dropout : 0.1},
             {"norm_first", true}});
  }
  chain("SequencePool", "pool", {{"mode", std::string("mean")}});
  dropout("dropout");
  chain("Linear", "fc", {{"in_features", dim}, {"out_features", classes}});
  chain("Output", "logits", {});
  graph::auto_layout(g);
  return g;
}

TextData text_data(const TextConfig& config, const data::OpenedText& opened) {
  TextData d;
  d.config = config;
  d.index = opened.index;
  d.tokenizer = opened.tokenizer;
  d.fingerprint = fnv1a(d.tokenizer->to_json());
  d.train = opened.train;
  d.test = opened.test;
  return d;
}

std::string run_text_json(const TextData& d) {
  const TextConfig& c = d.config;
  json j = {{"path", c.path},
            {"text_column", c.read.text_column},
            {"label_column", c.read.label_column},
            {"deduplicate", c.read.deduplicate},
            {"tokenizer", {{"kind", c.tokenizer.kind}, {"lowercase", c.tokenizer.lowercase},
                           {"min_frequency", c.tokenizer.min_frequency}, {"vocab_size", c.tokenizer.vocab_size},
                           {"model_type", c.tokenizer.model_type}}},
            {"max_length", c.max_length},
            {"test_fraction", c.test_fraction},
            {"seed", c.seed},
            {"classes", d.index->classes},
            {"vocab_size", d.tokenizer->vocab_size()},
            {"tokenizer_file", kRunTokenizerFile},
            {"tokenizer_fingerprint", d.fingerprint}};
  return j.dump(2) + "\n";
}

TextRun load_run_text(const std::string& path) {
  KILN_CHECK(fs::exists(path), IoError, path, ": missing (the run's text settings; was the run directory copied whole?)");
  TextRun r;
  try {
    const json j = json::parse(read_all(path));
    r.config.path = j.at("path").get<std::string>();
    r.config.read.text_column = j.at("text_column").get<std::string>();
    r.config.read.label_column = j.at("label_column").get<std::string>();
    r.config.read.deduplicate = j.at("deduplicate").get<bool>();
    const json& t = j.at("tokenizer");
    r.config.tokenizer.kind = t.at("kind").get<std::string>();
    r.config.tokenizer.lowercase = t.at("lowercase").get<bool>();
    r.config.tokenizer.min_frequency = t.at("min_frequency").get<int64_t>();
    r.config.tokenizer.vocab_size = t.at("vocab_size").get<int64_t>();
    r.config.tokenizer.model_type = t.at("model_type").get<std::string>();
    r.config.max_length = j.at("max_length").get<int64_t>();
    r.config.test_fraction = j.at("test_fraction").get<double>();
    r.config.seed = j.at("seed").get<uint64_t>();
    r.classes = j.at("classes").get<std::vector<std::string>>();
    r.tokenizer_file = j.at("tokenizer_file").get<std::string>();
    r.fingerprint = j.at("tokenizer_fingerprint").get<std::string>();
  } catch (const json::exception& e) {
    throw IoError(path + ": not a Kiln text.json (" + e.what() + ")");
  }
  return r;
}

std::shared_ptr<const data::Tokenizer> load_run_tokenizer(const std::string& run_dir, const TextRun& run) {
  const std::string path = (fs::path(run_dir) / run.tokenizer_file).string();
  KILN_CHECK(fs::exists(path), IoError, path, ": missing; the model cannot tokenize text without the vocabulary it "
                                        "was trained with");
  const std::string text = read_all(path);
  const std::string fp = fnv1a(text.size() && text.back() == '\n' ? text.substr(0, text.size() - 1) : text);
  std::shared_ptr<const data::Tokenizer> t = data::tokenizer_from_json(text, path);
  KILN_CHECK(fp == run.fingerprint || fnv1a(t->to_json()) == run.fingerprint, ValueError, path,
             " is not the vocabulary this model was trained with (tokenizer fingerprint ", fnv1a(t->to_json()),
             ", the run's text.json records ", run.fingerprint,
             "); it comes from another run: put back the run's own tokenizer.json");
  return t;
}

TextData load_text_for_run(const std::string& run_dir, const TextRun& run) {
  TextData d;
  d.config = run.config;
  d.tokenizer = load_run_tokenizer(run_dir, run);
  d.fingerprint = run.fingerprint;
  auto index = std::make_shared<data::TextIndex>(data::read_text_dataset(run.config.path, run.config.read));
  KILN_CHECK(index->classes == run.classes, ValueError, run.config.path, ": its classes are not the ones the run "
             "trained on (", index->classes.size(), " now, ", run.classes.size(), " in the run's ", kRunTextFile, ")");
  auto [train, test] = data::stratified_split(index->labels(), run.config.test_fraction, run.config.seed);
  (void)train;
  d.index = index;
  d.test = std::make_shared<data::TextDataset>(index, test, d.tokenizer, run.config.max_length);
  return d;
}

std::vector<TextMistake> text_mistakes(nn::Module& model, const data::TextDataset& test,
                                       const std::vector<std::string>& classes, Device device, int64_t limit) {
  std::vector<TextMistake> out;
  NoGradGuard no_grad;
  model.eval();
  constexpr int64_t kBatch = 256;
  for (int64_t start = 0; start < test.size() && static_cast<int64_t>(out.size()) < limit; start += kBatch) {
    std::vector<int64_t> idx;
    for (int64_t i = start; i < std::min(test.size(), start + kBatch); ++i) idx.push_back(i);
    const data::Batch b = test.get_batch(idx);
    const std::vector<float> p = softmax(model.forward(b.input.to(device)), 1).to(Device()).to_vector<float>();
    const std::vector<int64_t> y = b.target.to_vector<int64_t>();
    const size_t c = classes.size();
    for (size_t r = 0; r < idx.size() && static_cast<int64_t>(out.size()) < limit; ++r) {
      const float* row = p.data() + r * c;
      const size_t pred = static_cast<size_t>(std::max_element(row, row + c) - row);
      if (static_cast<int64_t>(pred) == y[r]) continue;
      const data::TextSample& s =
          test.index().samples[static_cast<size_t>(test.positions()[static_cast<size_t>(idx[r])])];
      TextMistake m{s.origin, classes.at(static_cast<size_t>(y[r])), classes.at(pred), row[pred],
                    data::text_preview(s.text, 120), {}};
      const std::vector<int64_t>& ids = test.ids(idx[r]);
      for (size_t k = 0; k < std::min<size_t>(ids.size(), 32); ++k)
        m.tokens.push_back(shown_piece(test.tokenizer().piece(ids[k])));
      out.push_back(std::move(m));
    }
  }
  return out;
}

std::string format_mistakes(const std::vector<TextMistake>& mistakes) {
  std::ostringstream os;
  for (const TextMistake& m : mistakes) {
    char p[16];
    std::snprintf(p, sizeof p, "%.2f", m.probability);
    os << "  " << m.origin << ": '" << m.label << "' predicted '" << m.predicted << "' (" << p << ")\n    " << m.text
       << "\n    tokens:";
    for (const std::string& t : m.tokens) os << " " << t;
    os << "\n";
  }
  return os.str();
}

json mistakes_json(const std::vector<TextMistake>& mistakes) {
  json a = json::array();
  for (const TextMistake& m : mistakes)
    a.push_back({{"input", m.origin}, {"label", m.label}, {"predicted", m.predicted},
                 {"probability", m.probability}, {"text", m.text}, {"tokens", m.tokens}});
  return a;
}

json text_summary(const TextData& d) {
  json j = {{"kind", "text"},
            {"path", d.config.path},
            {"classes", d.index->classes},
            {"class_counts", d.index->class_counts()},
            {"duplicates_dropped", d.index->duplicates_dropped},
            {"skipped", d.index->skipped.size()},
            {"train_samples", d.train ? d.train->size() : 0},
            {"test_samples", d.test->size()},
            {"split", "stratified, test fraction " + std::to_string(d.config.test_fraction) + ", seed " +
                          std::to_string(d.config.seed)},
            {"tokenizer", d.tokenizer->kind()},
            {"vocab_size", d.tokenizer->vocab_size()},
            {"max_length", d.config.max_length},
            {"truncated_train", d.train ? d.train->truncated() : 0},
            {"truncated_test", d.test->truncated()}};
  return j;
}

namespace {

// Whether a file given to kiln predict is a table or JSON-lines file of texts (one per row).
bool is_text_rows_file(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  if (name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0) name.resize(name.size() - 3);
  const std::string ext = fs::path(name).extension().string();
  return ext == ".csv" || ext == ".tsv" || data::is_jsonl_path(name);
}

}  // namespace

TextInput read_text_input(const std::string& path, const TextRun& run, const data::Tokenizer& tokenizer) {
  std::error_code ec;
  KILN_CHECK(fs::exists(path, ec), IoError, path, ": no such file or folder");
  // Each input: where it is from, its label ("" when unknown), its text, or why it has none.
  std::vector<data::TextRow> items;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> files;
    for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::follow_directory_symlink, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!name.empty() && name[0] == '.') {
        if (it->is_directory(ec)) it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file(ec) && it->path().extension() == ".txt") files.push_back(it->path().string());
    }
    std::sort(files.begin(), files.end());
    KILN_CHECK(!files.empty(), IoError, path, ": no .txt file in it");
    bool all_in_classes = true;
    for (const std::string& f : files) {
      const fs::path rel = fs::path(f).lexically_relative(path);
      const std::string first = std::distance(rel.begin(), rel.end()) > 1 ? rel.begin()->string() : "";
      items.push_back({f, "", first, ""});
      all_in_classes = all_in_classes && std::count(run.classes.begin(), run.classes.end(), first) > 0;
    }
    if (!all_in_classes)
      for (data::TextRow& r : items) r.label.clear();
  } else if (is_text_rows_file(path)) {
    items = data::read_text_rows(path, run.config.read).rows;
  } else {
    items.push_back({path, "", "", ""});
  }
  const bool files = !is_text_rows_file(path) || fs::is_directory(path, ec);
  TextInput in;
  in.rows = !files;
  const int64_t n = static_cast<int64_t>(items.size()), t = run.config.max_length;
  in.x = Tensor::zeros({n, t}, DType::i64);
  int64_t* x = in.x.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    data::TextRow& item = items[static_cast<size_t>(i)];
    std::string error = item.error;
    try {
      if (files) {  // read the .txt file
        std::string bytes = read_all(item.origin);
        if (bytes.rfind("\xEF\xBB\xBF", 0) == 0) bytes.erase(0, 3);  // a byte order mark
        error = data::unusable_text_reason(bytes);
        if (error.empty()) item.text = std::move(bytes);
      }
      if (error.empty()) {
        const std::vector<int64_t> ids = tokenizer.encode(item.text);
        in.truncated += static_cast<int64_t>(ids.size()) > t;
        std::copy(ids.begin(), ids.begin() + std::min<int64_t>(t, static_cast<int64_t>(ids.size())), x + i * t);
      }
    } catch (const Error& e) {
      error = e.what();
    }
    in.inputs.push_back(item.origin);
    in.labels.push_back(item.label);
    in.errors.push_back(error);
  }
  return in;
}

}  // namespace kiln::cli
