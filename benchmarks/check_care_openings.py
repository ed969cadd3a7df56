"""How much the symptom tier's words give away: a word-level classifier on the customer's
opening and first reply (issue 41, item 5: at most 0.40; chance 1/12).

For every care intent, ``--seeds`` episodes in each language (symptom tier): the opening, and
the customer's reply to the agent's first message. A multinomial naive Bayes over the words
(folded as :func:`telcoenv.text.normalize` folds them; Laplace smoothing) is trained and
scored by 5-fold cross-validation (a fixed shuffle), on the opening alone and on the opening
with the first reply, for each of these first messages:

* ``line``: "Could you give me your line number, please?" (what every agent must ask first);
* ``noticed``: "When did you first notice this?" (a follow-up of the tier);
* ``clarify``: "Could you tell me more about what you need?" (a message that asks for nothing
  the customer can give: they say what they see and want, which names the intent or the
  members the data tells apart, by design: a question must be stated to be answered).

Run: ``python benchmarks/check_care_openings.py --seeds 40`` (about a minute on 2 cores).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import re

import numpy as np

import telcoenv
from telcoenv.domains.bss import bss_domain
from telcoenv.text import normalize

FIRST_MESSAGES = {
    "line": "Could you give me your line number, please?",
    "noticed": "When did you first notice this?",
    "clarify": "Could you tell me more about what you need?",
}
FOLDS = 5


def episodes(seeds: int, first: str) -> list[tuple[str, str, str]]:
    """(intent key, opening, first reply) of every care intent, ``seeds`` per language."""
    rows = []
    for intent in bss_domain().catalog.intents:
        env = telcoenv.make(intent.env_name, embedder=None, difficulty="symptom")
        for seed in range(seeds):
            for lang in ("en", "ar"):
                _, info = env.reset(seed=seed, options={"lang": lang})
                opening = info["messages"][-1]["content"]
                rows.append((intent.key, opening, env.step(first)[0]))
        env.close()
    return rows


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", normalize(text))


class NaiveBayes:
    """Multinomial naive Bayes over words, Laplace-smoothed."""

    def __init__(self, texts: list[str], labels: list[str]) -> None:
        self.counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.prior: collections.Counter = collections.Counter(labels)
        for text, label in zip(texts, labels, strict=True):
            self.counts[label].update(_words(text))
        self.vocabulary = len({w for c in self.counts.values() for w in c})
        self.totals = {label: sum(c.values()) for label, c in self.counts.items()}

    def score(self, label: str, words: list[str]) -> float:
        counts, total = self.counts[label], self.totals[label] + self.vocabulary
        prior = math.log(self.prior[label])
        return prior + sum(math.log((counts[w] + 1) / total) for w in words)

    def predict(self, text: str) -> str:
        words = _words(text)
        return max(sorted(self.counts), key=lambda label: self.score(label, words))


def accuracy(texts: list[str], labels: list[str]) -> float:
    """Naive Bayes accuracy, 5-fold cross-validated (a fixed shuffle)."""
    order = np.random.default_rng(0).permutation(len(texts))
    right = 0
    for fold in range(FOLDS):
        held = set(order[fold::FOLDS].tolist())
        train = [i for i in range(len(texts)) if i not in held]
        model = NaiveBayes([texts[i] for i in train], [labels[i] for i in train])
        right += sum(model.predict(texts[i]) == labels[i] for i in held)
    return right / len(texts)


def measure(seeds: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    for name, first in FIRST_MESSAGES.items():
        rows = episodes(seeds, first)
        labels = [key for key, _, _ in rows]
        if "opening" not in figures:
            figures["opening"] = accuracy([opening for _, opening, _ in rows], labels)
        figures[f"opening+{name}"] = accuracy([f"{o} {r}" for _, o, r in rows], labels)
    figures["chance"] = 1 / len(bss_domain().catalog.intents)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = measure(args.seeds)
    if args.json:
        print(json.dumps({k: round(v, 4) for k, v in figures.items()}))
        return
    print(f"| words read (symptom tier, {args.seeds} seeds x 2 languages) | accuracy |")
    print("|---|---|")
    for name, value in figures.items():
        print(f"| {name} | {value:.3f} |")


if __name__ == "__main__":
    main()
