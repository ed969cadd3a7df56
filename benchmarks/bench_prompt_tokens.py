"""What the first request of an episode costs in tokens, per domain, language, intent list and
tool format, counted with the Qwen2.5 tokenizer (telcoenv.tokens; exact against a llama.cpp
server running Qwen2.5-Coder-1.5B-Instruct).

    python benchmarks/bench_prompt_tokens.py

"instructions + tools" is the system prompt and the tool list as sent; "first request" is the
whole prompt as Qwen2.5's chat template lays it out (system turn with the tool signatures, the
counterpart's opening, the assistant header), the mean over 20 episodes.
"""

from __future__ import annotations

import json
import statistics

import telcoenv
from telcoenv.tokens import chat_prompt, token_counter

DOMAINS = {"network": "troubleshooting", "bss": "customer_care"}


def main() -> None:
    count = token_counter()
    print("| domain | lang | intent list | format | instructions + tools | first request |")
    print("|---|---|---|---|---|---|")
    for domain, env_name in DOMAINS.items():
        for lang in ("en", "ar"):
            for intent_list in (True, False):
                for tool_format in ("full", "compact"):
                    env = telcoenv.make(
                        env_name,
                        lang=lang,
                        embedder=None,
                        intent_list=intent_list,
                        tool_format=tool_format,
                    )
                    firsts, fixed = [], 0
                    for seed in range(20):
                        _, info = env.reset(seed=seed)
                        tools = "".join(json.dumps(t, ensure_ascii=False) for t in info["tools"])
                        fixed = count(info["messages"][0]["content"]) + count(tools)
                        firsts.append(count(chat_prompt(info["messages"], info["tools"])))
                    env.close()
                    listed = "with" if intent_list else "without"
                    first = statistics.mean(firsts)
                    cells = (domain, lang, listed, tool_format, f"{fixed:,}", f"{first:,.0f}")
                    print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
