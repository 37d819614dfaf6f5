// Text datasets as the data of `kiln train --dataset text:DIR|FILE`, `kiln eval` and `kiln predict`
// (engine/data/text): loading, the stratified split by seed, the tokenizer fitted on the training
// split only, the built-in text model, and the run files that make inference tokenize the same way:
//   text.json       how the data was read and split (TextConfig), the classes, the max length, and
//                   the fingerprint (FNV-1a 64 of its JSON) of the tokenizer the model was trained with
//   tokenizer.json  that tokenizer (tokenizer.h's to_json), named by text.json
// model.safetensors names text.json by its metadata key "kiln.text". A tokenizer.json whose
// fingerprint is not text.json's (a vocabulary copied from another run) is an error naming both.
// The model reads token ids i64 [N, max_length] and derives the padding mask from them
// (engine/graph/graph_module.h), so a text model is a graph with an i64 Input of shape [max_length].
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/cli/text_data.h"
#include "engine/core/device.h"
#include "engine/data/dataset_source.h"
#include "engine/data/text/text_dataset.h"
#include "engine/graph/graph.h"
#include "engine/nn/module.h"

namespace kiln::cli {

inline constexpr const char* kRunTextFile = "text.json";            // in the run directory
inline constexpr const char* kRunTokenizerFile = "tokenizer.json";  // in the run directory
inline constexpr const char* kTextMetadataKey = "kiln.text";        // model.safetensors metadata naming text.json

// The built-in text models of `kiln train --model` (the default for a text dataset: text-bow):
//   text-bow  Input ids [T] -> Embedding(vocab, 64) -> SequencePool(mean over the tokens) -> Linear(64, classes):
//             an averaged bag of embeddings (fastText's classifier, Joulin et al. 2017, without n-grams).
//   text-lstm  Input ids [T] -> Embedding(vocab, 64) -> LSTM(64, 64) -> SequencePool(mean over the tokens) ->
//             Linear(64, classes); the LSTM skips padding (graph_module.h's mask).
//   text-transformer  Input ids [T] -> Embedding(vocab, 64) -> PositionalEmbedding(learned, T) ->
//             2 x TransformerEncoderLayer(nhead 4, dim_feedforward 128, dropout 0.1, norm_first) ->
//             SequencePool(mean) -> Linear(64, classes); padded tokens are masked out as keys.
// TextModelOptions change the width (64) and add dropout.
const std::vector<std::string>& text_model_names();

// The graph of built-in text model `name` (ValueError for another name, or an embedding_dim
// that is not positive or, for text-transformer, not a multiple of 4).
graph::Graph text_model_graph(const std::string& name, int64_t max_length, int64_t vocab_size, int64_t classes,
                              const TextModelOptions& options = {});

struct TextData {
  TextConfig config;
  std::shared_ptr<const data::TextIndex> index;
  std::shared_ptr<const data::Tokenizer> tokenizer;
  std::shared_ptr<const data::TextDataset> train, test;  // train: null when loaded for a run
  std::string fingerprint;                               // of tokenizer->to_json()
};

// The TextData of a text dataset data::open_dataset opened (read, split stratified by
// config.test_fraction and config.seed, the tokenizer fitted on the training split) with `config`.
TextData text_data(const TextConfig& config, const data::OpenedText& opened);

// What text.json holds.
struct TextRun {
  TextConfig config;
  std::vector<std::string> classes;
  std::string tokenizer_file;  // relative to the run directory
  std::string fingerprint;
};
std::string run_text_json(const TextData& data);
// Reads a run's text.json; IoError naming path when it is missing or malformed.
TextRun load_run_text(const std::string& path);
// The tokenizer of a run (run_dir / run.tokenizer_file). IoError when it is missing or unreadable;
// ValueError naming the file when its fingerprint is not the run's (another run's vocabulary).
std::shared_ptr<const data::Tokenizer> load_run_tokenizer(const std::string& run_dir, const TextRun& run);
// The test split of the run's data set, tokenized with the run's tokenizer (the same samples as at
// training when the data did not change). ValueError when the data set's classes are not the run's.
TextData load_text_for_run(const std::string& run_dir, const TextRun& run);

// A misclassified test text.
struct TextMistake {
  std::string origin;  // file, or FILE:LINE
  std::string label, predicted;
  double probability = 0;  // of the predicted class
  std::string text;        // the first 120 code points on one line
  std::vector<std::string> tokens;  // the first 32 pieces the model saw
};
// The first `limit` misclassified samples of `test` (in test order) by `model` on `device`.
std::vector<TextMistake> text_mistakes(nn::Module& model, const data::TextDataset& test,
                                       const std::vector<std::string>& classes, Device device, int64_t limit);
std::string format_mistakes(const std::vector<TextMistake>& mistakes);  // one block per text, for the terminal
nlohmann::ordered_json mistakes_json(const std::vector<TextMistake>& mistakes);

// summary.json's "data" entry of a text run.
nlohmann::ordered_json text_summary(const TextData& data);

// The run's tokenizer applied to `path` for `kiln predict`: a .txt file; every .txt file of a
// folder and its subfolders (sorted by path, hidden entries left out); or each row of a CSV/TSV
// table (*.csv, *.tsv, optionally .gz) or JSON-lines file (*.jsonl, *.ndjson), read from the run's
// text and label columns (text_rows.h). Labels: a row's label column when the file has one; for
// files, the first-level class folder an input is in when all are named after one of `classes`;
// else "". An input that is not usable text (an empty, binary or non-UTF-8 file or row, a JSON
// line without the text key) gets its reason in `errors` and an all-padding row. A text longer
// than the run's max length is truncated to its first max_length tokens, as at training, and
// counted in `truncated`. IoError naming the path when it is missing, a folder holds no .txt file,
// or a table lacks the run's text column.
struct TextInput {
  Tensor x;  // i64 [N, max_length]
  std::vector<std::string> inputs, labels, errors;
  int64_t truncated = 0;  // usable inputs with more than max_length tokens
  bool rows = false;      // read from a table or JSON-lines file (inputs are FILE:LINE)
};
TextInput read_text_input(const std::string& path, const TextRun& run, const data::Tokenizer& tokenizer);

}  // namespace kiln::cli
