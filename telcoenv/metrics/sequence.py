"""Tool-sequence alignment: MSC, EAP and SAS (TelcoAgent-Metrics, verified formulas).

Tool names compare as exact strings: a hallucinated or misspelled tool (``kpi_etimeseries``) is
a different token. These formulas reproduce all 23,520 per-sample scores the TelcoAgent-Bench
authors published.
"""

from __future__ import annotations

from collections.abc import Sequence


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences (gaps allowed).

    >>> lcs_length(["oss_query", "kpi_timeseries", "optimize_cell"],
    ...            ["kpi_timeseries", "oss_query", "optimize_cell"])
    2
    """
    if not a or not b:
        return 0
    previous = [0] * (len(b) + 1)
    for token in a:
        current = [0]
        for j, other in enumerate(b, start=1):
            current.append(
                previous[j - 1] + 1 if token == other else max(previous[j], current[j - 1])
            )
        previous = current
    return previous[-1]


def levenshtein(a: Sequence[str], b: Sequence[str]) -> int:
    """Token-level edit distance: insertions, deletions and substitutions of whole tool names.

    >>> levenshtein(["oss_query", "optimize_cell"],
    ...             ["oss_query", "kpi_timeseries", "optimize_cell"])
    1
    """
    if not a:
        return len(b)
    if not b:
        return len(a)
    previous = list(range(len(b) + 1))
    for i, token in enumerate(a, start=1):
        current = [i]
        for j, other in enumerate(b, start=1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (token != other))
            )
        previous = current
    return previous[-1]


def msc(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """Mandatory Step Coverage: ``MSC = LCS(P, G) / |G|``.

    The share of the gold steps the agent performed in the gold order (other calls in between
    are allowed). An empty gold chain is an error.

    >>> msc(["oss_query", "kpi_timeseries", "neighbor_audit", "create_ticket"],
    ...     ["oss_query", "kpi_timeseries", "optimize_cell"])
    0.6666666666666666
    """
    if not gold:
        raise ValueError("msc: the gold chain is empty")
    return lcs_length(predicted, gold) / len(gold)


def eap(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """Extra Action Penalty: ``EAP = 1 - max(0, n - m) / n`` with ``n = |P|``, ``m = |G|``.

    Only the length excess of the prediction over the gold chain is penalised (``= min(1, m / n)``);
    a shorter prediction gets 1.0. An empty prediction (n = 0) has no extra action and gets 1.0,
    as in the published re-implementation; its MSC, and so its SAS, is 0.

    >>> eap(["oss_query", "kpi_timeseries", "neighbor_audit", "create_ticket"],
    ...     ["oss_query", "kpi_timeseries", "optimize_cell"])
    0.75
    >>> eap([], ["oss_query"])
    1.0
    """
    n, m = len(predicted), len(gold)
    if n == 0:
        return 1.0
    return 1.0 - max(0, n - m) / n


def sas(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """Sequence Alignment Score: ``SAS = MSC * EAP`` (plain product).

    >>> sas(["oss_query", "kpi_timeseries", "neighbor_audit", "create_ticket"],
    ...     ["oss_query", "kpi_timeseries", "optimize_cell"])
    0.5
    """
    return msc(predicted, gold) * eap(predicted, gold)
