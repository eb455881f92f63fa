"""Scores per second of `gui_r1_score` over the original's scored cases, and the slowest single
parse among adversarial completions of up to 100 KB. Prints medians of repeated runs (one core).

    python benchmarks/bench_rewards.py [--repeat 50] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from gui_r1_lite.actions import COMPATS, parse_completion
from gui_r1_lite.reference import reward_cases
from gui_r1_lite.rewards import gui_r1_score


def adversarial() -> dict[str, str]:
    item = "{'action': 'click', 'point': [1, 2], 'input_text': 'x'}"
    wrap = lambda body: f"<think>x</think><answer>{body}</answer>"  # noqa: E731
    return {
        "100 KB valid list": wrap("[" + ", ".join([item] * 1700) + "]"),
        "100 KB trailing junk": wrap(f"[{item}]" + " " * 100_000 + "x"),
        "10,000 nested brackets": wrap("[" * 10_000 + "]" * 10_000),
        "9**9**9": wrap("9**9**9"),
        "50,000-element list": wrap("[" + "1," * 50_000 + "]"),
        "'{' + 16,000 pairs, no '}'": wrap("{" + "[1, 2]" * 16_000),
        "16,000 '{[1,1]' lines": wrap("{[1,1]\n" * 16_000),
        "16,000 '{[1,1]' lines + '}'": wrap("{[1,1]\n" * 16_000 + "}"),
        "16,000 '{[1,1] ' + '}' at end": wrap("{" + "[1,1] " * 16_000 + "\n}"),
        "repeated </think><answer>": "<think>" + "</think><answer>" * 6_000,
        "100 KB of quotes": wrap("'input_text': '" * 6_500),
        "5,000-digit coordinate": wrap("[{'action': 'click', 'point': [" + "9" * 5000 + ", 1], 'input_text': 'x'}]"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=50, help="passes over the 240 cases per round")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    for flag, value in {"--repeat": args.repeat, "--rounds": args.rounds}.items():
        if value < 1:
            ap.error(f"{flag} must be at least 1, got {value}")
    cases = reward_cases()
    work = [(c["completion"], c["gt_action"], c["gt_bbox"], c["gt_input_text"]) for c in cases] * args.repeat

    for compat in COMPATS:
        rates = []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            for c in work:
                gui_r1_score(*c, compat=compat)
            rates.append(len(work) / (time.perf_counter() - t0))
        print(f"gui_r1_score {compat:8s}: {statistics.median(rates):10,.0f} scores/s "
              f"(median of {args.rounds} rounds x {len(work):,} scores)")

    worst = ("", 0.0)
    for name, text in adversarial().items():
        times = []
        for compat in COMPATS:
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                parse_completion(text, compat)
                times.append(time.perf_counter() - t0)
        t = statistics.median(times)
        print(f"  {name:28s} {len(text) / 1024:6.1f} KB  {t * 1000:7.3f} ms (median parse)")
        if t > worst[1]:
            worst = (name, t)
    print(f"slowest single parse among adversarial inputs: {worst[1] * 1000:.3f} ms "
          f"(median of {2 * args.rounds} tries, {worst[0]})")


if __name__ == "__main__":
    main()
