"""The step cursor in headless Chromium: a typed step until the image card shows that step's thumbnail (not a test).

Issue 29 §8 ("moving the step cursor to any step shows that step's image within 100 ms p95"). Over a store made by
``media_reads.py --keep DIR`` (histogram tags and ``--image-tags`` image tags × ``--steps`` distinct 64×64 PNGs
of a tensorboardX event file, imported by ``taunotebook import``'s ``import_paths``), a Portal subprocess serves the
Stellar run page to headless Chromium (playwright, ``/usr/bin/chromium`` or ``$TAU_CHROMIUM``). The first image
tag's card is scrolled into view; then ``--moves`` times (after ``--warmup`` untimed moves), a random step never
visited before is typed into the Media section's step box (its value set and Enter dispatched in the page, as
the box reads it) and the page times, with ``performance.now()``, from that Enter until:

* **card**: the card's ``img.media-thumb`` carries the digest of that step's image (asked of the Portal before the
  browser starts) and has loaded (``complete`` and ``naturalWidth > 0``) -- the figure with the target, p95 < 100 ms;
* **screen**: every image card on screen shows that step with its thumbnails loaded.

These moves follow one another at once (the next typed as soon as one is timed), as a user scrubbing through steps.
Then ``--rested`` more moves each wait until the whole page has followed, timing also

* **page**: every card on screen, the histogram cards too, shows that step (their histograms at that step drawn);
  the next move starts only then (a user who stops at a step and looks).

The baseline in the same run: the same pair of requests (``…/images?tag=T&step=S`` then its ``thumbnail_url``)
from Python over HTTP for as many other unvisited steps: what the browser adds is the rest. The Portal's peak RSS
over the whole run is sampled every 20 ms.

    .venv/bin/python bench/media_cursor_chromium.py --store bench/out/media-full/store [--moves 60]
        [--search '^samples/image_00$']
    .venv/bin/python bench/media_cursor_chromium.py --smoke

Prints a table and one JSON line, and writes ``bench/out/media_cursor_chromium.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_portal import TOKEN, load_average, start_portal  # sibling scripts, not a package
from media_reads import RUN, RssSampler, ensure_store, p, rss_mb, timed_ms

HERE = Path(__file__).resolve().parent
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]

# In the page: type `step` into the Media step box and resolve with the milliseconds until the card of `tag` shows
# the image `digest` loaded, and until every image card on screen shows `step` with its thumbnails loaded.
MOVE_JS = """
async ([tag, step, digest, waitAll]) => {
  const box = document.getElementById("stellar-media");
  const input = document.getElementById("stellar-media-step");
  const card = () => [...box.querySelectorAll('section.media-card[data-kind="images"]')]
    .find((c) => c.dataset.tag === tag);
  const loaded = (img) => img && img.complete && img.naturalWidth > 0;
  const onScreen = (el) => { const r = el.getBoundingClientRect();
                             return r.bottom > 0 && r.top < innerHeight && r.width > 0; };
  const cardDone = () => { const c = card();
    return Boolean(c) && [...c.querySelectorAll("img.media-thumb")]
      .some((i) => i.dataset.digest === digest && loaded(i)); };
  const screenDone = () => [...box.querySelectorAll('section.media-card[data-kind="images"]')].filter(onScreen)
    .every((c) => { const panels = [...c.querySelectorAll(".media-panel")];
      return panels.length > 0 && panels.every((pn) => pn.dataset.step === String(step))
        && [...c.querySelectorAll("img.media-thumb")].every(loaded); });
  const pageDone = () => [...box.querySelectorAll('section.media-card[data-kind="histograms"]')].filter(onScreen)
    .every((c) => { const panels = [...c.querySelectorAll(".media-panel")];
      return c.dataset.state === "ready" && panels.length > 0
        && panels.every((pn) => pn.dataset.step === String(step)); });
  return await new Promise((resolve, reject) => {
    const t = {};
    let t0 = 0;
    const check = () => {
      const now = performance.now();
      if (t.card === undefined && cardDone()) t.card = now - t0;
      if (t.screen === undefined && t.card !== undefined && screenDone()) t.screen = now - t0;
      if (waitAll && t.page === undefined && t.screen !== undefined && pageDone()) t.page = now - t0;
      if (t.card !== undefined && t.screen !== undefined && (!waitAll || t.page !== undefined)) { stop(); resolve(t); }
    };
    const observer = new MutationObserver(check);
    const timer = setInterval(check, 2);
    const give_up = setTimeout(() => { stop(); reject(new Error(`step ${step}: no image ${digest} within 30 s`)); },
                               30000);
    function stop() { observer.disconnect(); clearInterval(timer); clearTimeout(give_up);
                      document.removeEventListener("load", check, true); }
    observer.observe(box, { subtree: true, childList: true, attributes: true });
    document.addEventListener("load", check, true);  // an image's load does not bubble: caught on the way down
    t0 = performance.now();
    input.value = String(step);
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    check();
  });
}
"""


def chromium_path() -> str:
    path = os.environ.get("TAU_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        raise SystemExit("no Chromium found: install it (`apt-get install -y chromium`) or set TAU_CHROMIUM")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, help="an existing store (DIR/store of media_reads.py --keep DIR)")
    parser.add_argument("--keep", type=Path, help="build the store in DIR (or reuse DIR/store), as media_reads.py")
    parser.add_argument("--hist-tags", type=int, default=4, help="when building the store (default 4)")
    parser.add_argument("--image-tags", type=int, default=10, help="when building the store (default 10)")
    parser.add_argument("--steps", type=int, default=10_000, help="when building the store (default 10,000)")
    parser.add_argument("--moves", type=int, default=60, help="timed moves of the cursor (default 60)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed moves first (default 3)")
    parser.add_argument("--rested", type=int, default=20, help="moves that wait for the whole page (default 20)")
    parser.add_argument("--search", default="", help="the page's search (its q): e.g. '^samples/image_00$' shows "
                                                    "that card alone, the baseline without the other cards' reads")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--smoke", action="store_true", help="a quick run: 1 + 2 tags × 50 steps, 5 moves")
    args = parser.parse_args()
    if args.smoke:
        args.hist_tags, args.image_tags, args.steps, args.moves, args.warmup, args.rested = 1, 2, 50, 5, 1, 3
    if args.moves < 2 or args.warmup < 0 or args.rested < 0:
        parser.error(f"--moves must be >= 2, --warmup and --rested >= 0, got {args.moves}, {args.warmup} and "
                     f"{args.rested}")
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or ensure_store(args.keep or Path(tmp), args.hist_tags, args.image_tags, args.steps)
        if not (store / "index.sqlite").is_file():
            raise SystemExit(f"--store {store}: no expstore there (build one with media_reads.py --keep DIR)")
        proc, api = start_portal(store)
        try:
            results = measure(proc.pid, api, args)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    results["load_average"] = load_average()
    print(f"  load average {results['load_average']}")
    print(json.dumps(results))
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    name = "media_cursor_chromium" + ("-smoke" if args.smoke else "") + ("-search" if args.search else "")
    (out / f"{name}.json").write_text(
        json.dumps(results, indent=2) + "\n")


def measure(pid: int, api: str, args) -> dict:
    from playwright.sync_api import sync_playwright

    rng = random.Random(args.seed)
    sampler = RssSampler(pid)
    origin = str(httpx.URL(api).copy_with(path="/", query=None)).rstrip("/")
    with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as client:
        base = f"{api}/runs/{RUN}"

        def get(url: str, **params) -> httpx.Response:
            r = client.get(url, params=params)
            r.raise_for_status()
            return r

        tags = get(f"{base}/media").json()["tags"]
        image = next(t for t in tags if t["kind"] == "images")
        tag, low, high = image["tag"], image["step_min"], image["step_max"]
        browser_moves = args.warmup + args.moves + args.rested
        wanted = browser_moves + args.moves  # the browser's moves, then as many HTTP-only ones
        if high - low + 1 < wanted + 1:
            raise SystemExit(f"{tag} has {high - low + 1} steps: too few for {wanted} distinct moves")
        steps = rng.sample(range(low, high), wanted)
        # The digest each browser move must end on, asked before the browser starts (untimed).
        targets = []
        for step in steps[:browser_moves]:
            found = get(f"{base}/images", tag=tag, step=step).json()
            targets.append((found["step"], found["images"][0]["digest"]))
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            start = time.perf_counter()
            query = {"target": RUN, "token": TOKEN, **({"q": args.search} if args.search else {})}
            page.goto(f"{origin}/stellar?{urlencode(query)}")
            page.wait_for_selector("#stellar-media[data-state=ready]", timeout=120_000)
            media_ready_s = time.perf_counter() - start
            # The page as opened: every card created so far (those on screen) drawn; what the DOM holds of the run's
            # tags then (a slot is a tag's frame with its name, a card is created only when it comes into view).
            page.wait_for_function("""() => {
                const cards = [...document.querySelectorAll('#stellar-media section.media-card')];
                return cards.length > 0 && cards.every((c) => c.dataset.state === "ready"); }""", timeout=120_000)
            opened_s = time.perf_counter() - start
            opened = page.evaluate("""() => ({
                slots: document.querySelectorAll('#stellar-media .media-slot').length,
                cards: document.querySelectorAll('#stellar-media section.media-card').length,
                elements: document.getElementsByTagName('*').length })""")
            slot = page.locator(f'[data-card="images/{tag}"]')
            slot.wait_for(state="attached", timeout=60_000)
            slot.scroll_into_view_if_needed()
            page.wait_for_selector(f'section.media-card[data-card="images/{tag}"][data-state="ready"]',
                                   timeout=60_000)
            # Every card the page created has drawn (the histogram cards' bands read too): moves start on a quiet page.
            page.wait_for_function("""() => {
                const cards = [...document.querySelectorAll('#stellar-media section.media-card')];
                return cards.length > 0 && cards.every((c) => c.dataset.state === "ready"); }""", timeout=120_000)
            cards = page.evaluate("() => document.querySelectorAll('#stellar-media section.media-card').length")
            # The cards above drew their plots meanwhile and grew: the image card back on screen, the page at rest.
            page.locator(f'section.media-card[data-card="images/{tag}"]').scroll_into_view_if_needed()
            page.wait_for_timeout(1000)
            ready_s = time.perf_counter() - start
            on_screen = page.evaluate("""() => [...document.querySelectorAll(
                '#stellar-media section.media-card[data-kind="images"]')].filter((c) => {
                    const r = c.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; }).length""")
            card_ms, screen_ms, rested_card_ms, rested_page_ms = [], [], [], []
            for i, (step, digest) in enumerate(targets):
                rested = i >= args.warmup + args.moves
                t = page.evaluate(MOVE_JS, [tag, step, digest, rested])
                if rested:
                    rested_card_ms.append(t["card"])
                    rested_page_ms.append(t["page"])
                elif i >= args.warmup:
                    card_ms.append(t["card"])
                    screen_ms.append(t["screen"])
            hist_on_screen = page.evaluate("""() => [...document.querySelectorAll(
                '#stellar-media section.media-card[data-kind="histograms"]')].filter((c) => {
                    const r = c.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; }).length""")
            browser.close()
        rss_after_browser = rss_mb(pid)

        def pair(step: int) -> None:
            found = get(f"{base}/images", tag=tag, step=step).json()
            get(str(httpx.URL(api).join(found["images"][0]["thumbnail_url"])))

        http_ms = [timed_ms(lambda s=s: pair(s)) for s in steps[browser_moves:]]
    peak = sampler.stop()
    results = {
        "bench": "media_cursor_chromium", "image_tag": tag, "image_steps": image["count"],
        "image_tags": sum(t["kind"] == "images" for t in tags), "search": args.search, "cards_created": cards,
        "image_cards_on_screen": on_screen,
        "tags": len(tags), "media_ready_s": media_ready_s, "opened_s": opened_s, "opened_cards": opened["cards"],
        "opened_slots": opened["slots"], "opened_elements": opened["elements"],
        "moves": args.moves, "warmup": args.warmup, "page_ready_s": ready_s,
        "card_p50_ms": statistics.median(card_ms), "card_p95_ms": p(card_ms, 0.95), "card_max_ms": max(card_ms),
        "screen_p50_ms": statistics.median(screen_ms), "screen_p95_ms": p(screen_ms, 0.95),
        "histogram_cards_on_screen": hist_on_screen, "rested_moves": args.rested,
        **({"rested_card_p50_ms": statistics.median(rested_card_ms), "rested_card_p95_ms": p(rested_card_ms, 0.95),
            "rested_page_p50_ms": statistics.median(rested_page_ms), "rested_page_p95_ms": p(rested_page_ms, 0.95)}
           if len(rested_page_ms) >= 2 else {}),
        "http_pair_p50_ms": statistics.median(http_ms), "http_pair_p95_ms": p(http_ms, 0.95),
        "portal_rss_mb_after_browser": rss_after_browser, "portal_rss_mb_peak": peak,
    }
    results["card_vs_http_pair_p95"] = results["card_p95_ms"] / results["http_pair_p95_ms"]
    print(f"Stellar run page of {len(tags)} media tags: Media section drawn {media_ready_s:.2f} s after the page was "
          f"asked for, the cards on screen drawn at {opened_s:.2f} s; {opened['cards']} cards created, "
          f"{opened['slots']} slots (uncreated tags in the DOM), {opened['elements']:,} DOM elements")
    print(f"Stellar run page ready with {tag}'s card on screen in {ready_s:.1f} s; {cards} cards created (each follows "
          f"the cursor), {on_screen} image cards on screen")
    print(f"step typed -> {tag}'s thumbnail of that step loaded, {args.moves} random steps of {image['count']:,}:")
    print(f"  card     p50 {results['card_p50_ms']:6.1f} ms  p95 {results['card_p95_ms']:6.1f} ms  "
          f"max {results['card_max_ms']:6.1f} ms (target p95 < 100 ms)")
    print(f"  screen   p50 {results['screen_p50_ms']:6.1f} ms  p95 {results['screen_p95_ms']:6.1f} ms  "
          f"(every image card on screen at that step)")
    print(f"  HTTP only (images + thumbnail from Python) p50 {results['http_pair_p50_ms']:.1f} ms  p95 "
          f"{results['http_pair_p95_ms']:.1f} ms: card p95 is {results['card_vs_http_pair_p95']:.1f}x")
    if "rested_page_p95_ms" in results:
        print(f"  {args.rested} rested moves (each until the {hist_on_screen} histogram cards on screen show the step "
              f"too): card p50 {results['rested_card_p50_ms']:.1f} p95 {results['rested_card_p95_ms']:.1f} ms, "
              f"whole page p50 {results['rested_page_p50_ms']:.1f} p95 {results['rested_page_p95_ms']:.1f} ms")
    print(f"Portal RSS peak {peak:.0f} MB")
    return results


if __name__ == "__main__":
    main()
