#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check_openmetrics: reads one scrape of record --metrics and checks it as a strict scraper would.
  --format openmetrics: prometheus_client's OpenMetrics 1.0 parser (which refuses a family declared twice,
      metadata after samples, a missing # EOF), and every family's TYPE once;
  --format text: prometheus_client's Prometheus text 0.0.4 parser, and every TYPE line once.
Then --expect NAME=VALUE (repeatable) checks a sample's value (the first sample of that name).
Prints the families it read. Exit 0 when all holds, 1 if not, 2 on bad input.
Run it with Debian's /usr/bin/python3 (python3-prometheus-client), not a pyenv python that lacks it."""
import argparse
import collections
import sys

try:
    from prometheus_client import parser as text_parser
    from prometheus_client.openmetrics import parser as om_parser
except ImportError:
    print("check_openmetrics: prometheus_client is not installed (python3-prometheus-client)")
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--format", choices=("openmetrics", "text"), required=True)
    ap.add_argument("--expect", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("scrape", help="the scrape's body, a file")
    a = ap.parse_args()
    with open(a.scrape, encoding="utf-8") as f:
        text = f.read()

    # TYPE lines: one per family, in either format
    types = collections.Counter(l.split()[2] for l in text.splitlines() if l.startswith("# TYPE "))
    twice = sorted(n for n, c in types.items() if c > 1)
    if twice:
        print("check_openmetrics: TYPE declared more than once: " + ", ".join(twice))
        return 1

    parse = om_parser.text_string_to_metric_families if a.format == "openmetrics" else \
        text_parser.text_string_to_metric_families
    try:
        families = list(parse(text))
    except ValueError as e:
        print("check_openmetrics: the %s parser refuses it: %s" % (a.format, e))
        return 1
    names = [f.name for f in families]
    if len(set(names)) != len(names):
        print("check_openmetrics: families repeated: %s" % names)
        return 1

    samples = {}
    for f in families:
        for s in f.samples:
            samples.setdefault(s.name, s.value)
    for e in a.expect:
        name, _, want = e.partition("=")
        if name not in samples:
            print("check_openmetrics: no sample %s" % name)
            return 1
        if float(want) != samples[name]:
            print("check_openmetrics: %s is %r, expected %s" % (name, samples[name], want))
            return 1
    print("%s: %d families: %s" % (a.format, len(families), " ".join("%s(%s)" % (f.name, f.type) for f in families)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
