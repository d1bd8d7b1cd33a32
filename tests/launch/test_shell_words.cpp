#include <doctest/doctest.h>

#include <random>

#include "launch/shell_words.h"
#include "test_util.h"

using namespace strata;
namespace test = strata::test;

namespace {

using Words = std::vector<std::string>;

Words words_of(const std::string& text) { return read_script_words(text).words; }

}  // namespace

TEST_SUITE("launch") {
TEST_CASE("shell_words") {
  SUBCASE("line continuations, quotes and comments") {
    CHECK(words_of("torchrun --a 1 \\\n    --b \"x y\" --c 'z $A' # --d 2\n--e") ==
          Words{"torchrun", "--a", "1", "--b", "x y", "--c", "z $A", "--e"});
    CHECK(words_of("a#b c\r\n") == Words{"a#b", "c"});           // '#' inside a word is not a comment
    CHECK(words_of("x \\\r\n y") == Words{"x", "y"});             // CRLF continuation
    CHECK(words_of("p;q&&r|s (t) <u >v") == Words{"p", "q", "r", "s", "t", "u", "v"});
    CHECK(words_of("\"a\\\"b\" c\\ d") == Words{"a\"b", "c d"});
  }
  SUBCASE("assignments are recorded, expanded in order and not words") {
    const ScriptWords s = read_script_words("TP=8\nexport PP=${PP:-4}\nX=$((TP * PP / 2 + (1 - 1)))\nY=\"$TP$PP\"\n"
                                            "--tp $TP --pp ${PP} --x $X --y $Y");
    CHECK(s.variables.at("TP") == "8");
    CHECK(s.variables.at("PP") == "4");
    CHECK(s.variables.at("X") == "16");
    CHECK(s.variables.at("Y") == "84");
    CHECK(s.words == Words{"export", "--tp", "8", "--pp", "4", "--x", "16", "--y", "84"});
  }
  SUBCASE("which variables went into each word, and every value each was assigned") {
    const ScriptWords s = read_script_words("A=1\nA=2\nB=x\n$A-$B ${C:-$B} $((A+1)) plain ${A}");
    REQUIRE(s.words == std::vector<std::string>{"2-x", "x", "3", "plain", "2"});
    CHECK(s.word_variables[0] == std::vector<std::string>{"A", "B"});
    CHECK(s.word_variables[1] == std::vector<std::string>{"B"});
    CHECK(s.word_variables[2] == std::vector<std::string>{"A"});
    CHECK(s.word_variables[3].empty());
    CHECK(s.word_variables[4] == std::vector<std::string>{"A"});
    CHECK(s.assignments.at("A") == std::vector<std::string>{"1", "2"});
    CHECK(s.assignments.at("B") == std::vector<std::string>{"x"});
  }
  SUBCASE("defaults: :- and - differ on an empty variable, := assigns") {
    // ${E-b} of the empty E is empty, and an unquoted empty expansion is no word (bash drops it).
    const ScriptWords s = read_script_words("E=\n${E:-a} ${E-b} ${U-c} ${V:=d} $V");
    CHECK(s.words == Words{"a", "c", "d", "d"});
    // The default word goes through quote removal (Megatron-LM's examples/megatron_fsdp launch:
    // SHARDING_STRATEGY=${SHARDING_STRATEGY:-"optim_grads_params"}).
    const ScriptWords q = read_script_words("S=${S:-\"optim\"}\nT=${T:-'$x'}\n$S $T");
    CHECK(q.words == Words{"optim", "$x"});
  }
  SUBCASE("the last assignment wins; arrays contribute their words") {
    CHECK(words_of("N=1\nN=2\nARGS=(\n  --num-layers $N\n)\ncmd ${ARGS[@]}") == Words{"--num-layers", "2", "cmd", "${ARGS[@]}"});
  }
  SUBCASE("an unquoted variable splits into words on blanks, as bash splits it") {
    // Megatron-LM's examples/mamba/train.sh: options=" \ --flag value \ ..." then ${options}.
    CHECK(words_of("H=64\nopts=\" \\\n  --num-layers 4 \\\n  --hidden-size ${H}\"\ntorchrun a.py ${opts} --bf16") ==
          Words{"torchrun", "a.py", "--num-layers", "4", "--hidden-size", "64", "--bf16"});
    CHECK(words_of("V=\"a  b\"\npre$V-post \"$V\" --x=$V") == Words{"prea", "b-post", "a  b", "--x=a", "b"});
    CHECK(words_of("E=\nB=\" \"\ncmd $E $B x \"$E\"") == Words{"cmd", "x", ""});  // empty fields vanish, "" stays
    CHECK(words_of("V=\"-i -4\"\nX=$V\ncmd $(hostname $V) $((1 + 2))") == Words{"cmd", "$(hostname $V)", "3"});
    CHECK(read_script_words("V=\"-i -4\"\nX=$V\n").variables.at("X") == "-i -4");  // an assignment is not split
  }
  SUBCASE("a word's variables include those inside the variables it expands") {
    // The branches of a case assign TP twice; the flags string that uses it knows it.
    const ScriptWords s = read_script_words("TP=1\nTP=4\nopts=\"--tp ${TP} --lr 0.1\"\nall=\"$opts --bf16\"\n"
                                            "cmd $all \"$opts\"");
    REQUIRE(s.words == Words{"cmd", "--tp", "4", "--lr", "0.1", "--bf16", "--tp 4 --lr 0.1"});
    CHECK(s.word_variables[1] == std::vector<std::string>{"all", "opts"});
    CHECK(s.word_variables[2] == std::vector<std::string>{"all", "opts", "TP"});
    CHECK(s.word_variables[4] == std::vector<std::string>{"all", "opts"});
    CHECK(s.word_variables[5] == std::vector<std::string>{"all"});
    CHECK(s.word_variables[6] == std::vector<std::string>{"opts", "TP"});
  }
  SUBCASE("what cannot be resolved stays as written") {
    const Words w = words_of("--a $UNSET --b ${UNSET} --c $(hostname) --d `hostname` --e $((1/0)) --f $((N+1)) --g $1 --h $");
    CHECK(w == Words{"--a", "$UNSET", "--b", "${UNSET}", "--c", "$(hostname)", "--d", "`hostname`", "--e", "$((1/0))", "--f",
                     "$((N+1))", "--g", "$1", "--h", "$"});
    for (std::size_t i = 1; i < w.size(); i += 2) CHECK_MESSAGE(has_unresolved_expansion(w[i]), w[i]);
    CHECK_FALSE(has_unresolved_expansion("8"));
  }
  SUBCASE("arithmetic: precedence, unary minus, overflow is unresolved") {
    CHECK(words_of("A=3\n$((2+A*4)) $((-(A-5))) $((7%4)) $((9223372036854775807+1)) $((99999999999999999999))") ==
          Words{"14", "2", "3", "$((9223372036854775807+1))", "$((99999999999999999999))"});
  }
  SUBCASE("arithmetic constants as bash reads them: leading 0 octal, 0x hex, BASE#digits") {
    CHECK(words_of("$(( 040 )) $((0x10)) $((0X1f)) $((2#101)) $((10#08)) $((36#z)) $((0)) $((00))") ==
          Words{"32", "16", "31", "5", "8", "35", "0", "0"});
    // bash: "value too great for base"; strata leaves them unresolved, which callers refuse.
    CHECK(words_of("$(( 08 )) $((09)) $((2#102)) $((1#1)) $((37#1)) $((0x))") ==
          Words{"$(( 08 ))", "$((09))", "$((2#102))", "$((1#1))", "$((37#1))", "$((0x))"});
    CHECK(words_of("N=010\n$((N * 2))") == Words{"16"});  // a variable's value is read the same way
  }
  SUBCASE("here-documents are their command's input, not words") {
    CHECK(words_of("cat <<EOF > notes\n--tp 8\nEOF\n--pp 2") == Words{"cat", "notes", "--pp", "2"});
    CHECK(words_of("cat <<'END' | tee x\n--tp 8\n  END\nEND\n--a") == Words{"cat", "tee", "x", "--a"});
    CHECK(words_of("cat <<-\"E\"\n\t--tp 8\n\tE\n--b") == Words{"cat", "--b"});  // <<- strips leading tabs
    CHECK(words_of("cat <<A <<B\n1\nA\n2\nB\n--c") == Words{"cat", "--c"});
    CHECK(words_of("cat <<EOF\n--never-closed") == Words{"cat"});
    CHECK(words_of("x=$((1 << 2)) y <<<word") == Words{"y", "word"});  // a shift and a here-string are not here-documents
  }
  SUBCASE("each word's line and command") {
    const ScriptWords s = read_script_words("a b\nc; d | e \\\n f\n\n'g\nh' i");
    REQUIRE(s.words == Words{"a", "b", "c", "d", "e", "f", "g\nh", "i"});
    CHECK(s.word_line == std::vector<int>{1, 1, 2, 2, 2, 3, 6, 6});
    CHECK(s.word_command[0] == s.word_command[1]);
    CHECK(s.word_command[2] != s.word_command[3]);  // ';'
    CHECK(s.word_command[3] != s.word_command[4]);  // '|'
    CHECK(s.word_command[4] == s.word_command[5]);  // a continued line is one command
    CHECK(s.word_command[5] != s.word_command[6]);
  }
  SUBCASE("the expansion budget: a variable doubled again and again is refused") {
    std::string text = "A=" + std::string(64, 'x') + "\n";
    for (int i = 0; i < 9; ++i) text += "A=$A$A$A$A$A$A$A$A\n";
    const std::string msg = test::input_error([&] { read_script_words(text, "boom.sh"); });
    CHECK(msg.find("boom.sh: the script's variables expand to more than 4 MiB") != std::string::npos);
    // Within the budget the same construction is read.
    CHECK(read_script_words("A=xy\nA=$A$A\nA=${A}$A\n$A").words == Words{"xyxyxyxy"});
  }
  SUBCASE("unterminated quotes and brackets end at the end of the text without crashing") {
    CHECK(words_of("--a 'open") == Words{"--a", "open"});
    CHECK(words_of("--a \"open $X") == Words{"--a", "open $X"});
    CHECK(words_of("--a ${open") == Words{"--a", "${open"});
    CHECK(words_of("--a $((1+") == Words{"--a", "$((1+"});
  }
  SUBCASE("arbitrary bytes never crash the reader") {
    std::mt19937 rng(7);
    const std::string alphabet = "ab=$(){}[]'\"\\#;|&*+-/%:\n\r\t 019_";
    for (int i = 0; i < 2000; ++i) {
      std::string text(rng() % 64, ' ');
      for (char& c : text) c = alphabet[rng() % alphabet.size()];
      (void)read_script_words(text);
    }
  }
}
}
