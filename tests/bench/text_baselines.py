#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
# Baselines beside `kiln train --dataset text:DIR` for a folder per class of .txt files (e.g. the
# output of `kiln dataset import-text spamassassin|first-names`): the majority class and a
# bag-of-words logistic regression (scikit-learn, Debian's python3-sklearn). Identical texts are
# dropped (the first kept, in kiln's order: classes by name, files by path) and the split is
# stratified 80/20 with random_state = SEED (scikit-learn's shuffle, so not kiln's exact samples).
#   /usr/bin/python3 tests/bench/text_baselines.py DIR [--char] [--seed 0]
import argparse, os, sys

from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("--char", action="store_true", help="character n-grams (1-3) instead of words")
ap.add_argument("--seed", type=int, default=0)
a = ap.parse_args()
texts, labels, seen = [], [], set()
for label in sorted(os.listdir(a.dir)):
    root = os.path.join(a.dir, label)
    if label.startswith(".") or not os.path.isdir(root):
        continue
    files = sorted(os.path.join(p, f) for p, _, fs in os.walk(root) for f in fs if f.endswith(".txt"))
    for f in files:
        raw = open(f, "rb").read()
        try:
            t = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if not t.strip() or "\0" in t or t in seen:
            continue
        seen.add(t)
        texts.append(t)
        labels.append(label)
x_tr, x_te, y_tr, y_te = train_test_split(texts, labels, test_size=0.2, random_state=a.seed, stratify=labels)
majority = max(set(y_tr), key=y_tr.count)
print(f"{a.dir}: {len(texts)} texts after dropping duplicates; {len(x_tr)} train, {len(x_te)} test")
print(f"majority baseline ('{majority}'): {100 * sum(y == majority for y in y_te) / len(y_te):.2f}%")
vec = CountVectorizer(analyzer="char_wb", ngram_range=(1, 3), lowercase=True) if a.char else CountVectorizer(lowercase=True)
clf = LogisticRegression(max_iter=2000).fit(vec.fit_transform(x_tr), y_tr)
print(f"bag-of-{'char-n-grams' if a.char else 'words'} logistic regression: "
      f"{100 * clf.score(vec.transform(x_te), y_te):.2f}%")
