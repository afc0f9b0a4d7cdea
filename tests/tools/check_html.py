#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_html: opens a page `hvmtrace report --html` wrote in headless Chromium (tests/tools/cdp.py) and
checks what it shows against the trace's own intervals as `hvmtrace export --jsonl` gives them (the
oracle: another reader of the same trace) and its summaries against `hvmtrace report --json` of the same
range (--report-all, --report-range), with real mouse events:
  - the summary of the whole trace (intervals, page-interval sums and peaks, distinct pages, bytes);
  - hover over each --page: the tooltip's GFN, host channel (from `export --meta`'s layouts) and in how
    many intervals of the selected range the page was written and accessed;
  - click on it: its history, interval by interval;
  - a drag across the working-set chart from interval --range-from to --range-to: the selected range, the
    summary and the hover counts recomputed for it;
  - playback runs through the range's intervals and ends on the static display;
  - with report --html --by: the owner each --owner page's hover names, the legend's written page-intervals.
Screenshots go to --shots. Prints the time from navigation to the drawn page. Exit 0 when all holds, 1 if
not, 2 on bad input."""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser, CdpError  # noqa: E402

failures = []


def check(what, expected, got):
    ok = expected == got
    print("%s: %s (expected %r, shown %r)" % ("ok" if ok else "FAIL", what, expected, got))
    if not ok:
        failures.append(what)


def load_oracle(jsonl, meta):
    ivs = [json.loads(line) for line in open(jsonl)]
    m = json.load(open(meta))
    extents = []
    for layout in m.get("layouts", []):
        ps = layout["page_size"]
        for s in layout["slots"]:
            for e in s.get("extents", []):
                if e.get("channel"):
                    extents.append((e["gpa"] // ps, (e["gpa"] + e["size"]) // ps, e["channel"]))
    return ivs, extents


def pages(iv, kind):
    out = set()
    for first, count in iv.get(kind) or []:
        out.update(range(first, first + count))
    return out


def expected_summary(ivs, accessed):
    def total(key):
        vals = [iv[key] for iv in ivs if iv.get(key) is not None]
        return sum(vals) if vals else None

    def peak(key):
        vals = [iv[key] for iv in ivs if iv.get(key) is not None]
        return max(vals) if vals else None

    w_all = set().union(*(pages(iv, "written") for iv in ivs))
    exp = {"sum-intervals": len(ivs), "sum-first-seq": ivs[0]["seq"], "sum-written": total("written_pages"),
           "sum-written-peak": peak("written_pages"), "sum-accessed": total("accessed_pages"),
           "sum-accessed-peak": peak("accessed_pages"), "sum-distinct-written": len(w_all),
           "sum-read-bytes": total("read_bytes"), "sum-write-bytes": total("write_bytes")}
    if accessed:
        exp["sum-distinct-accessed"] = len(set().union(*(pages(iv, "accessed") for iv in ivs)))
    return exp


def report_summary(path):
    """What `hvmtrace report --json` says of the same range, in the summary's terms."""
    d = json.load(open(path))
    acc = [iv["accessed"] for iv in d["intervals"] if iv.get("accessed") is not None]
    ws = d["working_set"].get("accessed") or {}
    return {"sum-intervals": d["selection"]["intervals"], "sum-first-seq": d["selection"]["first_seq"],
            "sum-written": d["write_frequency"]["page_writes"],
            "sum-written-peak": d["totals"]["peak_written_pages"],
            "sum-distinct-written": d["totals"]["pages_ever_written"],
            "sum-accessed": sum(acc) if acc else None, "sum-accessed-peak": ws.get("max"),
            "sum-read-bytes": d["totals"]["read_bytes"], "sum-write-bytes": d["totals"]["write_bytes"]}


def compare_report(b, path, label):
    exp, got = report_summary(path), shown_summary(b)
    for k, v in exp.items():
        check("%s: summary %s = report --json" % (label, k), v, got.get(k))


def shown_summary(b):
    vals = b.eval("Object.fromEntries([...document.querySelectorAll('#summary [data-value]')]"
                  ".map(e => [e.id, e.dataset.value]))")
    return {k: (None if v == "" else float(v) if "." in v else int(v)) for k, v in vals.items()}


def compare_summary(b, ivs, accessed, label):
    exp, got = expected_summary(ivs, accessed), shown_summary(b)
    for k, v in exp.items():
        check("%s: summary %s" % (label, k), v, got.get(k))


def hover(b, geo, gfn):
    cell = b.eval("window.hvtCellOf(%d)" % gfn)  # the page's own layout; the tooltip's GFN checks it
    x = geo["left"] + (cell % geo["W"] + 0.5) * geo["PX"]
    y = geo["top"] + (cell // geo["W"] + 0.5) * geo["PX"]
    b.mouse("mouseMoved", x, y)
    b.wait_for("document.getElementById('tip').dataset.cell === '%d' && !document.getElementById('tip').hidden"
               % cell, "tooltip of cell %d" % cell, 10)
    return x, y, b.eval("({...document.getElementById('tip').dataset, text: "
                        "document.getElementById('tip').textContent})")


def check_pages(b, geo, ivs, extents, page_list, accessed, label):
    for gfn in page_list:
        _, _, tip = hover(b, geo, gfn)
        w = sum(gfn in pages(iv, "written") for iv in ivs)
        check("%s: hover GFN 0x%x: gfn" % (label, gfn), gfn, int(tip["gfn"]))
        check("%s: hover GFN 0x%x: intervals written" % (label, gfn), w, int(float(tip["written"])))
        if accessed:
            a = sum(gfn in pages(iv, "accessed") for iv in ivs)
            check("%s: hover GFN 0x%x: intervals accessed" % (label, gfn), a, int(float(tip["accessed"])))
        else:
            check("%s: hover GFN 0x%x: accessed not available" % (label, gfn), True,
                  "accessed: not available" in tip["text"])
        ch = next((c for f, e, c in extents if f <= gfn < e), "")
        check("%s: hover GFN 0x%x: host channel" % (label, gfn), ch, tip["channel"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--html", required=True)
    ap.add_argument("--open-only", action="store_true",
                    help="only open the page, screenshot it and print the time (for bench/pictures.sh)")
    ap.add_argument("--jsonl")
    ap.add_argument("--meta")
    ap.add_argument("--shots", required=True)
    ap.add_argument("--page", action="append", default=[], type=lambda s: int(s, 0))
    ap.add_argument("--range-from", type=int, help="seq")
    ap.add_argument("--range-to", type=int, help="seq")
    ap.add_argument("--report-all", help="`hvmtrace report --json` of the whole trace")
    ap.add_argument("--report-range", help="`hvmtrace report --json --from F --to T` of the dragged range")
    ap.add_argument("--user", help="run chromium as this user (needed as root: its sandbox stays on)")
    ap.add_argument("--profile", required=True, help="a directory for chromium's profile")
    ap.add_argument("--name", default="report")
    ap.add_argument("--owner", action="append", default=[],
                    help="GFN=LABEL: hovering that page names LABEL as its owner (report --html --by)")
    ap.add_argument("--legend", action="append", default=[],
                    help="LABEL=WRITTEN: the legend of owners lists LABEL with WRITTEN page-intervals")
    a = ap.parse_args()
    if not a.open_only and None in (a.jsonl, a.meta, a.range_from, a.range_to):
        ap.error("--jsonl, --meta, --range-from and --range-to are needed unless --open-only")
    ivs, extents = load_oracle(a.jsonl, a.meta) if not a.open_only else ([], [])
    accessed = any(iv.get("accessed") is not None for iv in ivs)
    os.makedirs(a.shots, exist_ok=True)
    b = Browser(user=a.user, profile=a.profile)
    try:
        start = time.monotonic()
        b.open("file://" + os.path.abspath(a.html))
        b.wait_for("document.body && (document.body.dataset.ready === '1' || !!document.body.dataset.error)",
                   "the page drawn", 120)
        print("opened and drawn in %.2f s" % (time.monotonic() - start))
        err = b.eval("document.body.dataset.error || ''")
        if err:
            print("FAIL: the page says: " + err)
            return 1
        b.screenshot(os.path.join(a.shots, a.name + "-1-opened.png"))
        if a.open_only:
            return 0
        geo = b.eval("(() => { const g = document.getElementById('grid'), r = g.getBoundingClientRect(),"
                     " m = JSON.parse(document.getElementById('hvt-meta').textContent);"
                     " return {W: g.width, PX: g.clientWidth / g.width, left: r.left, top: r.top,"
                     " gfn_first: m.gfn_first, cp: m.cell_pages, block: m.block}; })()")
        if geo["cp"] != 1 or geo["block"] != 1:
            print("check_html: the trace is too large for page-exact checks (cells of %d pages, blocks of %d)"
                  % (geo["cp"], geo["block"]))
            return 2
        compare_summary(b, ivs, accessed, "whole trace")
        if a.report_all:
            compare_report(b, a.report_all, "whole trace")
        check_pages(b, geo, ivs, extents, a.page, accessed, "whole trace")
        for spec in a.owner:
            gfn, want = spec.split("=", 1)
            _, _, tip = hover(b, geo, int(gfn, 0))
            check("hover GFN %s: owner" % gfn, want, tip.get("owner"))
        if a.legend:
            rows = b.eval("[...document.querySelectorAll('#owners tr.owner')]"
                          ".map(r => [...r.cells].map(c => c.textContent))")
            shown = {r[0]: int(r[1].replace(",", "")) for r in rows}
            for spec in a.legend:
                label, want = spec.rsplit("=", 1)
                check("legend: %s written" % label, int(want), shown.get(label))

        # Click: the page's history, interval by interval.
        for gfn in a.page[:1]:
            x, y, _ = hover(b, geo, gfn)
            b.click(x, y)
            b.wait_for("document.getElementById('hist-text').dataset.cell === String(window.hvtCellOf(%d))" % gfn,
                       "history of GFN 0x%x" % gfn, 10)
            hist = b.eval("({...document.getElementById('hist-text').dataset})")
            check("click GFN 0x%x: written history" % gfn, [int(gfn in pages(iv, "written")) for iv in ivs],
                  [int(v) for v in hist["written"].split(",")])
            if accessed:
                check("click GFN 0x%x: accessed history" % gfn,
                      [int(gfn in pages(iv, "accessed")) for iv in ivs],
                      [int(v) for v in hist["accessed"].split(",")])
            b.screenshot(os.path.join(a.shots, a.name + "-2-hover-click.png"))

        # Drag across the working-set chart: from the middle of one interval to the middle of another.
        seqs = [iv["seq"] for iv in ivs]
        k0, k1 = seqs.index(a.range_from), seqs.index(a.range_to)
        pos = b.eval("(() => { const c = document.getElementById('wss'), r = c.getBoundingClientRect(),"
                     " m = JSON.parse(document.getElementById('hvt-meta').textContent).intervals;"
                     " const mid = (k) => r.left + c.plot.x((m.t0[k] + m.t1[k]) / 2);"
                     " return {x0: mid(%d), x1: mid(%d), y: r.top + r.height / 2}; })()" % (k0, k1))
        b.drag(pos["x0"], pos["y"], pos["x1"], pos["y"])
        b.wait_for("document.getElementById('range-text').dataset.first === '%d' && "
                   "document.getElementById('range-text').dataset.last === '%d'" % (a.range_from, a.range_to),
                   "the range %d-%d selected" % (a.range_from, a.range_to), 10)
        check("drag: selected range", [a.range_from, a.range_to],
              [int(b.eval("document.getElementById('range-text').dataset.first")),
               int(b.eval("document.getElementById('range-text').dataset.last"))])
        sel = ivs[k0:k1 + 1]
        compare_summary(b, sel, accessed, "range %d-%d" % (a.range_from, a.range_to))
        if a.report_range:
            compare_report(b, a.report_range, "range %d-%d" % (a.range_from, a.range_to))
        check_pages(b, geo, sel, extents, a.page, accessed, "range %d-%d" % (a.range_from, a.range_to))
        b.screenshot(os.path.join(a.shots, a.name + "-3-range-hover.png"))

        # Playback through the range, then back to the static display.
        b.eval("document.getElementById('speed').value = 30")
        r = b.eval("(() => { const r = document.getElementById('play').getBoundingClientRect();"
                   " return [r.left + r.width / 2, r.top + r.height / 2]; })()")
        b.mouse("mouseMoved", 0, 0)
        b.click(r[0], r[1])
        mid = k0 + (k1 - k0) // 2
        b.wait_for("Number(document.getElementById('frame').dataset.block) >= %d" % mid, "playback under way", 30)
        b.screenshot(os.path.join(a.shots, a.name + "-4-playback.png"))
        b.wait_for("document.getElementById('play').textContent.includes('play back')", "playback ended", 60)
        check("playback: last frame", k1, int(b.eval("document.getElementById('frame').dataset.block")))
        compare_summary(b, sel, accessed, "after playback")
    except CdpError as e:
        print("FAIL: %s" % e)
        return 1
    finally:
        b.close()
    print("check_html: %d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
