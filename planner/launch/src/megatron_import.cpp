#include "launch/megatron_import.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "costmodel/errors.h"
#include "launch/shell_words.h"

namespace strata {

namespace {

// The words of a list-valued flag's value (Megatron's nargs='+' flags: "--cp-comm-type a2a a2a").
std::vector<std::string> split_words(const std::string& value) {
  std::vector<std::string> out;
  std::istringstream in(value);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Flags read from the launch, and whether each takes a value. Spelled as Megatron-LM's
// megatron/training/arguments.py spells them; torchrun's own flags give the world size.
struct FlagSpec {
  const char* name;
  bool takes_value;
};
constexpr FlagSpec kFlags[] = {
    // Model shape.
    {"--num-layers", true}, {"--hidden-size", true}, {"--squared-relu", false}, {"--apply-layernorm-1p", false}, {"--ffn-hidden-size", true}, {"--num-attention-heads", true},
    {"--kv-channels", true}, {"--group-query-attention", false}, {"--num-query-groups", true}, {"--swiglu", false},
    {"--normalization", true}, {"--untie-embeddings-and-output-weights", false}, {"--position-embedding-type", true},
    {"--use-rotary-position-embeddings", false}, {"--no-position-embedding", false}, {"--vocab-size", true},
    {"--tokenizer-type", true}, {"--tokenizer-model", true}, {"--tokenizer-special-tokens", true}, {"--tokenizer-sentencepiece-legacy", false},
    {"--moe-router-load-balancing-type", true}, {"--merge-file", true}, {"--pad-vocab-size-to", true}, {"--attention-dropout", true}, {"--hidden-dropout", true}, {"--num-experts", true},
    {"--moe-router-topk", true}, {"--moe-ffn-hidden-size", true}, {"--max-position-embeddings", true},
    {"--disable-bias-linear", false}, {"--add-qkv-bias", false}, {"--qk-layernorm", false}, {"--norm-epsilon", true},
    {"--rotary-base", true}, {"--rotary-percent", true}, {"--use-rope-scaling", false}, {"--no-rope-freq", true}, {"--window-size", true},
    {"--window-attn-skip-freq", true}, {"--multi-latent-attention", false}, {"--q-lora-rank", true}, {"--kv-lora-rank", true},
    // DeepSeek Sparse Attention (Megatron-Core TransformerConfig dsa_* fields).
    {"--dsa-indexer-n-heads", true}, {"--dsa-indexer-head-dim", true}, {"--dsa-indexer-topk", true}, {"--dsa-indexer-topk-freq", true},
    {"--dsa-indexer-skip-topk-offset", true}, {"--dsa-indexer-rope-interleaved", false}, {"--no-dsa-indexer-rotate-activation", false},
    {"--dsa-indexer-loss-coeff", true}, {"--dsa-indexer-use-sparse-loss", false}, {"--dsa-kernel-backend", true},
    {"--qk-head-dim", true}, {"--qk-pos-emb-head-dim", true}, {"--v-head-dim", true},
    {"--moe-shared-expert-intermediate-size", true}, {"--moe-shared-expert-gate", false}, {"--moe-layer-freq", true}, {"--moe-router-score-function", true},
    {"--moe-router-enable-expert-bias", false}, {"--expert-tensor-parallel-size", true}, {"--moe-expert-capacity-factor", true},
    {"--moe-expert-rank-capacity-factor", true},
    {"--moe-token-dispatcher-type", true}, {"--moe-flex-dispatcher-backend", true}, {"--moe-enable-deepep", false},
    {"--overlap-moe-expert-parallel-comm", false}, {"--moe-router-force-load-balancing", false},
    {"--moe-pad-expert-input-to-capacity", false}, {"--moe-grouped-gemm", false}, {"--mtp-num-layers", true}, {"--mtp-use-repeated-layer", false},
    {"--moe-router-num-groups", true}, {"--moe-router-group-topk", true}, {"--moe-router-topk-scaling-factor", true},
    {"--moe-router-pre-softmax", false}, {"--quick-geglu", false}, {"--glu-linear-offset", true},
    {"--activation-func-clamp-value", true}, {"--qk-l2-norm", false}, {"--softmax-type", true}, {"--rope-scaling-factor", true}, {"--rotary-seq-len-interpolation-factor", true},
    {"--rope-type", true}, {"--rotary-scaling-factor", true}, {"--mscale", true}, {"--mscale-all-dim", true},
    {"--yarn-original-max-position-embeddings", true}, {"--yarn-beta-fast", true}, {"--yarn-beta-slow", true},
    {"--no-yarn-correction-range-round-to-int", false},
    // Batch and precision.
    {"--seq-length", true}, {"--micro-batch-size", true}, {"--global-batch-size", true}, {"--fp16", false},
    {"--bf16", false}, {"--fp8-format", true}, {"--fp8-recipe", true}, {"--fp4-format", true}, {"--fp4-recipe", true},
    {"--fp8-param-gather", false}, {"--fp4-param-gather", false}, {"--grad-reduce-in-bf16", false},
    {"--accumulate-allreduce-grads-in-fp32", false}, {"--cp-comm-type", true},
    {"--hierarchical-context-parallel-sizes", true},
    // Parallelism.
    {"--tensor-model-parallel-size", true}, {"--pipeline-model-parallel-size", true}, {"--context-parallel-size", true},
    {"--expert-model-parallel-size", true}, {"--sequence-parallel", false},
    {"--num-layers-per-virtual-pipeline-stage", true}, {"--num-virtual-stages-per-pipeline-rank", true},
    {"--microbatch-group-size-per-virtual-pipeline-stage", true},
    {"--decoder-first-pipeline-num-layers", true}, {"--decoder-last-pipeline-num-layers", true},
    {"--pipeline-model-parallel-layout", true}, {"--account-for-embedding-in-pipeline-split", false},
    {"--account-for-loss-in-pipeline-split", false},
    // Memory and runtime features.
    {"--recompute-granularity", true}, {"--recompute-method", true}, {"--recompute-num-layers", true}, {"--recompute-modules", true},
    {"--recompute-activations", false}, {"--checkpoint-activations", false}, {"--use-distributed-optimizer", false},
    {"--overlap-grad-reduce", false}, {"--overlap-param-gather", false}, {"--tp-comm-overlap", false},
    {"--no-gradient-accumulation-fusion", false}, {"--make-vocab-size-divisible-by", true}, {"--use-flash-attn", false},
    {"--cross-entropy-loss-fusion", false}, {"--cross-entropy-fusion-impl", true},
    {"--attention-backend", true}, {"--transformer-impl", true},
    // The optimizer and its state.
    {"--optimizer", true}, {"--use-precision-aware-optimizer", false}, {"--main-params-dtype", true}, {"--main-grads-dtype", true},
    {"--exp-avg-dtype", true}, {"--exp-avg-sq-dtype", true}, {"--optimizer-cpu-offload", false}, {"--optimizer-offload-fraction", true},
    {"--num-distributed-optimizer-instances", true}, {"--outer-dp-sharding-strategy", true},
    // Megatron-FSDP (ZeRO-2/3 in Megatron-LM), and PyTorch FSDP2 under Megatron.
    {"--use-megatron-fsdp", false}, {"--data-parallel-sharding-strategy", true}, {"--use-torch-fsdp2", false},
    {"--torch-fsdp2-no-reshard-after-forward", false},
    // Fine-grained activation offloading (Transformer Engine's op fuser only names the fused grouped
    // MLP's offload group).
    {"--fine-grained-activation-offloading", false}, {"--offload-modules", true}, {"--min-offloaded-tensor-size", true},
    {"--use-transformer-engine-op-fuser", false}, {"--cpu-offloading-num-layers", true},
    // Megatron-DeepSpeed.
    {"--deepspeed", false}, {"--zero-stage", true},
    // Hybrid models (read), model structure strata does not cost (refused) and runtime features it
    // does not model (noted).
    {"--hybrid-layer-pattern", true}, {"--hybrid-override-pattern", true}, {"--experimental-attention-variant", true},
    {"--mamba-num-heads", true}, {"--mamba-head-dim", true}, {"--mamba-state-dim", true}, {"--mamba-num-groups", true},
    {"--moe-latent-size", true}, {"--linear-num-key-heads", true}, {"--linear-num-value-heads", true},
    {"--linear-key-head-dim", true}, {"--linear-value-head-dim", true}, {"--linear-conv-kernel-dim", true},
    {"--attention-output-gate", false}, {"--linear-attention-freq", true},
    {"--heterogeneous-layers-config-path", true}, {"--yaml-cfg", true}, {"--first-last-layers-bf16", false},
    // CUDA graphs (a dropless MoE layer's host time).
    {"--cuda-graph-impl", true}, {"--cuda-graph-modules", true}, {"--cuda-graph-scope", true},
    {"--enable-cuda-graph", false}, {"--external-cuda-graph", false},
    {"--num-layers-at-start-in-bf16", true}, {"--num-layers-at-end-in-bf16", true},
    {"--moe-shared-expert-overlap", false},
    {"--use-fused-weighted-squared-relu", false}, {"--moe-paged-stash", false}, {"--moe-paged-stash-buffer-size-factor-cuda", true},
    {"--moe-paged-stash-buffer-size-factor-cpu", true},
    // torchrun / torch.distributed.launch, and the deepspeed launcher.
    {"--nnodes", true}, {"--nproc-per-node", true}, {"--nproc_per_node", true}, {"--num_nodes", true}, {"--num_gpus", true},
};

const FlagSpec* find_flag(const std::string& name) {
  for (const auto& f : kFlags)
    if (name == f.name) return &f;
  return nullptr;
}

std::string base_name(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool is_torchrun_flag(const std::string& name) {
  return name == "--nnodes" || name == "--nproc-per-node" || name == "--nproc_per_node" || name == "--num_nodes" ||
         name == "--num_gpus";
}

// A word that gives one of the Megatron flags strata reads (`--name` or `--name=value`), not the
// launcher's world size.
bool is_megatron_flag_word(const std::string& word) {
  const std::string name = word.substr(0, word.find('='));
  return name.starts_with("--") && find_flag(name) && !is_torchrun_flag(name);
}

// A quoted array element that holds a flag and its value ("--vocab-size 128256" in
// `ARGS=("--vocab-size 128256")`, Megatron-LM's examples/llama) reaches the program as two words:
// the scripts expand such arrays unquoted (`${ARGS[@]}`), and bash splits the result on blanks.
ScriptWords split_flag_words(ScriptWords script) {
  ScriptWords out = script;
  out.words.clear();
  out.word_variables.clear();
  out.word_line.clear();
  out.word_command.clear();
  for (std::size_t i = 0; i < script.words.size(); ++i) {
    const std::string& w = script.words[i];
    const std::vector<std::string> parts =
        w.starts_with("--") && w.find_first_of(" \t\n") != std::string::npos ? split_words(w) : std::vector<std::string>{w};
    for (const std::string& part : parts) {
      out.words.push_back(part);
      out.word_variables.push_back(script.word_variables[i]);
      out.word_line.push_back(script.word_line[i]);
      out.word_command.push_back(script.word_command[i]);
    }
  }
  return out;
}

// A launch command: one that runs a Python script (pretrain_gpt.py, directly or through torchrun or
// deepspeed) and gives it model or plan flags itself. Flags collected in variables or arrays are
// shared; two commands that each give their own would be merged flag by flag into a job neither
// runs (the branches of an if, a second experiment), so the file is refused instead.
void refuse_two_launches(const ScriptWords& script, const std::string& where) {
  std::map<int, std::pair<bool, bool>> runs_python_and_has_flags;
  std::map<int, int> first_line;
  for (std::size_t i = 0; i < script.words.size(); ++i) {
    const std::string& w = script.words[i];
    const int cmd = script.word_command[i];
    auto& [python, flags] = runs_python_and_has_flags[cmd];
    if (!first_line.count(cmd)) first_line[cmd] = script.word_line[i];
    if (w.ends_with(".py")) python = true;
    if (is_megatron_flag_word(w)) flags = true;
  }
  std::vector<int> lines;
  for (const auto& [cmd, what] : runs_python_and_has_flags)
    if (what.first && what.second) lines.push_back(first_line[cmd]);
  if (lines.size() < 2) return;
  std::string list;
  for (int l : lines) list += (list.empty() ? "" : ", ") + std::to_string(l);
  throw InputError(where, "", std::to_string(lines.size()) + " launch commands with their own Megatron flags (lines " + list +
                                  "); strata reads one launch and will not merge two: keep one of them in the file");
}

// The flags of the launch, last occurrence winning as in argparse.
class Flags {
 public:
  Flags(const ScriptWords& script, const std::string& where, std::vector<std::string>& notes) : where_(where) {
    const std::vector<std::string>& words = script.words;
    for (std::size_t i = 0; i < words.size(); ++i) {
      const std::string& w = words[i];
      if (!w.starts_with("--")) continue;
      const std::size_t eq = w.find('=');
      const std::string name = w.substr(0, eq);
      const FlagSpec* spec = find_flag(name);
      if (!spec) continue;  // not a flag strata models
      std::string value;
      if (!spec->takes_value) {
        if (eq != std::string::npos) throw InputError(where, name, "is a switch and takes no value, found \"" + w + "\"");
      } else if (eq != std::string::npos) {
        value = w.substr(eq + 1);
      } else if (i + 1 < words.size() && !words[i + 1].starts_with("--")) {
        value = words[++i];
        // Megatron's list-valued flags (nargs='*') take every word up to the next flag.
        if (name == "--recompute-modules" || name == "--offload-modules" || name == "--cp-comm-type" || name == "--hierarchical-context-parallel-sizes" ||
            name == "--cuda-graph-modules" || name == "--cuda-graph-scope" || name == "--tokenizer-special-tokens")
          while (i + 1 < words.size() && !words[i + 1].starts_with("--") && !words[i + 1].ends_with(".py")) value += " " + words[++i];
      } else {
        throw InputError(where, name, "expects a value after it");
      }
      auto it = values_.find(name);
      if (it != values_.end() && it->second != value)
        notes.push_back(name + " is given more than once; the last one, " + (value.empty() ? "set" : "\"" + value + "\"") +
                        ", wins as in Megatron's argument parser");
      values_[name] = value;
      if (spec->takes_value) note_ambiguous_variables(script, name, value, script.word_variables[i], notes);
    }
  }

  bool has(const std::string& name) const { return values_.count(name) > 0; }

  std::optional<std::string> text(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end()) return std::nullopt;
    if (has_unresolved_expansion(it->second))
      throw InputError(where_, name, "value \"" + it->second +
                                         "\" is a shell expansion strata cannot resolve; set the variable in the file "
                                         "(NAME=value) or write the number");
    return it->second;
  }

  // The raw value without the expansion check, for flags whose value is optional to strata.
  std::optional<std::string> raw(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() ? std::nullopt : std::optional<std::string>(it->second);
  }

  std::optional<std::int64_t> integer(const std::string& name, std::int64_t lo, std::int64_t hi) const {
    auto t = text(name);
    if (!t) return std::nullopt;
    std::int64_t v = 0;
    bool ok = !t->empty() && t->size() <= 18;
    for (char c : *t) ok = ok && c >= '0' && c <= '9';
    if (ok)
      for (char c : *t) v = v * 10 + (c - '0');
    if (!ok || v < lo || v > hi)
      throw InputError(where_, name, "expected an integer " + std::to_string(lo) + ".." + std::to_string(hi) + ", found \"" + *t + "\"");
    return v;
  }

  std::optional<double> number(const std::string& name, double lo, double hi) const {
    auto t = text(name);
    if (!t) return std::nullopt;
    double v = 0;
    std::size_t used = 0;
    try {
      v = std::stod(*t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != t->size() || !std::isfinite(v) || v < lo || v > hi)
      throw InputError(where_, name, fmt::format("expected a number {:g}..{:g}, found \"{}\"", lo, hi, *t));
    return v;
  }

  // A value built from a variable the script assigns differently in several places (branches of an
  // if or a case, which the reader does not follow): say which assignment was used.
  static void note_ambiguous_variables(const ScriptWords& script, const std::string& flag, const std::string& value,
                                       const std::vector<std::string>& variables, std::vector<std::string>& notes) {
    for (const std::string& var : variables) {
      const auto& values = script.assignments.count(var) ? script.assignments.at(var) : std::vector<std::string>{};
      std::vector<std::string> distinct;
      for (const auto& v : values)
        if (std::find(distinct.begin(), distinct.end(), v) == distinct.end()) distinct.push_back(v);
      if (distinct.size() < 2) continue;
      std::string list;
      for (const auto& v : distinct) list += (list.empty() ? "" : ", ") + v;
      notes.push_back(flag + " " + value + " comes from $" + var + ", which the file assigns " + std::to_string(values.size()) +
                      " times (" + list + "); strata used the one assigned last before the flag and does not follow "
                      "if/case branches: check it, or write the value out");
    }
  }

  std::int64_t required(const std::string& name, std::int64_t lo, std::int64_t hi, const std::string& why) const {
    auto v = integer(name, lo, hi);
    if (!v) throw InputError(where_, name, "missing: " + why);
    return *v;
  }

 private:
  std::string where_;
  std::map<std::string, std::string> values_;
};

constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;
constexpr std::int64_t kMaxParallel = 1'000'000;

// Megatron-Core's --pipeline-model-parallel-layout: virtual stages separated by '|', each a string
// of E (embedding), t (decoder layer, t*N for N of them) and L (loss/output layer); a group in
// parentheses may repeat, "(tt|)*3". Returns the decoder layers of each virtual stage.
class LayoutParser {
 public:
  LayoutParser(const std::string& s, const std::string& where, const std::string& field) : s_(s), where_(where), field_(field) {}
  std::vector<int> parse() {
    std::string flat = expand(0);
    if (pos_ != s_.size()) fail("unexpected ')'");
    std::vector<int> stages(1, 0);
    for (char c : flat) {
      if (c == '|') stages.push_back(0);
      else if (c == 't') ++stages.back();
      else if (c == 'm') {
        ++mtp_layers_;
        mtp_stage_ = static_cast<int>(stages.size()) - 1;
      }
    }
    return stages;
  }
  // After parse(): the MTP layers ('m') and the virtual stage of the last of them (-1: none).
  int mtp_layers() const { return mtp_layers_; }
  int mtp_stage() const { return mtp_stage_; }

 private:
  static constexpr std::size_t kMaxExpanded = 1 << 20;
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(where_, field_, what + " in \"" + s_ + "\" (expected stages of E, t, t*N, m, L separated by |)");
  }
  int count() {
    if (pos_ >= s_.size() || s_[pos_] != '*') return 1;
    ++pos_;
    std::size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ == start || pos_ - start > 6) fail("expected a repeat count after '*'");
    return std::stoi(s_.substr(start, pos_ - start));
  }
  std::string expand(int depth) {
    if (depth > 16) fail("parentheses nested too deeply");
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != ')') {
      const char c = s_[pos_];
      std::string piece;
      if (c == '(') {
        ++pos_;
        piece = expand(depth + 1);
        if (pos_ >= s_.size()) fail("unclosed '('");
        ++pos_;
      } else if (c == 'E' || c == 't' || c == 'L' || c == 'm' || c == '|') {
        piece = std::string(1, c);
        ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
        continue;
      } else {
        fail(std::string("unexpected '") + c + "'");
      }
      const int n = count();
      if (piece.size() * static_cast<std::size_t>(n) + out.size() > kMaxExpanded) fail("layout too long");
      for (int k = 0; k < n; ++k) out += piece;
    }
    if (depth == 0 && pos_ < s_.size()) fail("unexpected ')'");
    return out;
  }

  const std::string& s_;
  std::string where_;
  std::string field_;
  std::size_t pos_ = 0;
  int mtp_layers_ = 0;
  int mtp_stage_ = -1;
};

// Megatron's per-layer pattern flags (--moe-layer-freq, --window-attn-skip-freq; arguments.py
// moe_freq_type): an integer N (1 = every layer), or a Python list expression of 0/1 such as
// "([0]*3+[1]*58)" or "([1]*3+[0])*2". Parsed here without evaluating Python: lists of 0/1,
// '+' to concatenate, '*' a whole number to repeat, parentheses; at most `layers` entries.
class PatternParser {
 public:
  PatternParser(const std::string& s, std::string where, std::string flag, int layers)
      : s_(s), where_(std::move(where)), flag_(std::move(flag)), layers_(layers) {}

  std::vector<int> parse() {
    std::vector<int> v = sum();
    skip();
    if (pos_ != s_.size()) fail("unexpected '" + std::string(1, s_[pos_]) + "'");
    if (static_cast<int>(v.size()) != layers_)
      fail("gives " + std::to_string(v.size()) + " layers, the model has " + std::to_string(layers_));
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(where_, flag_, "\"" + s_ + "\" " + what + " (expected an integer or a list expression like ([0]*3+[1]*58))");
  }
  void skip() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return false;
  }
  long whole() {
    skip();
    long v = 0;
    const std::size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9' && v <= layers_) v = v * 10 + (s_[pos_++] - '0');
    if (pos_ == start) fail("needs a number at position " + std::to_string(pos_));
    return v;
  }
  void grow(std::vector<int>& v, const std::vector<int>& more) {
    if (v.size() + more.size() > static_cast<std::size_t>(layers_)) fail("is longer than the model's " + std::to_string(layers_) + " layers");
    v.insert(v.end(), more.begin(), more.end());
  }
  std::vector<int> sum() {
    std::vector<int> v;
    do grow(v, product());
    while (eat('+'));
    return v;
  }
  std::vector<int> product() {
    std::vector<int> a = atom();
    while (eat('*')) {
      const long n = whole();
      std::vector<int> r;
      for (long i = 0; i < n; ++i) grow(r, a);
      a = r;
    }
    return a;
  }
  std::vector<int> atom() {
    if (eat('(')) {
      std::vector<int> v = sum();
      if (!eat(')')) fail("misses a ')'");
      return v;
    }
    if (!eat('[')) fail("needs a list or '(' at position " + std::to_string(pos_));
    std::vector<int> v;
    if (eat(']')) return v;
    do {
      const long x = whole();
      if (x > 1) fail("lists 0 or 1 per layer, found " + std::to_string(x));
      grow(v, {static_cast<int>(x)});
    } while (eat(','));
    if (!eat(']')) fail("misses a ']'");
    return v;
  }

  const std::string& s_;
  std::string where_, flag_;
  int layers_;
  std::size_t pos_ = 0;
};

// A pattern flag's layers: 1 for the layers it marks. `every`: an integer N marks layer i (0-based)
// when i % N == 0 for --moe-layer-freq; --window-attn-skip-freq N marks all but every Nth layer.
std::vector<int> read_pattern(const Flags& f, const std::string& where, const std::string& flag, int layers, bool skip_freq) {
  const std::string text = *f.text(flag);
  std::vector<int> v;
  if (text.find('[') != std::string::npos) return PatternParser(text, where, flag, layers).parse();
  const std::int64_t n = f.integer(flag, 1, layers).value_or(1);
  for (int i = 0; i < layers; ++i) v.push_back(skip_freq ? ((i + 1) % n != 0 ? 1 : 0) : (i % n == 0 ? 1 : 0));
  return v;
}

// --model beside a launch that gives its own shape: the launch's shape is used and --model only
// fills what the flags leave out (the vocabulary); when the two describe different models, say so.
void note_other_model(const Flags& f, const ModelSpec* base, std::vector<std::string>& notes) {
  if (!base) return;
  const std::pair<const char*, std::int64_t> shape[] = {{"--num-layers", base->num_layers},
                                                        {"--hidden-size", base->hidden_size},
                                                        {"--num-attention-heads", base->num_attention_heads}};
  for (const auto& [flag, value] : shape) {
    const auto launch_value = f.integer(flag, 1, kMaxDim);
    if (launch_value && *launch_value != value) {
      notes.push_back(fmt::format("--model {} has {} {}, the launch {} {}: the launch's model is predicted; --model only fills "
                                  "what its flags leave out (the vocabulary size)",
                                  base->name, flag, value, flag, *launch_value));
      return;
    }
  }
}

// The MLP activation: --swiglu, --squared-relu or --quick-geglu (argument_utils.py
// core_transformer_config_from_args takes one), else GELU.
Activation read_activation(const Flags& f, const std::string& where) {
  const int given = (f.has("--swiglu") ? 1 : 0) + (f.has("--squared-relu") ? 1 : 0) + (f.has("--quick-geglu") ? 1 : 0);
  if (given > 1) throw InputError(where, "--swiglu", "more than one of --swiglu, --squared-relu and --quick-geglu is given; Megatron takes one");
  if (f.has("--swiglu")) return Activation::swiglu;
  if (f.has("--squared-relu")) return Activation::squared_relu;
  if (f.has("--quick-geglu")) return Activation::quick_geglu;
  return Activation::gelu;
}

// Rotary scaling as Megatron builds it: --use-rope-scaling (llama3, fixed low/high factors and 8192
// original positions, factor --rope-scaling-factor, default 8); YaRN inside MLA unless --rope-type
// rope (MLATransformerConfig: factor from --rotary-scaling-factor, whose default 1 leaves the
// frequencies alone, 32/1/4096 for the rest); --position-embedding-type yarn for standard attention
// (argument_utils.py _apply_yarn_config_from_args defaults).
void read_rope_scaling(const Flags& f, const std::string& where, ModelSpec& m) {
  RopeScalingParams& p = m.rope_params;
  if (f.has("--use-rope-scaling")) {
    m.rope_scaling = "llama3";
    p = {.factor = f.number("--rope-scaling-factor", 1e-6, 1e6).value_or(8.0), .original_max_position = 8192};
    return;
  }
  if (f.has("--rotary-seq-len-interpolation-factor")) {
    const auto factor = f.integer("--rotary-seq-len-interpolation-factor", 1, 1 << 20);
    if (*factor > 1) {
      m.rope_scaling = "linear";
      p = {.factor = static_cast<double>(*factor)};
    }
    return;
  }
  const std::string rope_type = f.text("--rope-type").value_or(f.has("--multi-latent-attention") ? "yarn" : "rope");
  if (rope_type != "rope" && rope_type != "yarn") throw InputError(where, "--rope-type", "expected rope or yarn, found \"" + rope_type + "\"");
  const bool mla_yarn = f.has("--multi-latent-attention") && rope_type == "yarn";
  const bool yarn = f.text("--position-embedding-type").value_or("") == "yarn";
  if (!mla_yarn && !yarn) return;
  p.factor = f.number("--rotary-scaling-factor", 1e-6, 1e6).value_or(1.0);
  p.mscale = f.number("--mscale", 0, 1e6).value_or(1.0);
  p.mscale_all_dim = f.number("--mscale-all-dim", 0, 1e6).value_or(0.0);
  p.original_max_position = 4096;
  if (yarn && !mla_yarn) {
    p.original_max_position = f.integer("--yarn-original-max-position-embeddings", 1, kMaxDim * 64).value_or(4096);
    p.beta_fast = f.number("--yarn-beta-fast", 0, 1e6).value_or(32.0);
    p.beta_slow = f.number("--yarn-beta-slow", 0, 1e6).value_or(1.0);
    p.truncate = !f.has("--no-yarn-correction-range-round-to-int");
  }
  // YaRN with factor 1 and the default mscale pair is plain rotary embedding.
  if (p.factor == 1.0 && p.mscale == 1.0 && p.mscale_all_dim == 0.0) p = {};
  else m.rope_scaling = "yarn";
}

// The router's balancing (Sinkhorn routing; the other types, auxiliary losses or none, route as the
// score function says), group-limited routing and weights (--moe-router-num-groups,
// --moe-router-group-topk, --moe-router-topk-scaling-factor, --moe-router-pre-softmax).
void read_router_options(const Flags& f, const std::string& where, MoeSpec& moe) {
  const std::string balancing = f.text("--moe-router-load-balancing-type").value_or("aux_loss");
  if (balancing != "aux_loss" && balancing != "seq_aux_loss" && balancing != "global_aux_loss" && balancing != "sinkhorn" &&
      balancing != "quantile_balancing" && balancing != "none")
    throw InputError(where, "--moe-router-load-balancing-type",
                     "expected aux_loss, seq_aux_loss, global_aux_loss, sinkhorn, quantile_balancing or none, found \"" + balancing + "\"");
  moe.sinkhorn = balancing == "sinkhorn";
  const auto groups = f.integer("--moe-router-num-groups", 1, moe.num_experts);
  if (groups && *groups > 1) {
    moe.num_groups = static_cast<int>(*groups);
    moe.group_topk = static_cast<int>(f.integer("--moe-router-group-topk", 1, *groups).value_or(1));
  }
  moe.topk_scaling_factor = f.number("--moe-router-topk-scaling-factor", 0, 1e6).value_or(0.0);
  moe.normalize_top_k = !(f.has("--moe-router-pre-softmax") && moe.router_score_function == "softmax");
}

// --hybrid-layer-pattern (or the deprecated --hybrid-override-pattern it replaces), if given, and
// the name of the one given.
std::optional<std::string> hybrid_pattern_flag(const Flags& f) {
  if (auto v = f.text("--hybrid-layer-pattern")) return v;
  return f.text("--hybrid-override-pattern");
}
const char* hybrid_pattern_flag_name(const Flags& f) {
  return f.has("--hybrid-layer-pattern") ? "--hybrid-layer-pattern" : "--hybrid-override-pattern";
}

// A hybrid pattern's layer symbols: the main pattern (before any '/' MTP part) without its '|'
// pipeline separators.
std::string layer_symbols(const std::string& pattern) {
  std::string out;
  for (char c : pattern.substr(0, pattern.find('/')))
    if (c != '|') out += c;
  return out;
}

// The gated DeltaNet shape of --linear-* with TransformerConfig's defaults (16 key and 32 value heads
// of 128 channels, 4 conv taps).
GdnSpec read_gdn_shape(const Flags& f) {
  GdnSpec g;
  g.num_key_heads = static_cast<int>(f.integer("--linear-num-key-heads", 1, kMaxDim).value_or(16));
  g.num_value_heads = static_cast<int>(f.integer("--linear-num-value-heads", 1, kMaxDim).value_or(32));
  g.key_head_dim = f.integer("--linear-key-head-dim", 1, kMaxDim).value_or(128);
  g.value_head_dim = f.integer("--linear-value-head-dim", 1, kMaxDim).value_or(128);
  g.conv_kernel = static_cast<int>(f.integer("--linear-conv-kernel-dim", 1, 64).value_or(4));
  return g;
}

// A GPT model whose attention is gated DeltaNet (--experimental-attention-variant gated_delta_net,
// as Megatron-Bridge's Qwen3-Next and Qwen3.5 providers run it): --linear-attention-freq says which
// layers run it (N: every N-th layer softmax attention; a list: 1 = gated DeltaNet) and which keep
// softmax attention. strata costs the same layers as HybridModel stacks them: each decoder layer a
// mixer layer (G or *) and an MLP layer (E or -).
void read_gdn_gpt_layers(const Flags& f, const std::string& where, ModelSpec& m) {
  if (!f.has("--linear-attention-freq"))
    throw InputError(where, "--linear-attention-freq", "missing: gated_delta_net needs the layers that run it (Megatron's check)");
  const std::vector<int> linear = read_pattern(f, where, "--linear-attention-freq", m.num_layers, true);
  if (!m.sliding_window_pattern.empty() || !m.no_rope_layers.empty())
    throw InputError(where, "--experimental-attention-variant", "gated_delta_net beside per-layer window or NoPE patterns is not read");
  std::string mixers;
  for (int is_linear : linear) mixers += is_linear ? 'G' : '*';
  m.gdn = read_gdn_shape(f);
  split_into_hybrid_layers(m, mixers);
}

// The vocabulary a launch without --vocab-size trains (Megatron's build_tokenizer,
// megatron/core/tokenizers/utils/build_tokenizer.py, before the padding to a multiple of
// --make-vocab-size-divisible-by x tp): fixed by the tokenizer class, read from the tokenizer file
// the launch names (through `tokenizer_vocab`), or the --model's. Throws InputError naming
// --vocab-size when nothing tells.
std::int64_t launch_tokenizer_vocab(const Flags& f, const std::string& where, const ModelSpec* base,
                                    const TokenizerVocabLookup& tokenizer_vocab, std::string& source, std::vector<std::string>& notes) {
  const std::string tok = f.text("--tokenizer-type").value_or("");
  const std::vector<std::string> special = f.has("--tokenizer-special-tokens") ? split_words(*f.text("--tokenizer-special-tokens"))
                                                                               : std::vector<std::string>{};
  const bool sentencepiece = tok == "SentencePieceTokenizer" || tok == "GPTSentencePieceTokenizer" || tok == "Llama2Tokenizer";
  // sentencepiece_tokenizer.py: "Special tokens must be None when legacy is set to False".
  if (sentencepiece && !special.empty() && !f.has("--tokenizer-sentencepiece-legacy"))
    throw InputError(where, "--tokenizer-special-tokens",
                     "Megatron's " + tok + " refuses special tokens without --tokenizer-sentencepiece-legacy (its "
                     "SentencePieceTokenizer raises when the tokenizer is built); add that flag or drop the special tokens");
  if (tok == "GPT2BPETokenizer") {
    if (!special.empty())
      notes.push_back("--tokenizer-special-tokens: GPT-2 BPE's 50257 tokens assumed, without the special tokens Megatron adds "
                      "where they are not in its vocabulary file (give --vocab-size to say otherwise)");
    return 50257;
  }
  // Megatron builds a TikTokenizer of exactly DEFAULT_TIKTOKEN_MAX_VOCAB = 2**17 tokens when no
  // --vocab-size is given, special tokens included (megatron/core/tokenizers/text/libraries/tiktoken_tokenizer.py).
  if (tok == "TikTokenizer") return 131072;
  if (tok.empty() && f.has("--merge-file")) {
    // A vocabulary file with BPE merges and no tokenizer type: GPT-2's BPE, as Megatron-LM's
    // examples/gpt3 launch trains it (gpt2-vocab.json, gpt2-merges.txt).
    notes.push_back("no --tokenizer-type, a --vocab-file with a --merge-file: GPT-2 BPE's 50257 tokens assumed (give --vocab-size "
                    "to say otherwise)");
    return 50257;
  }
  // The tokenizer file the launch names, as Megatron builds it: HuggingFaceTokenizer has
  // len(tokenizer) tokens (huggingface_tokenizer.py), SFTTokenizer the same without special tokens
  // (sft_tokenizer.py), a SentencePiece tokenizer get_piece_size() plus the special tokens it adds
  // (sentencepiece_tokenizer.py).
  // A path built from a variable set outside the file ("${DATA_PATH}/tokenizer.model") is no file here.
  const bool hugging_face = tok == "HuggingFaceTokenizer" || tok == "SFTTokenizer";
  const std::optional<std::string> file = f.raw("--tokenizer-model");
  if ((sentencepiece || hugging_face) && file && !has_unresolved_expansion(*file) && tokenizer_vocab)
    if (const std::optional<TokenizerVocab> v =
            tokenizer_vocab(TokenizerRequest{tok, *file, tok == "SFTTokenizer" ? std::vector<std::string>{} : special})) {
      notes.push_back(fmt::format("vocabulary: {} tokens, the tokenizer's size from {} (give --vocab-size to say otherwise)", v->tokens, v->source));
      return v->tokens;
    }
  if (base) {
    source += "; vocabulary from " + base->name;
    return base->vocab_size;
  }
  if (tok == "Llama2Tokenizer") {
    notes.push_back("vocabulary: Llama 2's 32000 SentencePiece pieces assumed for Llama2Tokenizer (its --tokenizer-model is not "
                    "on this machine; give --vocab-size to say otherwise)");
    return 32000;
  }
  throw InputError(where, "--vocab-size", "missing: the vocabulary size is not in the launch" +
                                              (tok.empty() ? std::string() : " (tokenizer " + tok + ")") +
                                              "; add --vocab-size N to the file or name a model with this vocabulary with --model" +
                                              (hugging_face
                                                   ? " (or give --tokenizer-model a tokenizer.json, or a folder holding one, on this machine)"
                                                   : sentencepiece ? " (or give --tokenizer-model a SentencePiece .model file on this machine)" : ""));
}

ModelSpec read_model(const Flags& f, const std::string& where, const ModelSpec* base, const TokenizerVocabLookup& tokenizer_vocab,
                     std::vector<std::string>& notes) {
  const bool shapes = f.has("--num-layers") || f.has("--hidden-size") || f.has("--num-attention-heads");
  if (!shapes) {
    if (!base)
      throw InputError(where, "--num-layers", "missing: the launch gives no model shape (--num-layers, --hidden-size, "
                                             "--num-attention-heads); add them or name the model with --model");
    ModelSpec m = *base;
    if (auto mtp = f.integer("--mtp-num-layers", 0, 64)) m.mtp_layers = static_cast<int>(*mtp);
    return m;
  }
  ModelSpec m;
  m.name = "megatron launch (" + base_name(where) + ")";
  note_other_model(f, base, notes);
  m.source = "Megatron-LM flags in " + where;
  const std::string why = "Megatron needs it with the other model flags";
  const std::optional<std::string> hybrid = hybrid_pattern_flag(f);
  if (hybrid && layer_symbols(*hybrid).empty())
    throw InputError(where, hybrid_pattern_flag_name(f),
                     "expected one symbol per layer (M, *, - or E), found none");
  m.num_layers = hybrid ? static_cast<int>(layer_symbols(*hybrid).size()) : static_cast<int>(f.required("--num-layers", 1, 1 << 20, why));
  m.hidden_size = f.required("--hidden-size", 1, kMaxDim, why);
  if (hybrid) {
    // Megatron derives the layer count from the pattern (arguments.py: --num-layers, when it
    // differs, is ignored with a warning) and builds Mamba layers with TransformerConfig's
    // defaults where a flag is absent: state 128, head dim 64, 8 groups, 2h / head dim heads.
    m.hybrid_pattern = layer_symbols(*hybrid);
    // "main/mtp/mtp": one MTP module per '/' part (Megatron infers --mtp-num-layers from them and
    // takes the inferred count where the flag differs).
    std::vector<std::string> parts;
    for (std::size_t at = hybrid->find('/'); at != std::string::npos;) {
      const std::size_t next = hybrid->find('/', at + 1);
      parts.push_back(hybrid->substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1));
      at = next;
    }
    const char* flag = hybrid_pattern_flag_name(f);
    for (const std::string& part : parts)
      if (part != parts.front()) throw InputError(where, flag, "MTP parts differ (\"" + parts.front() + "\", \"" + part + "\"): strata costs one MTP pattern");
    if (!parts.empty()) {
      m.hybrid_mtp_pattern = parts.front();
      m.mtp_layers = static_cast<int>(parts.size());
    }
    if (m.hybrid_pattern.find('M') != std::string::npos) {
      MambaSpec mb;
      mb.head_dim = f.integer("--mamba-head-dim", 1, kMaxDim).value_or(64);
      mb.state_dim = f.integer("--mamba-state-dim", 1, kMaxDim).value_or(128);
      mb.num_groups = static_cast<int>(f.integer("--mamba-num-groups", 1, kMaxDim).value_or(8));
      mb.num_heads = static_cast<int>(f.integer("--mamba-num-heads", 1, kMaxDim).value_or(2 * m.hidden_size / mb.head_dim));
      m.mamba = mb;
    }
    if (m.hybrid_pattern.find('G') != std::string::npos) m.gdn = read_gdn_shape(f);
  }
  m.num_attention_heads = static_cast<int>(f.required("--num-attention-heads", 1, 1 << 20, why));
  m.attention_output_gate = f.has("--attention-output-gate");
  // Megatron: --num-query-groups defaults to 1 once --group-query-attention is on.
  m.num_query_groups = f.has("--group-query-attention")
                           ? static_cast<int>(f.integer("--num-query-groups", 1, 1 << 20).value_or(1))
                           : m.num_attention_heads;
  if (auto kv = f.integer("--kv-channels", 1, kMaxDim); kv && *kv * m.num_attention_heads != m.hidden_size) m.kv_channels = *kv;
  if (f.has("--multi-latent-attention")) {
    // Megatron's MLA defaults (arguments.py): no q compression, kv rank 32, dims 128/64/128.
    MlaSpec mla;
    mla.q_lora_rank = f.integer("--q-lora-rank", 1, kMaxDim).value_or(0);
    mla.kv_lora_rank = f.integer("--kv-lora-rank", 1, kMaxDim).value_or(32);
    mla.qk_nope_head_dim = f.integer("--qk-head-dim", 1, kMaxDim).value_or(128);
    mla.qk_rope_head_dim = f.integer("--qk-pos-emb-head-dim", 1, kMaxDim).value_or(64);
    mla.v_head_dim = f.integer("--v-head-dim", 1, kMaxDim).value_or(128);
    m.mla = mla;
    // A query/key head is the non-rotary and the rotary part together (the model reader's convention).
    m.kv_channels = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
    if (f.raw("--experimental-attention-variant")) {
      // DeepSeek Sparse Attention; Megatron's defaults: top-k computed in every layer, the indexer
      // loss off (dsa_indexer_loss_coeff None), the Hadamard rotation on.
      const std::string dsa_why = "DSA's indexer needs it";
      DsaSpec d;
      d.index_heads = f.required("--dsa-indexer-n-heads", 1, kMaxDim, dsa_why);
      d.index_head_dim = f.required("--dsa-indexer-head-dim", 1, kMaxDim, dsa_why);
      d.index_topk = f.required("--dsa-indexer-topk", 1, kMaxDim * 64, dsa_why);
      d.topk_freq = static_cast<int>(f.integer("--dsa-indexer-topk-freq", 1, 1 << 20).value_or(1));
      d.skip_topk_offset = static_cast<int>(f.integer("--dsa-indexer-skip-topk-offset", 0, 1 << 20).value_or(0));
      d.rope_interleaved = f.has("--dsa-indexer-rope-interleaved");
      d.rotate_activation = !f.has("--no-dsa-indexer-rotate-activation");
      d.indexer_loss_coeff = f.number("--dsa-indexer-loss-coeff", 0, 1e3).value_or(0.0);
      d.sparse_indexer_loss = f.has("--dsa-indexer-use-sparse-loss");
      const std::string backend = f.text("--dsa-kernel-backend").value_or("none");
      if (backend != "cudnn" && backend != "tilelang")
        notes.push_back("--dsa-kernel-backend " + backend + ": Megatron runs DSA's PyTorch fallback (the s x s index scores written "
                        "out), which strata does not model; costed as the fused kernels (--dsa-kernel-backend cudnn)");
      m.dsa = d;
    }
  }
  // Megatron adds biases to every linear layer unless --disable-bias-linear.
  m.add_linear_bias = !f.has("--disable-bias-linear");
  m.add_qkv_bias = f.has("--add-qkv-bias");
  m.qk_layernorm = f.has("--qk-layernorm");
  m.qk_l2_norm = f.has("--qk-l2-norm");
  const std::string softmax = f.text("--softmax-type").value_or("vanilla");
  if (softmax != "vanilla" && softmax != "learnable")
    throw InputError(where, "--softmax-type", "expected vanilla or learnable (strata does not model off-by-one), found \"" + softmax + "\"");
  m.attention_sinks = softmax == "learnable";
  m.zero_centered_gamma = f.has("--apply-layernorm-1p");
  m.norm_epsilon = f.number("--norm-epsilon", 0, 1).value_or(1e-5);
  m.rotary_base = static_cast<double>(f.integer("--rotary-base", 1, std::int64_t{1} << 40).value_or(10000));
  m.rotary_percent = f.number("--rotary-percent", 0, 1).value_or(1.0);
  read_rope_scaling(f, where, m);
  if (f.has("--no-rope-freq")) {
    // An integer N skips RoPE on every Nth layer ([0]*(N-1)+[1] repeated; transformer_config.py
    // asserts N divides the layers), or a list expression of one 0/1 per layer (1 = no RoPE).
    const std::string text = *f.text("--no-rope-freq");
    if (text.find('[') != std::string::npos) {
      m.no_rope_layers = read_pattern(f, where, "--no-rope-freq", m.num_layers, false);
    } else {
      const std::int64_t n = *f.integer("--no-rope-freq", 1, m.num_layers);
      if (m.num_layers % n != 0)
        throw InputError(where, "--no-rope-freq", fmt::format("{} does not divide the {} layers (Megatron asserts it does)", n, m.num_layers));
      m.no_rope_layers = every_nth_layer(m.num_layers, n);
    }
    if (std::none_of(m.no_rope_layers.begin(), m.no_rope_layers.end(), [](int x) { return x == 1; })) m.no_rope_layers.clear();
  }
  m.activation = read_activation(f, where);
  m.glu_linear_offset = f.number("--glu-linear-offset", -1e6, 1e6).value_or(0.0);
  m.activation_clamp = f.number("--activation-func-clamp-value", 0, 1e6).value_or(0.0);
  // Megatron's default FFN width: 4h, or for SwiGLU 2/3 of it rounded down to a multiple of 64
  // (arguments.py), which keeps the parameter count of the 4h GELU MLP.
  const std::int64_t default_ffn = f.has("--swiglu") ? (4 * m.hidden_size * 2 / 3) / 64 * 64 : 4 * m.hidden_size;
  m.ffn_hidden_size = f.integer("--ffn-hidden-size", 1, kMaxDim).value_or(default_ffn);
  const std::string norm = f.text("--normalization").value_or("LayerNorm");
  if (norm == "LayerNorm") m.normalization = Normalization::layernorm;
  else if (norm == "RMSNorm") m.normalization = Normalization::rmsnorm;
  else throw InputError(where, "--normalization", "expected LayerNorm or RMSNorm, found \"" + norm + "\"");
  m.tied_embeddings = !f.has("--untie-embeddings-and-output-weights");
  std::string pos = f.text("--position-embedding-type").value_or("learned_absolute");
  if (pos == "yarn") pos = "rope";  // rotary with YaRN scaling (read_rope_scaling)
  if (f.has("--use-rotary-position-embeddings")) pos = "rope";
  // With rope, --no-position-embedding only says there is no learned table (Megatron-LM's
  // examples/mixtral gives both); before rope it meant no position embedding at all.
  if (f.has("--no-position-embedding") && pos != "rope") pos = "none";
  if (pos == "learned_absolute") m.position_embedding = PositionEmbedding::learned;
  else if (pos == "rope") m.position_embedding = PositionEmbedding::rope;
  else if (pos == "alibi") m.position_embedding = PositionEmbedding::alibi;  // Megatron-DeepSpeed (BLOOM)
  else if (pos == "none" && m.hybrid()) m.position_embedding = PositionEmbedding::none;  // Nemotron-H's attention layers
  else if (pos == "none" || pos == "relative") {
    m.position_embedding = PositionEmbedding::rope;  // no learned table: same parameters and time
    notes.push_back("position embedding \"" + pos + "\" has no learned table; modelled like rope, which costs the same");
  } else {
    throw InputError(where, "--position-embedding-type", "expected learned_absolute, rope, alibi, relative or none, found \"" + pos + "\"");
  }
  // Megatron skips rotary embedding per layer only where there is one (attention.py).
  if (pos != "rope") m.no_rope_layers.clear();
  // Megatron's dropout defaults are 0.1 for both.
  const double attention_dropout = f.number("--attention-dropout", 0, 1).value_or(0.1);
  const double hidden_dropout = f.number("--hidden-dropout", 0, 1).value_or(0.1);
  m.dropout = attention_dropout > 0 || hidden_dropout > 0;
  if (auto v = f.integer("--vocab-size", 1, std::int64_t{1} << 32)) {
    m.vocab_size = *v;
  } else if (auto padded = f.integer("--pad-vocab-size-to", 1, std::int64_t{1} << 32)) {
    m.vocab_size = *padded;  // Megatron-DeepSpeed: the embedding's rows, padding included
  } else {
    m.vocab_size = launch_tokenizer_vocab(f, where, base, tokenizer_vocab, m.source, notes);
  }
  if (f.has("--num-experts")) {
    MoeSpec moe;
    moe.num_experts = static_cast<int>(*f.integer("--num-experts", 1, 1 << 16));
    moe.top_k = static_cast<int>(f.integer("--moe-router-topk", 1, 1 << 16).value_or(2));
    moe.expert_ffn_hidden_size = f.integer("--moe-ffn-hidden-size", 1, kMaxDim).value_or(m.ffn_hidden_size);
    moe.shared_expert_ffn_hidden_size = f.integer("--moe-shared-expert-intermediate-size", 1, kMaxDim).value_or(0);
    moe.latent_size = f.integer("--moe-latent-size", 1, m.hidden_size).value_or(0);
    moe.shared_expert_gate = f.has("--moe-shared-expert-gate") && moe.shared_expert_ffn_hidden_size > 0;
    if (f.has("--moe-layer-freq")) {
      moe.layer_pattern = read_pattern(f, where, "--moe-layer-freq", m.num_layers, false);
      if (std::all_of(moe.layer_pattern.begin(), moe.layer_pattern.end(), [](int x) { return x == 1; })) moe.layer_pattern.clear();
    }
    moe.router_score_function = f.text("--moe-router-score-function").value_or("softmax");
    if (moe.router_score_function != "softmax" && moe.router_score_function != "sigmoid")
      throw InputError(where, "--moe-router-score-function", "expected softmax or sigmoid, found \"" + moe.router_score_function + "\"");
    moe.router_bias = f.has("--moe-router-enable-expert-bias");
    read_router_options(f, where, moe);
    m.moe = moe;
  }
  // Multi-token prediction: trained only when the launch asks for it (Megatron --mtp-num-layers).
  // A hybrid pattern's '/' parts count its MTP modules (read with the pattern above).
  if (m.hybrid_mtp_pattern.empty()) m.mtp_layers = static_cast<int>(f.integer("--mtp-num-layers", 0, 64).value_or(0));
  if (auto window = f.text("--window-size")) {
    // Megatron's (left, right) window, "(128, 0)" or "128,0" (arguments.py tuple_type strips the
    // parentheses); strata models causal windows: right must be 0 (or -1).
    std::string bare = *window;
    std::erase_if(bare, [](char c) { return c == '(' || c == ')'; });
    long left = 0, right = 0;
    char extra = 0;
    if (std::sscanf(bare.c_str(), " %ld , %ld %c", &left, &right, &extra) != 2 || left < 0 || left > kMaxDim ||
        (right != 0 && right != -1))
      throw InputError(where, "--window-size", "expected (left, 0) with a left window of 0 or more keys, found \"" + *window + "\"");
    m.sliding_window = left + 1;  // Hugging Face's window counts the query too (megatron_args.cpp)
    if (f.has("--window-attn-skip-freq")) {
      m.sliding_window_pattern = read_pattern(f, where, "--window-attn-skip-freq", m.num_layers, true);
      if (std::all_of(m.sliding_window_pattern.begin(), m.sliding_window_pattern.end(), [](int x) { return x == 1; }))
        m.sliding_window_pattern.clear();
    }
  }
  if (f.raw("--experimental-attention-variant") == std::optional<std::string>("gated_delta_net")) read_gdn_gpt_layers(f, where, m);
  return m;
}

// --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split: the embedding
// and the loss count as layers when Megatron-Core splits the model (transformer_block.py
// get_num_layers_to_build): num_layers + 1 or 2 slots over pp ranks, each rank's over its vpp model
// chunks, and the first (last) model chunk builds one decoder layer fewer. Written as the
// equivalent --pipeline-model-parallel-layout; false when the launch sets neither flag.
bool read_pipeline_split_with_embedding_or_loss(const Flags& f, const std::string& where, const ModelSpec& m, ParallelPlan& p,
                                                std::vector<std::string>& notes) {
  const int emb = f.has("--account-for-embedding-in-pipeline-split") ? 1 : 0;
  const int loss = f.has("--account-for-loss-in-pipeline-split") ? 1 : 0;
  if (emb + loss == 0) return false;
  const char* flag = emb ? "--account-for-embedding-in-pipeline-split" : "--account-for-loss-in-pipeline-split";
  // Megatron-Core TransformerConfig refuses them beside the other ways of splitting the layers.
  for (const char* other : {"--pipeline-model-parallel-layout", "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"})
    if (f.has(other)) throw InputError(where, flag, std::string("cannot be set with ") + other + " (Megatron-Core TransformerConfig)");
  const std::int64_t slots = static_cast<std::int64_t>(m.num_layers) + emb + loss;
  if (slots % p.pp != 0)
    throw InputError(where, flag, std::to_string(m.num_layers) + " layers plus the embedding and/or the loss (" + std::to_string(slots) +
                                      ") are not divisible by pipeline size " + std::to_string(p.pp) + " (Megatron-LM arguments.py)");
  const std::int64_t per_rank = slots / p.pp;
  std::int64_t vpp = 1;
  if (auto n = f.integer("--num-layers-per-virtual-pipeline-stage", 1, 1 << 20)) {
    if (per_rank % *n != 0)
      throw InputError(where, "--num-layers-per-virtual-pipeline-stage",
                       std::to_string(per_rank) + " layers per pipeline rank (the embedding and/or loss counted) are not divisible by " +
                           std::to_string(*n) + " layers per virtual stage");
    vpp = per_rank / *n;
  } else if (auto v = f.integer("--num-virtual-stages-per-pipeline-rank", 1, kMaxParallel)) {
    vpp = *v;
  }
  if (per_rank % vpp != 0)
    throw InputError(where, flag, std::to_string(per_rank) + " layers per pipeline rank (the embedding and/or loss counted) are not "
                                      "divisible by " + std::to_string(vpp) + " virtual stages (Megatron-Core TransformerConfig)");
  const std::int64_t per_chunk = per_rank / vpp, chunks = p.pp * vpp;
  if (per_chunk - emb < 0 || per_chunk - loss < 0 || (chunks == 1 && per_chunk - emb - loss < 0))
    throw InputError(where, flag, "not enough layers in the first or last model chunk");
  std::string layout;
  for (std::int64_t c = 0; c < chunks; ++c) {
    std::int64_t layers = per_chunk;
    if (c > 0) layout += '|';
    if (c == 0 && emb) {
      layout += 'E';
      --layers;
    }
    if (c == chunks - 1 && loss) --layers;
    if (layers > 0) layout += "t*" + std::to_string(layers);
    if (c == chunks - 1) layout += std::string(static_cast<std::size_t>(std::max(0, m.mtp_layers)), 'm') + (loss ? "L" : "");
  }
  apply_pipeline_layout(layout, where, flag, m, p, notes);
  return true;
}

void read_pipeline(const Flags& f, const std::string& where, const ModelSpec& m, ParallelPlan& p, std::vector<std::string>& notes) {
  const int L = m.num_layers;
  if (const auto hybrid = hybrid_pattern_flag(f); hybrid && hybrid->substr(0, hybrid->find('/')).find('|') != std::string::npos) {
    // A hybrid pattern's '|' segments are the model chunks, segment v * pp + r chunk v of pipeline
    // rank r (hybrid_layer_allocation.py select_pipeline_segment): the same split as a layout.
    const char* flag = hybrid_pattern_flag_name(f);
    std::string layout;
    std::size_t start = 0;
    const std::string main = hybrid->substr(0, hybrid->find('/'));
    for (std::size_t bar = main.find('|');; bar = main.find('|', start)) {
      const std::size_t len = (bar == std::string::npos ? main.size() : bar) - start;
      if (!layout.empty() || start > 0) layout += "|";
      if (len > 0) layout += "t*" + std::to_string(len);
      if (bar == std::string::npos) break;
      start = bar + 1;
    }
    layout += std::string(static_cast<std::size_t>(std::max(0, m.mtp_layers)), 'm');  // the MTP modules, on the last stage
    apply_pipeline_layout(layout, where, flag, m, p, notes);
    return;
  }
  if (read_pipeline_split_with_embedding_or_loss(f, where, m, p, notes)) return;
  if (auto layout = f.text("--pipeline-model-parallel-layout")) {
    apply_pipeline_layout(*layout, where, "--pipeline-model-parallel-layout", m, p, notes);
    return;
  }
  if (auto n = f.integer("--num-layers-per-virtual-pipeline-stage", 1, 1 << 20)) {
    if (L % (static_cast<std::int64_t>(p.pp) * *n) != 0)
      throw InputError(where, "--num-layers-per-virtual-pipeline-stage",
                       std::to_string(L) + " layers are not divisible by pipeline size " + std::to_string(p.pp) + " x " +
                           std::to_string(*n) + " layers per virtual stage");
    p.vpp = static_cast<int>(L / (p.pp * *n));
  }
  if (auto v = f.integer("--num-virtual-stages-per-pipeline-rank", 1, kMaxParallel)) p.vpp = static_cast<int>(*v);
  const auto first = f.integer("--decoder-first-pipeline-num-layers", 1, 1 << 20);
  const auto last = f.integer("--decoder-last-pipeline-num-layers", 1, 1 << 20);
  if (!first && !last) return;
  auto as_int = [](std::optional<std::int64_t> v) { return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt; };
  p.stage_layers = first_last_stage_layers(static_cast<int>(L), p.pp, as_int(first), as_int(last));
  if (p.stage_layers.empty()) {
    const int middle = p.pp - (first ? 1 : 0) - (last ? 1 : 0);
    const std::int64_t rest = L - first.value_or(0) - last.value_or(0);
    const char* flag = first ? "--decoder-first-pipeline-num-layers" : "--decoder-last-pipeline-num-layers";
    throw InputError(where, flag, "the other " + std::to_string(std::max(middle, 0)) + " pipeline stages cannot share the remaining " +
                                      std::to_string(rest) + " of " + std::to_string(L) + " layers evenly");
  }
}

void read_recompute(const Flags& f, const std::string& where, ParallelPlan& p, std::vector<std::string>& notes) {
  std::string granularity = f.text("--recompute-granularity").value_or("");
  if (granularity.empty() && f.has("--recompute-activations")) granularity = "selective";
  if (granularity.empty() && f.has("--checkpoint-activations")) granularity = "full";  // Megatron before 2022
  if (granularity.empty()) return;
  if (granularity == "selective") {
    p.recompute.granularity = RecomputeGranularity::selective;
    // Megatron's default module is the attention core (TransformerConfig recompute_modules).
    if (auto names = f.text("--recompute-modules")) {
      const auto modules = recompute_modules_from_string(*names);
      if (!modules)
        throw InputError(where, "--recompute-modules",
                         "expected core_attn, moe_act, layernorm, mla_up_proj, mlp, moe or shared_experts, found \"" + *names +
                             "\" (strata does not model the others)");
      p.recompute.modules = *modules;
    }
    // Only the grouped-GEMM experts (TEGroupedMLP) recompute their activation; Megatron's default
    // SequentialMLP builds plain MLPs that keep it, without a word.
    if ((p.recompute.modules & kRecomputeMoeAct) && f.has("--num-experts") && !f.has("--moe-grouped-gemm")) {
      notes.push_back("--recompute-modules moe_act without --moe-grouped-gemm: Megatron's SequentialMLP experts recompute nothing, "
                      "so the activation's input stays in memory");
      p.recompute.modules &= ~kRecomputeMoeAct;
      if (p.recompute.modules == 0) p.recompute = RecomputeSpec{};
    }
    return;
  }
  if (granularity != "full") throw InputError(where, "--recompute-granularity", "expected full or selective, found \"" + granularity + "\"");
  p.recompute.granularity = RecomputeGranularity::full;
  const std::string method = f.text("--recompute-method").value_or("uniform");
  std::int64_t n = f.integer("--recompute-num-layers", 1, 1 << 20).value_or(1);
  // Megatron's block method recomputes n layers in each model chunk; strata counts per stage.
  if (method == "block") n *= p.vpp;
  if (method == "block") {
    p.recompute.num_layers = static_cast<int>(n);
  } else if (method == "uniform") {
    p.recompute.num_layers = -1;
    if (n > 1)
      notes.push_back("--recompute-method uniform with --recompute-num-layers " + std::to_string(n) +
                      " checkpoints groups of layers; strata models a checkpoint at every layer (same recompute time, "
                      "slightly different activation memory)");
  } else {
    throw InputError(where, "--recompute-method", "expected uniform or block, found \"" + method + "\"");
  }
}

// How an MoE launch dispatches its tokens and balances its experts (Megatron-Core
// TransformerConfig: moe_token_dispatcher_type defaults to allgather, the flex dispatcher's
// backend to deepep).
void read_moe_runtime(const Flags& f, const std::string& where, RuntimeOptions& rt, std::vector<std::string>& notes) {
  const std::string dispatcher = f.text("--moe-token-dispatcher-type").value_or("allgather");
  if (dispatcher != "allgather" && dispatcher != "alltoall" && dispatcher != "flex")
    throw InputError(where, "--moe-token-dispatcher-type", "expected allgather, alltoall or flex, found \"" + dispatcher + "\"");
  const std::string backend = f.has("--moe-enable-deepep") ? "deepep" : f.text("--moe-flex-dispatcher-backend").value_or("deepep");
  if (backend != "deepep" && backend != "hybridep" && backend != "ncclep")
    throw InputError(where, "--moe-flex-dispatcher-backend", "expected deepep, hybridep or ncclep, found \"" + backend + "\"");
  // DeepEP and HybridEP send a token once per destination node and fan it out there.
  rt.moe_token_dedup = dispatcher == "flex" && backend != "ncclep";
  rt.moe_allgather_dispatch = dispatcher == "allgather";
  if (!f.has("--moe-token-dispatcher-type"))
    notes.push_back("no --moe-token-dispatcher-type: Megatron's default allgather dispatcher (every token of the expert-parallel "
                    "group all-gathered, the outputs reduce-scattered)");
  if (dispatcher == "flex" && backend == "ncclep")
    notes.push_back("flex dispatcher with the ncclep backend costed as the plain all-to-all dispatcher");
  rt.moe_a2a_overlap = f.has("--overlap-moe-expert-parallel-comm");
  rt.moe_shared_expert_overlap = f.has("--moe-shared-expert-overlap");
  rt.moe_grouped_gemm = f.has("--moe-grouped-gemm");
  // Random router logits (a benchmark setting) give every expert the mean token count; padding to
  // capacity gives every expert exactly the capacity.
  if (f.has("--moe-router-force-load-balancing")) rt.moe_load_imbalance = 1.0;
  rt.moe_pad_to_capacity = f.has("--moe-pad-expert-input-to-capacity") && rt.moe_capacity_factor > 0;
  if (rt.moe_pad_to_capacity) rt.moe_load_imbalance = std::max(1.0, rt.moe_capacity_factor);
  // HybridEP's (or NCCL-EP's) static per-rank budget; Megatron-Core refuses it with any other
  // backend (TransformerConfig.__post_init__).
  const double budget = f.number("--moe-expert-rank-capacity-factor", 0, 1024).value_or(0);
  if (budget > 0 && backend == "deepep")
    throw InputError(where, "--moe-expert-rank-capacity-factor",
                     "needs --moe-flex-dispatcher-backend hybridep or ncclep (Megatron-Core TransformerConfig), found deepep");
  if (budget > 0 && dispatcher != "flex")
    notes.push_back("--moe-expert-rank-capacity-factor acts only in the flex dispatcher; the " + dispatcher + " dispatcher ignores it");
  rt.moe_rank_capacity_factor = dispatcher == "flex" ? budget : 0;
  // Megatron-Core's paged stash: refused without a budget (TransformerConfig), and acting only in
  // the grouped experts' fused path (TEGroupedMLP with the op fuser), which stashes their saved
  // tensors in a pool of its factor x the mean tokens.
  if (f.has("--moe-paged-stash")) {
    if (!(budget > 0))
      throw InputError(where, "--moe-paged-stash", "needs --moe-expert-rank-capacity-factor (Megatron-Core TransformerConfig refuses it without)");
    const double factor = f.number("--moe-paged-stash-buffer-size-factor-cuda", -1024, 1024).value_or(kMegatronPagedStashFactor);
    if (!f.has("--moe-grouped-gemm") || !f.has("--use-transformer-engine-op-fuser"))
      notes.push_back("--moe-paged-stash acts in the grouped experts' fused path (--moe-grouped-gemm with "
                      "--use-transformer-engine-op-fuser); without it nothing is stashed");
    else if (rt.moe_rank_capacity_factor > 0 && factor != 0) {
      rt.moe_paged_stash_factor = factor;
      rt.moe_paged_stash_host_factor = f.number("--moe-paged-stash-buffer-size-factor-cpu", -1024, 1024).value_or(0);
    }
  }
}

// The optimizer and its state (Megatron's OptimizerConfig): which optimizer, the precision-aware
// FusedAdam's dtypes, CPU offload. Megatron's own checks of their combinations are check_plan's.
void read_optimizer(const Flags& f, const std::string& where, Precision precision, OptimizerSpec& o, RuntimeOptions& rt,
                    std::vector<std::string>& notes) {
  const std::string kind = f.text("--optimizer").value_or("adam");
  if (kind == "dist_muon") {
    o.kind = OptimizerKind::muon;  // deprecated spelling of muon with the distributed optimizer
  } else if (auto k = optimizer_kind_from_string(kind)) {
    o.kind = *k;
  } else if (kind == "soap" || kind == "adaptive_muon") {
    throw InputError(where, "--optimizer", "\"" + kind + "\" is not modelled (strata costs adam, sgd, muon and lion)");
  } else {
    throw InputError(where, "--optimizer", "expected adam, sgd, muon, dist_muon, lion, soap or adaptive_muon, found \"" + kind + "\"");
  }
  o.precision_aware = f.has("--use-precision-aware-optimizer");
  auto dtype = [&](const char* flag, std::initializer_list<StateDtype> allowed, StateDtype& dst) {
    const auto text = f.text(flag);
    if (!text) return;
    const auto d = state_dtype_from_string(*text);
    if (!d || std::find(allowed.begin(), allowed.end(), *d) == allowed.end()) {
      std::string names;
      for (StateDtype a : allowed) names += (names.empty() ? "" : ", ") + std::string(to_string(a));
      throw InputError(where, flag, "expected one of " + names + ", found \"" + *text + "\"");
    }
    dst = *d;
  };
  const auto all = {StateDtype::fp32, StateDtype::fp16, StateDtype::bf16, StateDtype::fp8};
  dtype("--main-params-dtype", {StateDtype::fp32, StateDtype::fp16}, o.main_params);
  dtype("--exp-avg-dtype", all, o.exp_avg);
  dtype("--exp-avg-sq-dtype", all, o.exp_avg_sq);
  StateDtype main_grads = StateDtype::fp32;
  dtype("--main-grads-dtype", {StateDtype::fp32, StateDtype::bf16}, main_grads);
  if (main_grads == StateDtype::bf16) {
    if (!o.precision_aware)
      throw InputError(where, "--main-grads-dtype", "bf16 main grads need --use-precision-aware-optimizer (Megatron OptimizerConfig)");
    if (f.has("--accumulate-allreduce-grads-in-fp32"))
      throw InputError(where, "--main-grads-dtype", "can only be fp32 with --accumulate-allreduce-grads-in-fp32 (Megatron's check)");
    // Megatron (arguments.py): bf16 main grads leave accumulate_allreduce_grads_in_fp32 off, a 2-byte buffer.
    if (precision == Precision::bf16 || precision == Precision::fp8) rt.grad_reduce_in_bf16 = true;
  }
  if (f.has("--optimizer-cpu-offload")) {
    o.cpu_offload_fraction = f.number("--optimizer-offload-fraction", 0, 1).value_or(1.0);  // Megatron's default: all of it
  } else if (f.has("--optimizer-offload-fraction")) {
    notes.push_back("--optimizer-offload-fraction without --optimizer-cpu-offload: nothing is offloaded");
  }
}

// Fine-grained activation offloading: the modules whose saved tensors go to the host, and the
// smallest tensor that goes. Megatron-Core asserts a module list when the switch is on, and ignores
// the list without it.
void read_activation_offload(const Flags& f, const std::string& where, ParallelPlan& p, std::vector<std::string>& notes) {
  const auto names = f.text("--offload-modules");
  if (!f.has("--fine-grained-activation-offloading")) {
    if (names) notes.push_back("--offload-modules without --fine-grained-activation-offloading offloads nothing (Megatron-Core reads it only with the switch)");
    return;
  }
  if (!names) throw InputError(where, "--fine-grained-activation-offloading", "needs --offload-modules (Megatron-Core asserts a module list)");
  const auto modules = offload_modules_from_string(*names);
  if (!modules)
    throw InputError(where, "--offload-modules",
                     "expected attn_norm, qkv_linear, core_attn, attn_proj, mlp_norm, expert_fc1, moe_act or fused_group_mlp, found \"" +
                         *names + "\" (strata does not model the others)");
  p.offload.modules = *modules;
  if (auto n = f.integer("--min-offloaded-tensor-size", 0, std::int64_t{1} << 50)) p.offload.min_tensor_elements = *n;
  if ((p.offload.modules & kOffloadFusedGroupMlp) && !f.has("--use-transformer-engine-op-fuser"))
    throw InputError(where, "--offload-modules", "fused_group_mlp needs --use-transformer-engine-op-fuser (Megatron-Core TransformerConfig)");
  // Only the grouped-GEMM experts (TEGroupedMLP) offload inside the MoE block; the default
  // SequentialMLP builds plain MLPs, which ignore the list, and Megatron starts without a word.
  if ((p.offload.modules & kOffloadExpertModules) && f.has("--num-experts") && !f.has("--moe-grouped-gemm")) {
    notes.push_back(fmt::format("--offload-modules {} without --moe-grouped-gemm: Megatron's SequentialMLP experts offload nothing, "
                                "so those tensors stay on the GPU",
                                fmt::join(offload_module_names(p.offload.modules & kOffloadExpertModules), " ")));
    p.offload.modules &= ~kOffloadExpertModules;
  }
  // TEGroupedMLP builds the fused grouped MLP of squared-ReLU experts only with Megatron's fused
  // weighted kernel (_is_fused_impl_supported); otherwise its assertion stops the model's build.
  if ((p.offload.modules & kOffloadFusedGroupMlp) && f.has("--squared-relu") && !f.has("--use-fused-weighted-squared-relu"))
    throw InputError(where, "--offload-modules",
                     "fused_group_mlp with --squared-relu experts needs --use-fused-weighted-squared-relu (Megatron-Core's "
                     "TEGroupedMLP asserts the op fuser can build them)");
}

}  // namespace

void apply_pipeline_layout(const std::string& layout, const std::string& where, const std::string& field, const ModelSpec& m,
                           ParallelPlan& p, std::vector<std::string>& notes) {
  const int L = m.num_layers;
  LayoutParser parser(layout, where, field);
  std::vector<int> virtual_stages = parser.parse();
  const int n = static_cast<int>(virtual_stages.size());
  // Megatron's PipelineParallelLayerLayout.validate_layer_layout: one 'm' per MTP layer.
  if (parser.mtp_layers() != m.mtp_layers)
    throw InputError(where, field,
                     "holds " + std::to_string(parser.mtp_layers()) + " MTP layers ('m'), the model trains " +
                         std::to_string(m.mtp_layers) + " (--mtp-num-layers; Megatron requires them equal)");
  if (parser.mtp_layers() > 0 && parser.mtp_stage() != n - 1)
    notes.push_back("the layout places the MTP layers before the last virtual stage; strata costs them on the last stage");
  if (n % p.pp != 0)
    throw InputError(where, field, std::to_string(n) + " stages for pipeline size " + std::to_string(p.pp) + " (expected a multiple of it)");
  p.vpp = n / p.pp;
  p.stage_layers.assign(p.pp, 0);
  for (int i = 0; i < n; ++i) p.stage_layers[i % p.pp] += virtual_stages[i];
  // Each rank's chunks as the layout gives them; kept in the plan only where chunk_layers' rule
  // would split the rank otherwise.
  p.chunk_layout.clear();
  for (int s = 0; s < p.pp; ++s)
    if (p.stage_layers[s] < 1) throw InputError(where, field, "pipeline rank " + std::to_string(s) + " holds no decoder layer");
  if (virtual_stage_layers(p, m) != virtual_stages) p.chunk_layout = virtual_stages;
  const int sum = std::accumulate(p.stage_layers.begin(), p.stage_layers.end(), 0);
  if (sum != L)
    throw InputError(where, field, "holds " + std::to_string(sum) + " decoder layers, the model has " + std::to_string(L) + " (--num-layers)");
  if (std::all_of(p.stage_layers.begin(), p.stage_layers.end(), [&](int l) { return l == p.stage_layers[0]; }) && p.vpp == 1)
    p.stage_layers.clear();
}

// Launches that train something other than a transformer of attention and MLP/MoE layers, or whose
// model is described outside the flags: refused, naming the script or flag, rather than costed as
// the GPT the remaining flags describe.
void refuse_unmodelled_models(const ScriptWords& script, const Flags& f, const std::string& where) {
  // (A script that names pretrain_gpt.py as well, say in an echo, is taken to run it.)
  std::string other_script;
  bool gpt = false;
  for (const std::string& w : script.words) {
    const std::string base = w.substr(w.find_last_of('/') == std::string::npos ? 0 : w.find_last_of('/') + 1);
    // pretrain_hybrid.py trains Megatron-Core's HybridModel (pretrain_mamba.py is its deprecated name).
    gpt = gpt || base == "pretrain_gpt.py" || base == "pretrain_hybrid.py" || base == "pretrain_mamba.py";
    for (const char* other : {"pretrain_bert.py", "pretrain_t5.py", "pretrain_vlm.py", "pretrain_retro.py",
                              "pretrain_vision_classify.py", "pretrain_ict.py"})
      if (base == other && other_script.empty()) other_script = base;
  }
  if (!gpt && !other_script.empty())
    throw InputError(where, "", "the launch runs " + other_script + "; strata costs decoder-only GPT models (pretrain_gpt.py)");
  for (const std::string& w : script.words) {
    const std::string base = w.substr(w.find_last_of('/') == std::string::npos ? 0 : w.find_last_of('/') + 1);
    if ((base == "pretrain_hybrid.py" || base == "pretrain_mamba.py") && !f.has("--hybrid-layer-pattern") && !f.has("--hybrid-override-pattern"))
      throw InputError(where, "--hybrid-layer-pattern",
                       base + " without --hybrid-layer-pattern (layers placed by the deprecated ratio flags) is not read: give the pattern");
  }
  if (auto v = f.raw("--experimental-attention-variant"); v && *v != "dsa" && *v != "gated_delta_net")
    throw InputError(where, "--experimental-attention-variant",
                     "\"" + *v + "\" is not modelled; strata costs softmax attention, gated DeltaNet (gated_delta_net) and DeepSeek "
                     "Sparse Attention (dsa)");
  if (f.raw("--experimental-attention-variant") == std::optional<std::string>("dsa") && !f.has("--multi-latent-attention"))
    throw InputError(where, "--experimental-attention-variant",
                     "dsa needs --multi-latent-attention: Megatron-Core's DSAttention is MLA's absorbed form");
  if (f.has("--heterogeneous-layers-config-path"))
    throw InputError(where, "--heterogeneous-layers-config-path", "per-layer shapes from a file are not read; strata costs uniform layers");
  if (f.has("--yaml-cfg"))
    throw InputError(where, "--yaml-cfg", "the arguments are in the YAML file, which strata does not read: pass them as flags");
}

// CUDA graphs: --cuda-graph-impl local|transformer_engine|full_iteration (the deprecated
// --enable-cuda-graph and --external-cuda-graph name the first two) with --cuda-graph-modules (the
// deprecated --cuda-graph-scope); no modules is the whole layer (arguments.py, TransformerConfig).
void read_cuda_graphs(const Flags& f, const std::string& where, bool moe, RuntimeOptions& rt, std::vector<std::string>& notes) {
  std::string impl = f.text("--cuda-graph-impl").value_or("none");
  if (f.has("--enable-cuda-graph")) impl = "local";
  if (f.has("--external-cuda-graph")) impl = "transformer_engine";
  if (impl == "none") return;
  if (impl != "local" && impl != "transformer_engine" && impl != "full_iteration")
    throw InputError(where, "--cuda-graph-impl", "expected none, local, transformer_engine or full_iteration, found \"" + impl + "\"");
  const std::string flag = f.has("--cuda-graph-modules") ? "--cuda-graph-modules" : "--cuda-graph-scope";
  const std::string names = impl == "full_iteration" ? std::string("full_iteration") : f.text(flag).value_or("");
  const auto modules = cuda_graph_modules_from_string(names);
  if (!modules)
    throw InputError(where, flag, "expected attn, mlp, moe, moe_router, moe_preprocess or mamba, found \"" + names + "\"");
  rt.cuda_graph_modules = *modules;
  // Megatron's own per-layer graphs capture the router and the dispatcher's preprocessing together
  // when either is named (TransformerConfig, cuda_graph_impl "local").
  if (impl == "local" && (*modules & (kCudaGraphMoeRouter | kCudaGraphMoePreprocess)))
    rt.cuda_graph_modules |= kCudaGraphMoeRouter | kCudaGraphMoePreprocess;
  if (moe && impl != "full_iteration")
    notes.push_back("CUDA graphs (--cuda-graph-impl " + impl +
                    "): each captured part of an MoE layer costs one graph replay of host time each way (a guess: calibration "
                    "host.cuda_graph_replay_s); the dispatcher's synchronisation and what follows it stay eager");
}

// A file whose commands give no Megatron flag but whose variables hold them is a fragment that
// another script sources and expands (Megatron-LM's examples/post_training/modelopt/conf/*/*.sh:
// MODEL_ARGS="--num-layers 36 ..." and nothing run): its flags are those variables' words, in the
// order the variables were first assigned.
ScriptWords flags_of_sourced_fragment(ScriptWords script, std::vector<std::string>& notes) {
  const auto has_flag = [](const std::vector<std::string>& words) { return std::any_of(words.begin(), words.end(), is_megatron_flag_word); };
  if (has_flag(script.words)) return script;
  std::string read;
  for (const std::string& var : script.assigned_in_order) {
    const std::vector<std::string> words = split_words(script.variables.at(var));
    if (!has_flag(words)) continue;
    for (const std::string& w : words) {
      script.words.push_back(w);
      script.word_variables.push_back({var});
      script.word_line.push_back(0);
      script.word_command.push_back(-1);  // one command of its own, outside the file's
    }
    read += (read.empty() ? "$" : ", $") + var;
  }
  if (!read.empty())
    notes.push_back("the file runs no command with Megatron flags; its flags were read from " + read +
                    " (a fragment that a launch sources and expands)");
  return script;
}

MegatronLaunch read_megatron_launch(const std::string& text, const std::string& where, const ModelSpec* base,
                                    const TokenizerVocabLookup& tokenizer_vocab) {
  MegatronLaunch out;
  const ScriptWords script = flags_of_sourced_fragment(split_flag_words(read_script_words(text, where)), out.notes);
  refuse_two_launches(script, where);
  const Flags f(script, where, out.notes);
  refuse_unmodelled_models(script, f, where);

  out.model = read_model(f, where, base, tokenizer_vocab, out.notes);
  // The MTP depths sharing one module (TransformerConfig.mtp_use_repeated_layer): without MTP
  // layers Megatron builds no module to share.
  out.model.mtp_repeated_layer = f.has("--mtp-use-repeated-layer") && out.model.mtp_layers > 0;
  // A hybrid pattern's symbols, checked as a model file's are (one per layer, layers strata costs).
  if (out.model.hybrid()) validate_model(out.model, where, hybrid_pattern_flag_name(f));

  TrainingSpec& t = out.training;
  t.seq_length = f.required("--seq-length", 1, kMaxDim, "the sequence length of every sample");
  if (!f.has("--max-position-embeddings") && out.model.max_seq_length == 0) out.model.max_seq_length = t.seq_length;
  if (auto mp = f.integer("--max-position-embeddings", 1, kMaxDim)) out.model.max_seq_length = *mp;
  t.global_batch_size = f.integer("--global-batch-size", 1, std::int64_t{1} << 40).value_or(0);
  if (f.has("--fp16") && f.has("--bf16")) throw InputError(where, "--bf16", "--fp16 and --bf16 are both given; Megatron takes one");
  if (f.has("--fp8-format")) {
    const std::string fmt = *f.text("--fp8-format");
    if (fmt != "hybrid" && fmt != "e4m3") throw InputError(where, "--fp8-format", "expected hybrid or e4m3, found \"" + fmt + "\"");
    t.precision = Precision::fp8;
    const std::string recipe = f.text("--fp8-recipe").value_or("delayed");  // Megatron's default
    const auto r = recipe_from_string(recipe);
    if (!r || *r == LowPrecisionRecipe::nvfp4)
      throw InputError(where, "--fp8-recipe", "expected delayed, tensorwise, blockwise or mxfp8, found \"" + recipe + "\"");
    t.recipe = *r;
  } else if (f.has("--fp4-format")) {
    const std::string recipe = f.text("--fp4-recipe").value_or("nvfp4");
    if (recipe != "nvfp4") throw InputError(where, "--fp4-recipe", "expected nvfp4, found \"" + recipe + "\"");
    t.precision = Precision::fp8;  // strata's low-precision GEMM path, with the NVFP4 recipe
    t.recipe = LowPrecisionRecipe::nvfp4;
  } else if (f.has("--bf16")) {
    t.precision = Precision::bf16;
  } else if (f.has("--fp16")) {
    t.precision = Precision::fp16;
  } else {
    t.precision = Precision::fp32;
    out.notes.push_back("neither --bf16 nor --fp16 is given: Megatron trains in fp32");
  }

  ParallelPlan& p = out.plan;
  p.tp = static_cast<int>(f.integer("--tensor-model-parallel-size", 1, kMaxParallel).value_or(1));
  p.pp = static_cast<int>(f.integer("--pipeline-model-parallel-size", 1, kMaxParallel).value_or(1));
  p.cp = static_cast<int>(f.integer("--context-parallel-size", 1, kMaxParallel).value_or(1));
  p.ep = static_cast<int>(f.integer("--expert-model-parallel-size", 1, kMaxParallel).value_or(1));
  // Megatron's expert tensor parallel size defaults to the tensor-parallel size.
  p.etp = out.model.moe ? static_cast<int>(f.integer("--expert-tensor-parallel-size", 1, kMaxParallel).value_or(p.tp)) : 1;
  p.dp = 0;
  // Megatron turns sequence parallelism off without tensor parallelism (validate_args: "Disabling
  // sequence parallelism because tensor model parallelism is disabled").
  p.sequence_parallel = f.has("--sequence-parallel") && p.tp > 1;
  if (f.has("--sequence-parallel") && p.tp == 1)
    out.notes.push_back("--sequence-parallel with tensor parallel size 1: Megatron disables it, and so does strata");
  p.micro_batch_size = static_cast<int>(f.required("--micro-batch-size", 1, kMaxParallel, "Megatron needs the micro-batch size"));
  if (f.raw("--experimental-attention-variant") == std::optional<std::string>("gated_delta_net")) {
    // The split flags count decoder layers; each is two of strata's layers (read_gdn_gpt_layers).
    ModelSpec decoder = out.model;
    decoder.num_layers /= 2;
    read_pipeline(f, where, decoder, p, out.notes);
    // Every model chunk keeps its decoder layers' pairs: the chunks as Megatron splits the decoder
    // layers, doubled.
    if (p.vpp > 1 && p.chunk_layout.empty()) p.chunk_layout = virtual_stage_layers(p, decoder);
    for (int& l : p.stage_layers) l *= 2;
    for (int& l : p.chunk_layout) l *= 2;
  } else {
    read_pipeline(f, where, out.model, p, out.notes);
  }
  // Interleaving runs groups of pp micro-batches per model chunk unless the launch says otherwise
  // (ModelParallelConfig.__post_init__); the schedule checks the group (check_plan says why).
  if (p.vpp > 1)
    p.microbatch_group = static_cast<int>(
        f.integer("--microbatch-group-size-per-virtual-pipeline-stage", 1, kMaxSimulatedChunks).value_or(p.pp));
  read_recompute(f, where, p, out.notes);
  read_activation_offload(f, where, p, out.notes);
  // Megatron-LM turns layer-level CPU offloading on with a layer count (validate_args).
  p.cpu_offload_layers = static_cast<int>(f.integer("--cpu-offloading-num-layers", 0, 1 << 20).value_or(0));
  p.distributed_optimizer = f.has("--use-distributed-optimizer");
  p.optimizer_instances = static_cast<int>(f.integer("--num-distributed-optimizer-instances", 1, kMaxParallel).value_or(1));
  if (f.has("--use-megatron-fsdp")) {
    // Megatron-FSDP shards what its strategy names over the data-parallel ranks (ZeRO-1/2/3), and
    // always runs its own distributed optimizer (arguments.py).
    const std::string strategy = f.text("--data-parallel-sharding-strategy").value_or("optim_grads_params");
    if (!apply_megatron_fsdp_strategy(strategy, p))
      throw InputError(where, "--data-parallel-sharding-strategy",
                       "expected no_shard, optim, optim_grads or optim_grads_params, found \"" + strategy + "\"");
  }

  RuntimeOptions& rt = out.runtime;
  if (f.has("--deepspeed")) {
    rt.framework = Framework::deepspeed;
    // Megatron-DeepSpeed's --zero-stage defaults to 1; the stage DeepSpeed runs is the one in the
    // --deepspeed_config JSON, which launch scripts usually fill from this flag.
    p.zero_stage = static_cast<int>(f.integer("--zero-stage", 0, 3).value_or(1));
    if (!f.has("--zero-stage")) out.notes.push_back("--deepspeed without --zero-stage: ZeRO stage 1 assumed (Megatron-DeepSpeed's default)");
    rt.overlap_grad_reduce = false;
    rt.overlap_param_gather = false;
    rt.fused_grad_accumulation = false;
  } else {
    // Megatron-LM runs these overlaps only when asked; a launch without the flag does not overlap.
    rt.overlap_grad_reduce = f.has("--overlap-grad-reduce");
    rt.overlap_param_gather = f.has("--overlap-param-gather");
    rt.fused_grad_accumulation = !f.has("--no-gradient-accumulation-fusion");
  }
  if (f.has("--use-torch-fsdp2")) {
    // PyTorch FSDP2 under Megatron shards parameters, gradients and optimizer state over the
    // data-parallel ranks (ZeRO-3), or keeps the gathered parameters from forward to backward
    // without resharding (ZeRO-2, --torch-fsdp2-no-reshard-after-forward).
    p.zero_stage = f.has("--torch-fsdp2-no-reshard-after-forward") ? 2 : 3;
    out.notes.push_back("--use-torch-fsdp2 costed as Megatron-FSDP's sharding (ZeRO-" + std::to_string(p.zero_stage) + ")");
  }
  // Megatron-FSDP with several instances is hybrid sharding (HSDP); FSDP2's is not modelled.
  if (p.optimizer_instances > 1 && f.has("--use-torch-fsdp2"))
    throw InputError(where, "--num-distributed-optimizer-instances",
                     "with FSDP2 (hybrid sharding) is not modelled; strata costs Megatron-FSDP's hybrid sharding");
  const std::string outer = f.text("--outer-dp-sharding-strategy").value_or("no_shard");
  if (outer != "no_shard" && outer != "optim")
    throw InputError(where, "--outer-dp-sharding-strategy", "expected no_shard or optim, found \"" + outer + "\"");
  p.outer_optimizer_sharding = outer == "optim" && p.optimizer_instances > 1 && p.zero_stage >= 2;
  rt.tp_comm_overlap = f.has("--tp-comm-overlap");
  rt.moe_capacity_factor = f.number("--moe-expert-capacity-factor", 0, 1024).value_or(0);
  if (out.model.moe) read_moe_runtime(f, where, rt, out.notes);
  read_cuda_graphs(f, where, out.model.moe.has_value(), rt, out.notes);
  rt.fp8_param_gather = f.has("--fp8-param-gather") || f.has("--fp4-param-gather");
  // 16-bit gradient reduction: asked for in bf16 (--grad-reduce-in-bf16), Megatron's default in fp16
  // (the main_grad buffer takes the parameters' dtype without --accumulate-allreduce-grads-in-fp32).
  rt.grad_reduce_in_bf16 = t.precision == Precision::fp16 ? !f.has("--accumulate-allreduce-grads-in-fp32") : f.has("--grad-reduce-in-bf16");
  read_optimizer(f, where, t.precision, t.optimizer, rt, out.notes);
  // Muon with the distributed optimizer, or its deprecated spelling dist_muon, runs Megatron's
  // layer-wise distributed optimizer (validate_args: use_layer_wise_distributed_optimizer): each
  // data-parallel rank owns whole weight matrices and their state, the gradient and parameter
  // buffers laid out so each rank's share is contiguous (layer_wise_optimizer.py). Costed as the
  // distributed optimizer: state sharded over the ranks, gradients reduce-scattered and parameters
  // all-gathered.
  if (t.optimizer.kind == OptimizerKind::muon && (p.distributed_optimizer || f.text("--optimizer") == std::optional<std::string>("dist_muon"))) {
    if (p.zero_stage == 0) p.distributed_optimizer = true;
    out.notes.push_back("Muon with the distributed optimizer: Megatron runs its layer-wise distributed optimizer (whole matrices "
                        "per rank), costed as the distributed optimizer's sharded state, reduce-scatter and all-gather");
  }
  if (auto cp = f.text("--cp-comm-type")) {
    // One type for every layer, or Megatron's per-layer list (nargs='+') when all its entries agree.
    const std::vector<std::string> types = split_words(*cp);
    const auto type = cp_comm_type_from_string(types.empty() ? "" : types.front());
    if (!type) throw InputError(where, "--cp-comm-type", "expected p2p, a2a, allgather or a2a+p2p, found \"" + *cp + "\"");
    if (std::any_of(types.begin(), types.end(), [&](const std::string& word) { return word != types.front(); }))
      throw InputError(where, "--cp-comm-type", "a different type per layer (\"" + *cp + "\") is not modelled; give one type");
    rt.cp_comm_type = *type;
  }
  if (f.has("--first-last-layers-bf16") && out.training.precision != Precision::fp8) {
    out.notes.push_back("--first-last-layers-bf16 without --fp8-format or --fp4-format: every layer runs in bf16 already");
  } else if (f.has("--first-last-layers-bf16")) {
    // Megatron's defaults: one layer at each end (TransformerConfig num_layers_at_start/end_in_bf16).
    rt.bf16_first_layers = static_cast<int>(f.integer("--num-layers-at-start-in-bf16", 0, 1 << 20).value_or(1));
    rt.bf16_last_layers = static_cast<int>(f.integer("--num-layers-at-end-in-bf16", 0, 1 << 20).value_or(1));
  }
  if (auto sizes = f.text("--hierarchical-context-parallel-sizes")) {
    // Megatron: [a2a group, p2p group], whose product is the CP size (arguments.py); TE's a2a+p2p
    // attention takes the all-to-all over the first and the ring over the second.
    const std::vector<std::string> words = split_words(*sizes);
    std::vector<int> v;
    for (const auto& w : words) {
      if (w.empty() || w.size() > 6 || !std::all_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; }) || std::stoi(w) < 1)
        throw InputError(where, "--hierarchical-context-parallel-sizes", "expected positive integers, found \"" + *sizes + "\"");
      v.push_back(std::stoi(w));
    }
    if (v.size() != 2)
      throw InputError(where, "--hierarchical-context-parallel-sizes",
                       "expected two sizes (the all-to-all group, then the p2p ring), found \"" + *sizes + "\"");
    if (static_cast<std::int64_t>(v[0]) * v[1] != p.cp)
      throw InputError(where, "--hierarchical-context-parallel-sizes",
                       fmt::format("the sizes multiply to {}, the context-parallel size is {}", static_cast<std::int64_t>(v[0]) * v[1], p.cp));
    rt.cp_a2a_size = v[0];
  }
  if (rt.cp_comm_type == CpCommType::a2a_p2p && rt.cp_a2a_size == 0 && p.cp > 1)
    throw InputError(where, "--hierarchical-context-parallel-sizes", "must be set when a2a+p2p is used in cp comm (Megatron's check)");
  rt.vocab_divisor = static_cast<int>(f.integer("--make-vocab-size-divisible-by", 1, RuntimeOptions::kMaxVocabDivisor)
                                          .value_or(RuntimeOptions::kDefaultVocabDivisor));
  // Megatron-Core with Transformer Engine picks flash or cuDNN fused attention unless told otherwise;
  // the local (pre-TE) implementation needs --use-flash-attn.
  const std::string backend = f.text("--attention-backend").value_or("auto");
  if (backend == "unfused" || backend == "local") rt.flash_attention = false;
  else if (backend == "flash" || backend == "fused" || backend == "auto")
    rt.flash_attention = f.text("--transformer-impl").value_or("transformer_engine") != "local" || f.has("--use-flash-attn") ||
                         f.has("--attention-backend");
  else throw InputError(where, "--attention-backend", "expected flash, fused, unfused, local or auto, found \"" + backend + "\"");
  // Which fused kernel: --attention-backend fused is cuDNN's, flash the flash-attn package (FA2);
  // the local implementation calls flash-attn; auto leaves it to Transformer Engine
  // (resolved_attention_kernel: cuDNN on Hopper and later).
  if (rt.flash_attention) {
    if (backend == "fused") rt.attention_kernel = AttentionKernel::cudnn;
    else if (backend == "flash" || f.text("--transformer-impl").value_or("transformer_engine") == "local")
      rt.attention_kernel = AttentionKernel::flash2;
  }
  // The loss: Megatron's eager fp32 cross entropy unless --cross-entropy-loss-fusion (impl native
  // by default). Megatron-LM refuses the Transformer Engine implementation (arguments.py: "disabled
  // due to stability issues"), so a launch asking for it would not start.
  const std::string ce_impl = f.text("--cross-entropy-fusion-impl").value_or("native");
  if (ce_impl != "native" && ce_impl != "te")
    throw InputError(where, "--cross-entropy-fusion-impl", "expected native or te, found \"" + ce_impl + "\"");
  if (f.has("--cross-entropy-loss-fusion") && ce_impl == "te")
    throw InputError(where, "--cross-entropy-fusion-impl",
                     "Megatron-LM refuses te with --cross-entropy-loss-fusion (Transformer Engine's cross entropy is disabled "
                     "for stability): use native, or omit --cross-entropy-loss-fusion");
  rt.cross_entropy = f.has("--cross-entropy-loss-fusion") ? CrossEntropyKernel::jit_fused : CrossEntropyKernel::eager;
  if (!rt.flash_attention) out.notes.push_back("attention runs unfused (materialized s x s scores), as the launch asks");
  else if (!f.has("--attention-backend") && !f.has("--use-flash-attn") && !f.has("--transformer-impl"))
    out.notes.push_back("attention assumed fused (flash/cuDNN), Megatron-Core's default with Transformer Engine; Megatron-LM "
                        "before 2023 ran it unfused unless given --use-flash-attn");

  // torchrun's world: optional, so an unresolved value is a note, not an error.
  auto torch_int = [&](std::initializer_list<const char*> names, std::optional<int>& dst) {
    for (const char* n : names) {
      auto v = f.raw(n);
      if (!v) continue;
      if (!v->empty() && v->size() <= 7 && std::all_of(v->begin(), v->end(), [](char c) { return c >= '0' && c <= '9'; }) && std::stoi(*v) > 0)
        dst = std::stoi(*v);
      else out.notes.push_back(std::string("torchrun ") + n + " \"" + *v + "\" is not a number strata can read");
    }
  };
  torch_int({"--nnodes", "--num_nodes"}, out.nnodes);
  torch_int({"--nproc-per-node", "--nproc_per_node", "--num_gpus"}, out.nproc_per_node);
  // torchrun (and torch.distributed.launch) run one node unless told otherwise: --nnodes defaults
  // to "1:1" (torch/distributed/run.py). DeepSpeed's launcher (--num_gpus) reads its hostfile
  // instead, so its node count stays unknown.
  const bool torch_processes = f.raw("--nproc-per-node") || f.raw("--nproc_per_node");
  if (out.nproc_per_node && torch_processes && !f.raw("--nnodes") && !f.raw("--num_nodes")) {
    out.nnodes = 1;
    out.notes.push_back("torchrun gives no --nnodes: one node, torchrun's default");
  }
  return out;
}

bool apply_megatron_fsdp_strategy(const std::string& strategy, ParallelPlan& p) {
  if (strategy == "optim_grads_params") p.zero_stage = 3;
  else if (strategy == "optim_grads") p.zero_stage = 2;
  else if (strategy == "optim") p.distributed_optimizer = true;
  else if (strategy != "no_shard") return false;
  if (p.zero_stage >= 2) p.distributed_optimizer = false;
  return true;
}

std::string megatron_flag_for(const std::string& plan_field) {
  static const std::pair<const char*, const char*> kFields[] = {
      {"tp", "--tensor-model-parallel-size"},     {"pp", "--pipeline-model-parallel-size"},
      {"cp", "--context-parallel-size"},          {"ep", "--expert-model-parallel-size"},
      {"vpp", "--num-layers-per-virtual-pipeline-stage"}, {"micro_batch_size", "--micro-batch-size"},
      {"global_batch_size", "--global-batch-size"}, {"stages", "--pipeline-model-parallel-size"},
      {"recompute_layers", "--recompute-num-layers"},
      {"microbatch_group_size_per_vp_stage", "--microbatch-group-size-per-virtual-pipeline-stage"}, {"dp", "--nnodes"}, {"gpus", "--nnodes"}, {"zero_stage", "--zero-stage"}};
  for (const auto& [field, flag] : kFields)
    if (plan_field == field) return flag;
  return plan_field;
}

}  // namespace strata
