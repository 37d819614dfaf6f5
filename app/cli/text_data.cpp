#include "app/cli/text_data.h"

#include <algorithm>
#include <cstdarg>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include "engine/core/error.h"
#include "engine/data/text/utf8.h"

namespace kiln::cli {

namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

std::string percent(int64_t part, int64_t whole) {
  return whole > 0 ? format("%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "-";
}

}  // namespace

bool is_text_dataset(const std::string& dataset) { return dataset.rfind(kTextPrefix, 0) == 0; }

ArgParser& add_text_flags(ArgParser& p) {
  return p
      .flag("tokenizer", "KIND", "word", "text: word (split on whitespace and punctuation), char (code points)\n"
                                         "or sentencepiece (subword units; needs KILN_SENTENCEPIECE)",
            {"word", "char", "sentencepiece"})
      .flag("max-length", "N", "256", "text: tokens per sample; longer texts are truncated, shorter padded")
      .flag("vocab-size", "N", "20000", "text: most vocabulary entries, <pad> and <unk> included (sentencepiece:\n"
                                        "its target size)")
      .flag("min-freq", "N", "1", "text: word/char: pieces seen fewer times in the training split are <unk>")
      .flag("sp-model", "TYPE", "unigram", "text: SentencePiece model type", {"unigram", "bpe"})
      .toggle("no-lowercase", "text: word/char: keep the case (by default text is lowercased)")
      .flag("text-column", "NAME", "text", "text: the text column of a CSV/TSV, or key of a JSON-lines file")
      .flag("label-column", "NAME", "label", "text: the label column of a CSV/TSV, or key of a JSON-lines file")
      .toggle("keep-duplicates", "text: keep identical texts (by default only the first of them is kept,\n"
                                 "before splitting, so that no text is in both train and test)");
}

TextConfig text_config(const Args& args, const std::string& dataset, double test_fraction, uint64_t seed) {
  TextConfig c;
  c.path = dataset.substr(std::string(kTextPrefix).size());
  if (c.path.empty()) args.fail("--dataset text: needs a folder or file, e.g. text:mails/ or text:reviews.csv");
  c.tokenizer.kind = args.str("tokenizer");
  c.tokenizer.vocab_size = args.integer("vocab-size", 3);
  c.tokenizer.min_frequency = args.integer("min-freq", 1);
  c.tokenizer.model_type = args.str("sp-model");
  c.tokenizer.lowercase = !args.given("no-lowercase");
  c.max_length = args.integer("max-length", 1);
  c.read.text_column = args.str("text-column");
  c.read.label_column = args.str("label-column");
  c.read.deduplicate = !args.given("keep-duplicates");
  c.test_fraction = test_fraction;
  c.seed = seed;
  return c;
}

std::string inspect_text(const TextConfig& c, int64_t shown) {
  auto index = std::make_shared<data::TextIndex>(data::read_text_dataset(c.path, c.read));
  const data::TextSplit split = data::split_and_fit(index, c.test_fraction, c.seed, c.tokenizer);
  const data::TextDataset train(index, split.train, split.tokenizer, c.max_length);
  const data::TextDataset test(index, split.test, split.tokenizer, c.max_length);
  std::ostringstream os;
  const int64_t n = static_cast<int64_t>(index->samples.size());
  os << c.path << ": " << n << " samples, " << index->classes.size() << " classes";
  if (c.read.deduplicate)
    os << "; " << index->duplicates_dropped << " duplicate texts dropped ("
       << index->duplicate_conflicts << " of them with another label than the kept one)";
  else
    os << "; duplicates kept (--keep-duplicates)";
  os << "\n  classes:";
  const std::vector<int64_t> counts = index->class_counts();
  for (size_t k = 0; k < counts.size(); ++k)
    os << " '" << index->classes[k] << "' (" << counts[k] << ", " << percent(counts[k], n) << ")";
  os << "\n  majority baseline: " << percent(*std::max_element(counts.begin(), counts.end()), n) << "\n";
  os << "  skipped: " << index->skipped.size() << "; hidden entries not read: " << index->hidden << "\n";
  const size_t listed = std::min<size_t>(index->skipped.size(), 50);
  for (size_t i = 0; i < listed; ++i) os << "    " << index->skipped[i].origin << ": " << index->skipped[i].reason << "\n";
  if (listed < index->skipped.size()) os << "    ... and " << index->skipped.size() - listed << " more\n";
  os << "  split: " << split.train.size() << " train, " << split.test.size() << " test (stratified, test fraction "
     << c.test_fraction << ", seed " << c.seed << ")\n";
  os << "  tokenizer: " << split.tokenizer->kind();
  if (split.tokenizer->kind() == "sentencepiece") os << " (" << c.tokenizer.model_type << ")";
  else os << (c.tokenizer.lowercase ? " (lowercase" : " (case kept") << ", min frequency " << c.tokenizer.min_frequency << ")";
  os << ", fitted on the training split; vocabulary " << split.tokenizer->vocab_size() << " (of at most "
     << c.tokenizer.vocab_size << ", <pad>=0 <unk>=1)\n";
  // token counts before truncation over all samples, in power-of-two bins
  std::vector<int64_t> lengths;
  for (const data::TextDataset* d : {&train, &test})
    for (int64_t i = 0; i < d->size(); ++i) lengths.push_back(d->length(i));
  std::sort(lengths.begin(), lengths.end());
  auto at = [&](double q) { return lengths[static_cast<size_t>(q * static_cast<double>(lengths.size() - 1))]; };
  os << "  tokens per sample: min " << lengths.front() << ", median " << at(0.5) << ", 95th percentile " << at(0.95)
     << ", max " << lengths.back() << "; " << train.truncated() + test.truncated() << " samples ("
     << percent(train.truncated() + test.truncated(), n) << ") longer than --max-length " << c.max_length
     << " are truncated\n  length histogram (tokens):\n";
  std::vector<int64_t> bins;
  for (int64_t len : lengths) {
    size_t b = 0;
    while ((int64_t{1} << b) <= len) ++b;  // bin b holds [2^(b-1), 2^b), bin 0 holds 0
    if (bins.size() <= b) bins.resize(b + 1, 0);
    ++bins[b];
  }
  const int64_t top = *std::max_element(bins.begin(), bins.end());
  size_t first = 0;
  while (bins[first] == 0) ++first;  // the last bin is never empty
  for (size_t b = first; b < bins.size(); ++b) {
    const int64_t lo = b == 0 ? 0 : int64_t{1} << (b - 1), hi = b == 0 ? 0 : (int64_t{1} << b) - 1;
    os << format("    %6lld-%-6lld %6lld ", static_cast<long long>(lo), static_cast<long long>(hi),
                 static_cast<long long>(bins[b]))
       << std::string(static_cast<size_t>(std::ceil(40.0 * static_cast<double>(bins[b]) / static_cast<double>(top))), '#')
       << "\n";
  }
  os << "  unknown tokens (<unk>, after truncation): train " << percent(train.unknown(), train.tokens()) << ", test "
     << percent(test.unknown(), test.tokens()) << "\n";
  os << "  samples (test split, tokens after truncation):\n";
  for (int64_t i = 0; i < std::min<int64_t>(shown, test.size()); ++i) {
    const data::TextSample& s = index->samples[static_cast<size_t>(split.test[static_cast<size_t>(i)])];
    os << "    [" << index->classes[static_cast<size_t>(s.label)] << "] " << s.origin << ": " << data::text_preview(s.text, 70)
       << "\n      " << test.length(i) << " tokens:";
    const std::vector<int64_t>& ids = test.ids(i);
    for (size_t k = 0; k < std::min<size_t>(ids.size(), 24); ++k) {
      const std::string p = split.tokenizer->piece(ids[k]);
      os << " " << (p.find_first_not_of(" \t\r\n") == std::string::npos ? "\u2423" : p);  // a blank piece as U+2423
    }
    if (ids.size() > 24) os << " ...";
    os << "\n";
  }
  return os.str();
}

}  // namespace kiln::cli
