#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Baselines for a text classification folder (issue 16's SpamAssassin figure): the majority class
and a bag-of-words logistic regression (scikit-learn: CountVectorizer with lowercase word tokens,
binary counts, LogisticRegression C=1), on the texts of DIR/<class>/*.txt deduplicated as
`kiln train --dataset text:DIR` does (the first of identical texts kept) and split 80/20 stratified
by a fixed seed. Not a test. Usage: tests/bench/text_baselines.py DIR [--seed S]"""
import argparse
import pathlib

from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    texts, labels, seen = [], [], set()
    for cls in sorted(p for p in pathlib.Path(args.dir).iterdir() if p.is_dir()):
        for f in sorted(cls.rglob("*.txt")):
            t = f.read_text(encoding="utf-8", errors="replace")
            if t in seen:
                continue
            seen.add(t)
            texts.append(t)
            labels.append(cls.name)
    x_tr, x_te, y_tr, y_te = train_test_split(texts, labels, test_size=0.2, stratify=labels, random_state=args.seed)
    majority = max(set(y_tr), key=y_tr.count)
    print(f"{len(texts)} texts after deduplication, {len(x_tr)} train / {len(x_te)} test")
    print(f"majority class '{majority}': {100 * sum(y == majority for y in y_te) / len(y_te):.2f}% test accuracy")
    vec = CountVectorizer(lowercase=True, binary=True, min_df=2)
    clf = LogisticRegression(C=1.0, max_iter=2000).fit(vec.fit_transform(x_tr), y_tr)
    acc = 100 * sum(p == y for p, y in zip(clf.predict(vec.transform(x_te)), y_te)) / len(y_te)
    print(f"bag-of-words logistic regression ({len(vec.vocabulary_)} words): {acc:.2f}% test accuracy")


if __name__ == "__main__":
    main()
