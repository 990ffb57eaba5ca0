"""The book builds strictly from a fresh smoke grid, and every page renders in a browser.

A session fixture runs ``ilets grid --profile smoke`` into a temporary folder and builds the
book with ``jupyter-book build -W --keep-going`` against it (``ILETS_RESULTS``). Warnings are
errors and ``_config.yml`` sets ``nb_execution_raise_on_error``, so a failing chapter fails
the build. The build runs with a temporary working directory, so its jupyter-cache
(``_build/.jupyter_cache``, relative) is fresh: every chapter executes and the repository's
own cache is not touched.

Then headless Chromium opens every page of ``_toc.yml`` and the test checks titles, output
cells and images. Without ``/usr/bin/chromium`` (installed by ``tests/setup_browser.sh``)
the browser test skips, except under ``CI=true`` where it fails.

Minutes on 2 cores (the smoke grid takes 0.5-1.5 min, then the measurements chapters 3, 4 and 8
quote are recorded for it, ``ilets.study.book_measurements``; the rest is executing the chapters).
The build log, the rendered book and a screenshot stay in pytest's temporary folder.
Deselect with ``-m "not book"``.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import sys
import time
from io import BytesIO
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars",
                  # the book must work offline: external requests (CDN scripts) fail at once
                  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost"]
BUILD_TIMEOUT_S = 3600

# under `pytest -n` (make test) this file's tests run on one worker (pyproject.toml's addopts
# distribute with --dist loadfile), so the session fixture builds the book once
pytestmark = [pytest.mark.book, pytest.mark.slow, pytest.mark.timeout(BUILD_TIMEOUT_S + 600)]

#: text in an output cell that means a chapter failed: a traceback, or an exception line
#: such as "ValueError: ..." / "Error: ..." (prose like "Error bars" does not match)
ERROR_TEXT = re.compile(r"Traceback|^\s*[\w.]*(Error|Exception)(:|\s*$)", re.M)
OUTPUT_SELECTOR = "div.cell_output, div.output"
#: Markdown a reader should never see as text: bold or italic markers, or a pair of backticks
#: (a string glued with {glue:text} is not parsed, so its Markdown shows literally)
LITERAL_MARKDOWN = re.compile(r"\*\*\S[^*]*?\*\*|(?<![\w*])\*[^\s*][^*\n]*?\*(?![\w*])|`[^`\n]+`")
#: the elements whose text a reader reads as prose or table cells (code and math excluded)
PROSE = "p, li, td, th, caption, h1, h2, h3, h4, dt, dd, figcaption"
#: measures, once the page has loaded, how far each table's box reaches past the article's right
#: edge: the table itself, or the nearest element around it that scrolls sideways (_static/tables.css
#: puts a wide table in such a box rather than breaking its words), since a table that scrolls
#: inside its box is not cut by the page; the result is an attribute of <html> that
#: ``--dump-dom`` returns with the DOM
MEASURE = """<script>
window.addEventListener("load", () => {
  const box = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
  const right = box.getBoundingClientRect().right;
  const boxOf = (t) => {
    for (let e = t.parentElement; e && e !== box; e = e.parentElement) {
      if (["auto", "scroll"].includes(getComputedStyle(e).overflowX)) return e;
    }
    return t;
  };
  const wide = [...document.querySelectorAll("table")].map((t, i) => [i, boxOf(t).getBoundingClientRect().right - right])
    .filter(([, over]) => over > 2).map(([i, over]) => `table ${i + 1} by ${Math.round(over)} px`);
  document.documentElement.setAttribute("data-wide-tables", wide.join("; ") || "none");
});
</script>"""
PAGE_WIDTH = 1280  #: the browser window's width, px (a laptop)


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def toc_pages() -> list[str]:
    """Every document of ``_toc.yml`` (root first), without file extension."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages: list[str] = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                pages.append(node["file"])
            for value in node.values():
                if isinstance(value, (list, dict)):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({k: v for k, v in toc.items() if k != "root"})
    return [str(Path(p).with_suffix("")) if Path(p).suffix in (".md", ".ipynb", ".py", ".rst") else p
            for p in pages]


def _bin(name: str) -> str:
    exe = Path(sys.executable).parent / name
    return str(exe) if exe.exists() else (shutil.which(name) or name)


@pytest.fixture(scope="session")
def book(tmp_path_factory):
    """Smoke grid + strict book build in a temporary folder; returns paths and the build log."""
    tmp = tmp_path_factory.mktemp("book")
    results, out = tmp / "results", tmp / "book"
    env = {**os.environ, "ILETS_RESULTS": str(results), "PYTHONUNBUFFERED": "1"}
    t0 = time.perf_counter()
    grid = subprocess.run([sys.executable, "-m", "ilets.study.cli", "grid", "--profile", "smoke", "--out", str(results),
                           "--quiet"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert grid.returncode == 0, f"smoke grid failed:\n{grid.stdout[-3000:]}\n{grid.stderr[-3000:]}"
    grid_s = time.perf_counter() - t0
    # the measurements chapters 3, 4 and 8 quote are recorded, not run at book time: record them
    # for the smoke grid's settings into the temporary folder (the shipped ones are the paper's)
    env["ILETS_BOOK_MEASUREMENTS"] = str(tmp / "measurements")
    measured = subprocess.run([sys.executable, "-m", "ilets.study.book_measurements", "--results", str(results)],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert measured.returncode == 0, f"recording the book's measurements failed:\n{measured.stderr[-3000:]}"
    measured_s = time.perf_counter() - t0 - grid_s
    # a second copy stands for the reduced-scale results shown beside the main ones (the
    # summary's scale table and chapter 10's live re-runs read it)
    shutil.copytree(results, tmp / "scale")
    env["ILETS_SCALE_RESULTS"] = str(tmp / "scale")
    # the per-server chapters read a grid of the same (smoke) scale, never the repository's
    # paper-scale results/per-server: the smoke grid's learners stand in for the family, so its
    # tables and sentences are built from data, not from the "no results yet" branch
    env["ILETS_PER_SERVER_RESULTS"] = str(tmp / "scale")
    t0 = time.perf_counter()
    build = subprocess.run([_bin("jupyter-book"), "build", str(ROOT), "-W", "--keep-going", "--path-output", str(out)],
                           cwd=tmp, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    log = build.stdout + "\n" + build.stderr
    (tmp / "build.log").write_text(log)
    print(f"smoke grid {grid_s:.0f} s, measurements {measured_s:.0f} s, book build {time.perf_counter() - t0:.0f} s; "
          f"log: {tmp / 'build.log'}")
    return {"tmp": tmp, "results": results, "html": out / "_build" / "html", "rc": build.returncode, "log": log}


def test_book_builds_strictly_from_the_smoke_grid(book):
    log = book["log"]
    plain = re.sub(r"\x1b\[[0-9;]*m", "", log)  # no terminal colours
    problems = [line for line in plain.splitlines()
                if re.search(r"WARNING|ERROR|Traceback|Exception", line) and not line.startswith("[IPKernelApp]")]
    assert book["rc"] == 0, (f"jupyter-book build -W --keep-going failed (exit {book['rc']}); full log in "
                             f"{book['tmp'] / 'build.log'}\n" + "\n".join(problems[:40]) + "\n...\n" + plain[-3000:])
    cache = re.search(r"Using jupyter-cache at: (\S+)", log)
    if cache:  # the build must not read or fill the repository's cache (relative: to the build's cwd)
        path = Path(cache.group(1))
        path = (path if path.is_absolute() else book["tmp"] / path).resolve()
        assert path.is_relative_to(book["tmp"].resolve()), f"the build used the jupyter-cache {path}"
    missing = [p for p in toc_pages() if not (book["html"] / f"{p}.html").is_file()]
    assert not missing, f"pages of _toc.yml with no HTML: {missing}"


def _chromium() -> Path:
    if CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    reason = f"{CHROMIUM} not found; `bash tests/setup_browser.sh` installs Debian's chromium"
    if _ci():
        pytest.fail(f"{reason} (CI=true: the browser check is required)")
    pytest.skip(reason)


def _run_chromium(chromium: Path, profile_dir: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    profile_dir.mkdir(parents=True, exist_ok=True)
    cmd = [str(chromium), *CHROMIUM_FLAGS, f"--user-data-dir={profile_dir}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _check_image(data: bytes, what: str) -> str | None:
    """None if ``data`` decodes as an image, else the problem."""
    if not data:
        return f"{what}: empty"
    if data.lstrip()[:5] in (b"<?xml", b"<svg ") or b"<svg" in data[:500]:
        return None if b"</svg>" in data else f"{what}: truncated SVG"
    try:
        from PIL import Image
    except ImportError:  # Pillow is in the lock (matplotlib needs it); keep a fallback anyway
        return None if data.startswith(b"\x89PNG\r\n\x1a\n") else f"{what}: not a PNG"
    try:
        with Image.open(BytesIO(data)) as im:
            im.verify()
        with Image.open(BytesIO(data)) as im:
            im.load()
            if im.width < 1 or im.height < 1:
                return f"{what}: {im.width}x{im.height} image"
    except Exception as err:  # noqa: BLE001 - any decoding error is the finding
        return f"{what}: does not decode ({type(err).__name__}: {err})"
    return None


def _page_problems(page: str, html_file: Path, dom: str) -> list[str]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(dom, "html.parser")
    problems = []
    title = (soup.title.get_text(strip=True) if soup.title else "")
    h1 = soup.find("h1")
    if not title or h1 is None or not h1.get_text(strip=True):
        problems.append(f"{page}: no title or no <h1> (title={title!r})")
    wide = soup.html.get("data-wide-tables") if soup.html else None
    if wide is None:
        problems.append(f"{page}: the table-width measurement did not run")
    elif wide != "none":
        problems.append(f"{page}: wider than the page at {PAGE_WIDTH} px: {wide}")
    literal = []
    for el in soup.select(PROSE):
        if el.find(PROSE.split(", ")):  # nested prose: read at the innermost level
            continue
        el = BeautifulSoup(str(el), "html.parser")  # a copy: the output checks below read the page whole
        for skip in el.select("code, pre, .math, mjx-container, script, style"):
            skip.decompose()
        literal += [m.group(0) for m in LITERAL_MARKDOWN.finditer(el.get_text(" "))]
    if literal:
        problems.append(f"{page}: Markdown left as text: {list(dict.fromkeys(literal))[:5]}")
    for out in soup.select(OUTPUT_SELECTOR):
        classes = set(out.get("class", []))
        text = out.get_text("\n")
        if "traceback" in classes or ERROR_TEXT.search(text):
            hit = ERROR_TEXT.search(text)
            snippet = text[max(0, hit.start() - 200): hit.end() + 300] if hit else text[:500]
            problems.append(f"{page}: error in an output cell: ...{snippet.strip()}...")
    # The chapters caption a figure with a paragraph "*Figure: ...*" after it: a caption with
    # no image before it means the figure was never displayed (e.g. `fig = ...` in a cell
    # while the Agg backend is active).
    captions = [em for em in soup.select("article em, main em") if em.get_text(strip=True).startswith("Figure:")]
    figures = soup.select("article img, main img") or soup.find_all("img")  # myst-nb: PNG/SVG in <img>
    if len(captions) > len(figures):
        problems.append(f"{page}: {len(captions)} figure caption(s) ('Figure: ...') but {len(figures)} image(s): "
                        f"a figure was not displayed, e.g. {captions[0].get_text(strip=True)[:80]!r}")
    for img in soup.find_all("img"):
        src = img.get("src", "")
        if src.startswith("data:"):
            head, _, payload = src.partition(",")
            data = base64.b64decode(payload) if ";base64" in head else unquote(payload).encode()
            problem = _check_image(data, f"{page}: inline image")
        else:
            url = urlparse(src)
            if url.scheme not in ("", "file"):
                problems.append(f"{page}: image {src} is not a local file (the book must work offline)")
                continue
            path = Path(unquote(url.path)) if url.scheme == "file" else (html_file.parent / unquote(url.path))
            path = path.resolve()
            problem = f"{page}: image {src} missing ({path})" if not path.is_file() else \
                _check_image(path.read_bytes(), f"{page}: image {src}")
        if problem:
            problems.append(problem)
    return problems


def test_every_page_renders_in_a_headless_browser(book):
    chromium = _chromium()
    html, tmp = book["html"], book["tmp"]
    problems, checked = [], 0  # (a page's nested output divs can report one error twice)
    if book["rc"] != 0:  # still check the pages that were written
        problems.append("the book build failed (see test_book_builds_strictly_from_the_smoke_grid)")
    for i, page in enumerate(toc_pages()):
        html_file = html / f"{page}.html"
        if not html_file.is_file():
            problems.append(f"{page}: {html_file} missing")
            continue
        # a copy beside the page (its relative links still resolve) that also measures its tables
        measured = html_file.with_name(f"{html_file.stem}.measure.html")
        measured.write_text(html_file.read_text().replace("</body>", MEASURE + "</body>", 1))
        res = _run_chromium(chromium, tmp / f"chromium-profile-{i}", "--dump-dom", f"--window-size={PAGE_WIDTH},900",
                            measured.as_uri())
        measured.unlink()
        if res.returncode != 0 or "<html" not in res.stdout.lower():
            problems.append(f"{page}: chromium --dump-dom failed (exit {res.returncode}): {res.stderr[-1000:]}")
            continue
        problems += _page_problems(page, html_file, res.stdout)
        checked += 1
    problems = list(dict.fromkeys(problems))
    assert not problems, f"{len(problems)} problem(s) in {checked} rendered page(s):\n" + "\n".join(problems)

    # One screenshot of the first page proves that the browser really renders the book.
    shot = tmp / "index.png"
    res = _run_chromium(chromium, tmp / "chromium-profile-shot", f"--screenshot={shot}", "--window-size=1280,2000",
                        (html / f"{toc_pages()[0]}.html").as_uri())
    assert shot.is_file(), f"chromium wrote no screenshot (exit {res.returncode}): {res.stderr[-1000:]}"
    from PIL import Image

    with Image.open(shot) as im:
        assert im.size == (1280, 2000), im.size
        lo_hi = im.convert("L").getextrema()
    assert lo_hi[1] - lo_hi[0] > 50, f"the screenshot {shot} looks blank (grey levels {lo_hi})"
    print(f"checked {checked} pages; screenshot: {shot}")


#: The pages that open with the claims table (issue 61): the landing page and the summary.
CLAIMS_PAGES = ("book/intro", "notebooks/01_summary")
#: The first screen's end: the claims table must start above it (a 1280 x 800 laptop screen).
FOLD_PX = 800
#: Finds the claims table (its header names the authors' flat learner) once the page has laid out,
#: and records on <html> its top (px from the page's top) and every word of its cells that the
#: browser set on two lines (a word whose rendered boxes have more than one top).
CLAIMS_MEASURE = """<script>
window.addEventListener("load", () => {
  const html = document.documentElement;
  const table = [...document.querySelectorAll("table")].find(
    t => /authors.{0,3}flat learner/i.test((t.tHead || t.rows[0] || {}).textContent || ""));
  if (!table) { html.setAttribute("data-claims", "none"); return; }
  const broken = [];
  for (const cell of table.querySelectorAll("td, th")) {
    const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      for (const m of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
        if (tops.size > 1) broken.push(m[0]);
      }
    }
  }
  const top = Math.round(table.getBoundingClientRect().top + window.scrollY);
  html.setAttribute("data-claims", JSON.stringify({top: top, broken: broken}));
});
</script>"""
#: Text a reader should never see on a page: a missing value, an object's repr, a bare boolean or
#: a float printed with more than six significant digits.
RAW_VALUE = re.compile(r"\bnan\b|<IPython|\b(?:True|False)\b|(?<![\w.])\d*\.?\d+(?![\w.])", re.I)


def raw_values(text: str) -> list[str]:
    """What :data:`RAW_VALUE` finds in ``text`` that a reader should not see (numbers only when
    they carry more than six significant digits)."""
    found = []
    for m in RAW_VALUE.finditer(text):
        hit = m.group(0)
        if hit[0].isdigit() or hit[0] == ".":
            digits = hit.replace(".", "").lstrip("0")
            if "." not in hit or len(digits) <= 6:
                continue
        elif hit.lower() in ("true", "false") and hit not in ("True", "False"):
            continue  # prose "true"/"false"; a bare Python boolean is capitalised
        found.append(hit)
    return found


def test_the_raw_value_finder():
    assert raw_values("nan, <IPython.core.display.Markdown object>, True") == ["nan", "<IPython", "True"]
    numbers = "0.1234567 and 3.14159265 but 1,234,567 and 12.3456 s, 2.13.0, true to the paper"  # input, not expected
    assert raw_values(numbers) == ["0.1234567", "3.14159265"]
    words = "Financial nanny, NaNs are fine as words"
    assert raw_values(words) == []


def test_the_claims_table_reads_at_1280_px_and_no_page_shows_raw_values(book):
    """On the landing page and the summary, the claims table starts above the first screen's end
    (:data:`FOLD_PX`) and no word of its cells breaks over two lines at :data:`PAGE_WIDTH`; no page of
    the book shows ``nan``, an object's repr, a bare True/False or an over-long float."""
    from bs4 import BeautifulSoup

    html, tmp = book["html"], book["tmp"]
    problems = []
    for page in toc_pages():
        f = html / f"{page}.html"
        if not f.is_file():
            continue
        article = BeautifulSoup(f.read_text(), "html.parser")
        box = article.find("article") or article.find("main") or article
        # not code (an inline literal such as weights_only=True, a code block's deterministic=True,
        # a cell's source) nor the bibliography's entries (arXiv:1707.06347); an output cell's text is read
        for skip in box.select("script, style, .cell_input, .headerlink, mjx-container, .math, code, pre, "
                               ".citation"):
            skip.decompose()
        found = raw_values(box.get_text(" "))
        if found:
            problems.append(f"{page}: shows {list(dict.fromkeys(found))[:5]}")
    chromium = _chromium()
    import json

    for i, page in enumerate(CLAIMS_PAGES):
        f = html / f"{page}.html"
        measured = f.with_name(f"{f.stem}.claims.html")
        measured.write_text(f.read_text().replace("</body>", CLAIMS_MEASURE + "</body>", 1))
        res = _run_chromium(chromium, tmp / f"chromium-claims-{i}", "--dump-dom", f"--window-size={PAGE_WIDTH},{FOLD_PX}",
                            measured.as_uri())
        measured.unlink()
        m = re.search(r'<html[^>]*\sdata-claims="([^"]*)"', res.stdout)
        if m is None:
            problems.append(f"{page}: the claims-table measurement did not run (exit {res.returncode})")
            continue
        value = m.group(1).replace("&quot;", '"').replace("&amp;", "&")
        if value == "none":
            problems.append(f"{page}: no claims table")
            continue
        got = json.loads(value)
        if got["top"] >= FOLD_PX:
            problems.append(f"{page}: the claims table starts {got['top']} px down, below the first screen's "
                            f"{FOLD_PX} px")
        if got["broken"]:
            problems.append(f"{page}: words broken over two lines in the claims table at {PAGE_WIDTH} px: "
                            f"{got['broken'][:8]}")
    assert not problems, "\n".join(problems)
