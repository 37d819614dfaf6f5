// The C ABI of libkiln_sentencepiece.so, the plugin that holds every call into SentencePiece
// (sentencepiece_plugin.cpp). Why a plugin: Debian 12's libsentencepiece0 bundles protobuf-lite
// 3.14 and exports its symbols, while the `kiln` binary also loads the system's libprotobuf 3.21
// (ONNX support). Linked into one process, SentencePiece's protobuf calls bind to 3.21 and its
// version check aborts. The engine therefore never links libsentencepiece: it dlopen()s this
// plugin with RTLD_LOCAL | RTLD_DEEPBIND (sentencepiece_tokenizer.cpp), so that the plugin and
// libsentencepiece resolve symbols in their own dependencies first and SentencePiece's protobuf
// calls reach its bundled copy. Only plain C types cross the boundary; every buffer the plugin
// returns is malloc'd by it and released with kiln_sp_free.
#pragma once
#include <stddef.h>
#include <stdint.h>

extern "C" {

// Bumped whenever a signature below changes; the engine refuses a plugin of another version.
#define KILN_SP_ABI_VERSION 1
int kiln_sp_abi_version(void);

// Trains a model (model_type "unigram" or "bpe", target vocab_size, pad id 0, unk id 1, no BOS/EOS)
// on n texts (texts[i] of lengths[i] bytes, one sentence each). Returns 0 and the serialized
// ModelProto in *proto (*proto_len bytes), or nonzero and a message in *error.
int kiln_sp_train(const char* const* texts, const size_t* lengths, size_t n, const char* model_type,
                  int64_t vocab_size, char** proto, size_t* proto_len, char** error);
// A processor for a serialized ModelProto, or null and a message in *error.
void* kiln_sp_load(const char* proto, size_t proto_len, char** error);
void kiln_sp_unload(void* processor);
int kiln_sp_piece_size(const void* processor);
int kiln_sp_pad_id(const void* processor);
int kiln_sp_unk_id(const void* processor);
// The ids of text (len bytes) in *ids (*n of them). Returns 0, or nonzero and a message in *error.
int kiln_sp_encode(const void* processor, const char* text, size_t len, int32_t** ids, size_t* n, char** error);
// The piece of id as a NUL-terminated string (malloc'd), null for an id outside the vocabulary.
char* kiln_sp_id_to_piece(const void* processor, int id);
void kiln_sp_free(void* p);

}  // extern "C"
