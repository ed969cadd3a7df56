"""TelcoAgent-Metrics: IRA, MSC, EAP, SAS, RA, and blueprint reliability (GPC-0, GPC-1, SD, BRS).

Every metric is a pure function with its formula in its docstring; the environment and the
evaluation tools only compose them.
"""

from telcoenv.embeddings import (
    Embedder,
    SentenceTransformerEmbedder,
    USEEmbedder,
    e5_embedder,
    english_embedder,
    get_embedder,
    multilingual_embedder,
)
from telcoenv.metrics.reliability import (
    BRS_WEIGHTS,
    BlueprintReliability,
    BRSWeights,
    ChainRecord,
    ReliabilityReport,
    brs,
    gpc0,
    gpc1,
    reliability,
    sd,
)
from telcoenv.metrics.scoring import EpisodeMetrics, score_episode, score_episodes
from telcoenv.metrics.semantic import ira, ra, similarities
from telcoenv.metrics.sequence import eap, lcs_length, levenshtein, msc, sas

__all__ = [
    "BRS_WEIGHTS",
    "BRSWeights",
    "BlueprintReliability",
    "ChainRecord",
    "Embedder",
    "EpisodeMetrics",
    "ReliabilityReport",
    "SentenceTransformerEmbedder",
    "USEEmbedder",
    "brs",
    "e5_embedder",
    "eap",
    "english_embedder",
    "get_embedder",
    "gpc0",
    "gpc1",
    "ira",
    "lcs_length",
    "levenshtein",
    "msc",
    "multilingual_embedder",
    "ra",
    "reliability",
    "sas",
    "score_episode",
    "score_episodes",
    "sd",
    "similarities",
]
