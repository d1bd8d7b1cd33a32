#pragma once
// The inverse of megatron_args: reads a Megatron-LM launch (a pretrain_gpt.py command line, a shell
// script that builds one, or a file of flags) into the model, batch, plan and runtime features it
// describes, so `strata predict` and `strata plan` can start from the job a team already runs.
// Flags strata does not model (learning rate, data paths, logging, ...) are ignored.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/job.h"
#include "costmodel/model_spec.h"

namespace strata {

struct MegatronLaunch {
  ModelSpec model;
  TrainingSpec training;      // global_batch_size 0 when the flags leave it to Megatron's default (mbs * dp)
  ParallelPlan plan;          // dp 0: the world size comes from torchrun's flags or the caller
  RuntimeOptions runtime;     // the features the flags turn on or off, Megatron's defaults otherwise
  std::optional<int> nnodes;          // torchrun --nnodes, when a plain number
  std::optional<int> nproc_per_node;  // torchrun --nproc-per-node / --nproc_per_node, when a plain number
  std::vector<std::string> notes;     // how the flags were read where they leave room for doubt
};

// The tokenizer a launch names: --tokenizer-type, --tokenizer-model, and the special tokens
// Megatron adds to it (--tokenizer-special-tokens; a SentencePiece tokenizer takes them only with
// --tokenizer-sentencepiece-legacy, which the reader checks).
struct TokenizerRequest {
  std::string type;   // HuggingFaceTokenizer, SFTTokenizer, SentencePieceTokenizer, GPTSentencePieceTokenizer, Llama2Tokenizer
  std::string model;  // the --tokenizer-model path or Hugging Face id
  std::vector<std::string> special_tokens;
};
// The size of that tokenizer as Megatron builds it (HuggingFaceTokenizer: len(tokenizer);
// SentencePiece: get_piece_size() plus the special tokens it adds) and how it was learned, or
// nullopt when it cannot be known here. The caller supplies it: this library reads no files but
// the launch.
struct TokenizerVocab {
  std::int64_t tokens = 0;
  std::string source;  // for the note: the file read, or the built-in model named
};
using TokenizerVocabLookup = std::function<std::optional<TokenizerVocab>(const TokenizerRequest&)>;

// `where` names the file in error messages (InputError with the Megatron flag as the field).
// `base`: a catalog model whose fields fill what the flags do not give (the vocabulary when only a
// tokenizer is named); the flags win where both say something. `tokenizer_vocab`: the vocabulary
// of a Hugging Face or SentencePiece tokenizer the launch names, where neither --vocab-size nor
// `base` gives it.
MegatronLaunch read_megatron_launch(const std::string& text, const std::string& where, const ModelSpec* base,
                                    const TokenizerVocabLookup& tokenizer_vocab = {});

// Megatron-Core's pipeline layout string ("Et*4|(tt|)*14|t*3mL": E embedding, t decoder layer, m
// MTP layer, L loss, one '|'-separated entry per virtual stage) applied to a plan whose pp is set:
// vpp and each rank's decoder layers. Throws InputError(where, field, ...) for a layout Megatron's
// validate_layer_layout refuses (or one strata cannot express); `notes` says what is approximated.
void apply_pipeline_layout(const std::string& layout, const std::string& where, const std::string& field, const ModelSpec& m,
                           ParallelPlan& p, std::vector<std::string>& notes);

// Megatron-FSDP's --data-parallel-sharding-strategy applied to a plan: optim_grads_params shards
// parameters, gradients and optimizer state (ZeRO-3), optim_grads gradients and optimizer state
// (ZeRO-2), optim the optimizer state (the distributed optimizer), no_shard nothing. False for
// another name, the plan untouched.
bool apply_megatron_fsdp_strategy(const std::string& strategy, ParallelPlan& p);

// The Megatron flag (or torchrun flag) that sets a field named by check_plan_input's PlanProblem.
std::string megatron_flag_for(const std::string& plan_field);

}  // namespace strata
