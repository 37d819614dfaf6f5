// The SentencePiece tokenizer (tokenizer.h), built only with KILN_SENTENCEPIECE: tokenizer.cpp
// calls these when KILN_HAVE_SENTENCEPIECE is defined for it.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/data/text/tokenizer.h"

namespace kiln::data {

// Trains a unigram or BPE model (options.model_type, options.vocab_size) with
// SentencePieceTrainer on `texts` in memory (line breaks and tabs read as spaces), pad id 0,
// unk id 1, no BOS/EOS. ValueError naming SentencePiece's message when training fails.
std::unique_ptr<Tokenizer> train_sentencepiece(const std::vector<std::string_view>& texts,
                                               const TokenizerOptions& options);
// A tokenizer from a serialized ModelProto. IoError naming `source` when it does not load or its
// pad/unk ids are not 0/1.
std::unique_ptr<Tokenizer> sentencepiece_from_proto(const std::string& proto, const std::string& model_type,
                                                    const std::string& source);

}  // namespace kiln::data
