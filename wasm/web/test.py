#!/usr/bin/env python3
"""`make web-test`: the web page in headless Chromium, checked against the native machines.

Serves .build/web/ on 127.0.0.1 (any free port), opens it in Debian's chromium through
chromium-driver (Selenium), and then, as a person would, with clicks and keystrokes:

- plays the games listed in .build/web-gen/native.json: a win with a taken square and moves
  after the end refused, then a restart and a draw. After every click, the board, the reply and
  the phase shown (and marked on the state diagram) must be what the native TicTacToe answered.
- types each CSV text of native.json (a doubled quote, an embedded newline, a stray quote, a
  byte after a closing quote, an unterminated quote, non-ASCII text) in two halves. After each
  half, the token list, the records table, the errors listed and the fields marked must be the
  native CSVTokenizer's.
- pastes more text than the page takes, and checks it says so and keeps working.
- presses the platformer's Reset button, then its event buttons (some with the keyboard)
  through each event script of native.json: a stun and a recover that resumes where the
  character was (deep history), fire, tick, tick (shot, then ready), events that are ignored.
  After every press, the active states, the status and the outputs shown, the states marked
  on the diagram and the log must be what the native Platformer chart answered.

It fails if the browser console shows any error, or if the page loads anything from anywhere
but the local server (every other host is unresolvable in the browser). It prints one line per
check and ends with `N passed, N failed`.

    python wasm/web/test.py                     # the test
    python wasm/web/test.py --screenshot FILE   # a picture of the page in use, for the README
"""
import argparse
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
import traceback

from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

ROOT = pathlib.Path(__file__).resolve().parents[2]
SITE = ROOT / ".build/web"
NATIVE = ROOT / ".build/web-gen/native.json"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT_SECONDS = 15
TOTAL_SECONDS = 240  # the whole run; a browser that hangs fails the test instead of CI


class OutOfTime(Exception):
    """The run took more than TOTAL_SECONDS: no further check is tried."""


def out_of_time(signum, frame):
    raise OutOfTime(f"the test did not finish in {TOTAL_SECONDS} s")


class Failure(Exception):
    """A check found the page different from what it should be."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise Failure(message)


def expect_equal(actual, expected, what: str) -> None:
    if actual != expected:
        raise Failure(f"{what}:\n    page:   {actual!r}\n    native: {expected!r}")


# ---- The server and the browser ------------------------------------------------------------

def start_server() -> tuple[subprocess.Popen, str]:
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "wasm/web/serve.py"), "--port", "0", "--quiet", "--directory", str(SITE)],
        stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1:"):
        server.kill()
        sys.exit(f"web-test: the server did not start (it printed {url!r})")
    return server, url


def start_browser(width: int, height: int) -> webdriver.Chrome:
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            sys.exit(f"web-test: {path} is missing: `make web-test` installs chromium and chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new", f"--window-size={width},{height}", "--disable-gpu", "--disable-dev-shm-usage",
        "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync",
        "--disable-background-networking", "--disable-component-update", "--hide-scrollbars",
        "--force-device-scale-factor=1", "--lang=en-US",
        # The page must need nothing but the local server: every other host fails to resolve.
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    ):
        options.add_argument(argument)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")  # Chromium's sandbox refuses to run as root
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))


def wait_for(driver, condition, what: str):
    try:
        return WebDriverWait(driver, WAIT_SECONDS).until(lambda _: condition())
    except TimeoutException:
        raise Failure(f"waited {WAIT_SECONDS} s for {what}") from None


def console_errors(driver) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def open_page(driver, url: str) -> None:
    driver.get(url)
    ready = wait_for(driver, lambda: driver.execute_script("return document.body.dataset.ready"), "the page to start")
    status = driver.find_element(By.ID, "load-status").text
    expect(ready == "yes", f"the page did not start: {status}")


# ---- Tic-tac-toe -----------------------------------------------------------------------------

READ_GAME = """
const squares = [...document.querySelectorAll('#ttt-board .square')];
return {
  board: squares.map((square) => square.dataset.mark || '.').join(''),
  shown: squares.map((square) => square.textContent || '.').join(''),
  reply: document.getElementById('ttt-reply').dataset.reply,
  message: document.getElementById('ttt-reply').textContent,
  phase: document.getElementById('ttt-status').dataset.phase,
  current: [...document.querySelectorAll('#ttt-diagram g.node.current title')].map((t) => t.textContent),
  log: document.querySelectorAll('#ttt-log li').length,
};
"""


def check_game(driver, game: dict) -> str:
    for number, step in enumerate(game["steps"], 1):
        before = driver.execute_script(READ_GAME)
        if step["click"] == "restart":
            driver.find_element(By.ID, "ttt-restart").click()
            what = f"click {number} (New game)"
        else:
            row, column = step["click"]
            driver.find_element(By.CSS_SELECTOR, f'#ttt-board .square[data-row="{row}"][data-column="{column}"]').click()
            what = f"click {number} (row {row}, column {column})"
        page = driver.execute_script(READ_GAME)
        expect_equal(page["reply"], step["reply"], f"{what}: the reply")
        expect_equal(page["board"], step["board"], f"{what}: the board")
        expect_equal(page["shown"], step["board"], f"{what}: the marks shown on the board")
        expect_equal(page["phase"], step["phase"], f"{what}: the phase shown")
        expect_equal(page["current"], [step["phase"]], f"{what}: the phase marked on the diagram")
        expect_equal(page["log"], before["log"] + 1, f"{what}: entries in the log")
        if step["reply"].startswith("refused"):
            expect(page["message"].startswith("Refused"), f"{what}: a refused move reads {page['message']!r}")
            expect_equal(page["board"], before["board"], f"{what}: the board after a refused move")
    refused = sum(step["reply"].startswith("refused") for step in game["steps"])
    return f"{len(game['steps'])} clicks, {refused} refused, ends in {game['steps'][-1]['phase']!r}"


# ---- CSV -------------------------------------------------------------------------------------

READ_CSV = """
const data = (node) => ({error: Number(node.dataset.error), line: Number(node.dataset.line), column: Number(node.dataset.column)});
const rows = [...document.querySelectorAll('#csv-records tr:not(.more)')];
return {
  bytes: document.getElementById('csv-output').dataset.inputBytes,
  value: document.getElementById('csv-input').value,
  summary: document.getElementById('csv-summary').textContent,
  tokens: [...document.querySelectorAll('#csv-tokens li')].map((li) =>
    li.dataset.kind === 'field' ? {field: li.querySelector('code').textContent}
    : li.dataset.kind === 'end' ? {end: true} : data(li)),
  records: rows.map((row) => [...row.querySelectorAll('td.field')].map((cell) => cell.textContent)),
  flagged: rows.flatMap((row, r) => [...row.querySelectorAll('td.field')].flatMap((cell, c) =>
    cell.classList.contains('has-error') ? [[r, c]] : [])),
  errors: [...document.querySelectorAll('#csv-errors li')].map(data),
  marks: document.querySelectorAll('#csv-echo mark').length,
};
"""


def expected_dom(tokens: list[dict]) -> dict:
    """What the page must show for the native tokens: records, errors, and the fields marked
    (an error belongs to the next field the tokenizer emits)."""
    records, record, errors, flagged, pending = [], [], [], [], False
    for token in tokens:
        if "error" in token:
            errors.append({"error": token["error"], "line": token["line"], "column": token["column"]})
            pending = True
        elif "field" in token:
            if pending:
                flagged.append([len(records), len(record)])
                pending = False
            record.append(token["field"])
        else:
            records.append(record)
            record = []
    native_tokens = [dict(token) for token in tokens]
    return {"tokens": native_tokens, "records": records, "errors": errors, "flagged": flagged}


def compare_csv(driver, text: str, tokens: list[dict], what: str) -> None:
    size = str(len(text.encode("utf-8")))
    wait_for(driver, lambda: driver.execute_script(READ_CSV)["bytes"] == size, f"{what}: the page to tokenize {size} bytes")
    page = driver.execute_script(READ_CSV)
    expect_equal(page["value"], text, f"{what}: the text in the box")
    expected = expected_dom(tokens)
    expect_equal(page["tokens"], expected["tokens"], f"{what}: the token stream")
    expect_equal(page["records"], expected["records"], f"{what}: the records table")
    expect_equal(page["errors"], expected["errors"], f"{what}: the errors listed")
    expect_equal(page["flagged"], expected["flagged"], f"{what}: the fields marked as having an error")
    expect_equal(page["marks"], len(expected["errors"]), f"{what}: the errors marked in the text")


def clear_box(box) -> None:
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.DELETE)


def check_csv(driver, case: dict) -> str:
    Select(driver.find_element(By.ID, "csv-delimiter")).select_by_value(str(case["delimiter"]))
    box = driver.find_element(By.ID, "csv-input")
    clear_box(box)
    compare_csv(driver, "", [], "an empty box")
    text, prefix = case["text"], case["prefix"]
    expect(text.startswith(prefix), "native.json: the prefix does not start the text")
    box.send_keys(prefix)
    compare_csv(driver, prefix, case["prefixTokens"], "the first half")
    box.send_keys(text[len(prefix):])
    compare_csv(driver, text, case["tokens"], "the whole text")
    errors = sum("error" in token for token in case["tokens"])
    return f"{len(text)} characters typed, {len(case['tokens'])} tokens, {errors} errors"


PASTE = """
const box = document.getElementById('csv-input');
box.value = arguments[0] === null ? 'a,b\\n'.repeat(300000) : arguments[0];
box.dispatchEvent(new Event('input'));
"""


def check_too_long(driver) -> str:
    # Pasted rather than typed, and cleared the same way: keystrokes in a textarea of 300,000
    # lines take headless Chromium minutes, whatever the page does.
    Select(driver.find_element(By.ID, "csv-delimiter")).select_by_value("44")
    driver.execute_script(PASTE, None)
    page = driver.execute_script(READ_CSV)
    expect("at most" in page["summary"], f"1.2 MB of text: the summary reads {page['summary']!r}")
    expect_equal(page["tokens"], [], "1.2 MB of text: the token stream")
    driver.execute_script(PASTE, "")
    driver.find_element(By.ID, "csv-input").send_keys("still,works")
    compare_csv(driver, "still,works", [{"field": "still"}, {"field": "works"}, {"end": True}], "after too much text")
    return "1.2 MB refused with a message; the box works after it"


# ---- Platformer ------------------------------------------------------------------------------

READ_PLATFORMER = """
const split = (text) => text ? text.split(',') : [];
const leaves = document.getElementById('pf-leaves');
const reply = document.getElementById('pf-reply');
const log = [...document.querySelectorAll('#pf-log li')];
return {
  leaves: split(leaves.dataset.leaves),
  leavesText: leaves.textContent,
  event: reply.dataset.event,
  status: reply.dataset.status,
  outputs: split(reply.dataset.outputs),
  message: reply.textContent,
  current: [...document.querySelectorAll('#pf-diagram g.node.current title')].map((t) => t.textContent),
  log: log.length,
  lastLogged: log.length ? log[log.length - 1].dataset.event + ' ' + log[log.length - 1].dataset.status : '',
  focused: document.activeElement?.dataset?.event ?? null,
};
"""

LOG_LENGTH = 8  # app.js keeps the last 8 events


def compare_platformer(driver, expected: dict, states: list[str], what: str, logged: int) -> dict:
    page = driver.execute_script(READ_PLATFORMER)
    expect_equal(page["event"], expected["event"], f"{what}: the event shown")
    expect_equal(page["status"], expected["status"], f"{what}: the status")
    expect_equal(page["leaves"], expected["leaves"], f"{what}: the active states")
    expect_equal(page["outputs"], expected["outputs"], f"{what}: the outputs")
    expect(", ".join(expected["leaves"]) in page["leavesText"], f"{what}: the active states read {page['leavesText']!r}")
    for output in expected["outputs"]:
        expect(output in page["message"], f"{what}: the reply {page['message']!r} does not name {output}")
    marked = sorted(page["current"], key=int)
    expect_equal(marked, [str(states.index(leaf)) for leaf in expected["leaves"]], f"{what}: the states marked on the diagram")
    expect_equal(page["lastLogged"], f"{expected['event']} {expected['status']}", f"{what}: the log's last entry")
    expect_equal(page["log"], min(logged, LOG_LENGTH), f"{what}: entries in the log")
    return page


def check_platformer(driver, native: dict, script: dict, keyboard: bool) -> str:
    states = native["states"]
    logged = len(driver.find_elements(By.CSS_SELECTOR, "#pf-log li"))
    driver.find_element(By.ID, "pf-reset").click()
    initial = dict(native["initial"], event="reset", status="reset")
    compare_platformer(driver, initial, states, "Reset", logged + 1)
    expect(driver.execute_script("return document.getElementById('pf-log').children.length") >= 1, "Reset: the log is empty")
    for number, step in enumerate(script["steps"], 1):
        button = driver.find_element(By.CSS_SELECTOR, f'#platformer button[data-event="{step["event"]}"]')
        if keyboard:
            # A real <button>: focused and pressed with Enter (or Space), as from the keyboard.
            driver.execute_script("arguments[0].focus()", button)
            button.send_keys(Keys.ENTER if number % 2 else Keys.SPACE)
        else:
            button.click()
        page = compare_platformer(driver, step, states, f"event {number} ({step['event']})", logged + 1 + number)
        if keyboard:
            expect_equal(page["focused"], step["event"], f"event {number} ({step['event']}): the focused button")
    ignored = sum(step["status"] == "ignored" for step in script["steps"])
    outputs = sum(len(step["outputs"]) for step in script["steps"])
    how = "pressed with the keyboard" if keyboard else "clicked"
    return f"{len(script['steps'])} events {how}, {ignored} ignored, {outputs} outputs, ends in {', '.join(script['steps'][-1]['leaves'])}"


def check_platformer_names(driver, native: dict) -> str:
    # The page's names are the generator's (one list, in the page); every event has a button.
    buttons = driver.execute_script(
        "return [...document.querySelectorAll('#platformer button[data-event]')].map((b) => b.dataset.event)")
    expect_equal(buttons, native["events"], "the event buttons")
    data = driver.execute_script("return JSON.parse(document.getElementById('platformer-data').textContent)")
    expect_equal(data["states"], native["states"], "the state names in the page")
    return f"{len(buttons)} event buttons, {len(data['states'])} state and {len(data['outputs'])} output names"


def check_local_only(driver, origin: str) -> str:
    resources = driver.execute_script(
        "return [location.href, ...performance.getEntriesByType('resource').map((entry) => entry.name)]")
    foreign = [name for name in resources if not name.startswith(origin)]
    expect(not foreign, f"the page loaded from elsewhere: {foreign}")
    return f"{len(resources)} files, all from {origin}"


# ---- Main ------------------------------------------------------------------------------------

def run_checks(driver, url: str, native: dict) -> int:
    passed, failed = 0, 0

    def check(name: str, body) -> None:
        nonlocal passed, failed
        try:
            detail = body()
            passed += 1
            print(f"ok    {name}: {detail}", flush=True)
        except Failure as failure:
            failed += 1
            print(f"FAIL  {name}: {failure}", flush=True)
        except WebDriverException as error:
            failed += 1
            print(f"FAIL  {name}: the browser: {error.msg}", flush=True)

    check("the page starts, all three modules loaded", lambda: open_page(driver, url) or "ready")
    check("everything comes from the local server", lambda: check_local_only(driver, url))
    for game in native["tictactoe"]:
        check(f"tic-tac-toe, {game['name']}", lambda game=game: check_game(driver, game))
    for case in native["csv"]:
        check(f"CSV, {case['name']}", lambda case=case: check_csv(driver, case))
    check("CSV, text longer than the page takes", lambda: check_too_long(driver))
    platformer = native["platformer"]
    check("platformer, the buttons and the names", lambda: check_platformer_names(driver, platformer))
    for index, script in enumerate(platformer["scripts"]):
        keyboard = index == len(platformer["scripts"]) - 1
        check(f"platformer, {script['name']}",
              lambda script=script, keyboard=keyboard: check_platformer(driver, platformer, script, keyboard))

    def no_console_errors() -> str:
        errors = console_errors(driver)
        expect(not errors, "the browser console shows errors:\n    " + "\n    ".join(errors))
        return "none"
    check("errors in the browser console", no_console_errors)

    print(f"web-test: {passed} passed, {failed} failed")
    return 1 if failed else 0


def screenshot(driver, url: str, path: pathlib.Path) -> int:
    open_page(driver, url)
    for row, column in [(1, 1), (0, 0), (0, 2), (2, 0), (1, 1)]:  # the last one is refused
        driver.find_element(By.CSS_SELECTOR, f'#ttt-board .square[data-row="{row}"][data-column="{column}"]').click()
    driver.execute_script("document.querySelectorAll('.square').forEach((s) => s.classList.remove('refused'))")
    for event in ["move 8", "draw", "jump", "fire"]:
        driver.find_element(By.CSS_SELECTOR, f'#platformer button[data-event="{event}"]').click()
    driver.execute_script("document.activeElement.blur(); window.scrollTo(0, 0)")
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(driver.get_window_size()["width"], height)
    # The window's height includes what is not the page: grow it by that much, or the bottom is cut.
    missing = height - driver.execute_script("return window.innerHeight")
    if missing > 0:
        driver.set_window_size(driver.get_window_size()["width"], height + missing)
    time.sleep(0.3)
    raw = path.with_suffix(".raw.png")
    driver.save_screenshot(str(raw))
    errors = console_errors(driver)
    if errors:
        raw.unlink()
        print("web-test: the browser console shows errors:\n  " + "\n  ".join(errors))
        return 1
    # pngquant (256 colours) makes the picture about a third of the size; without it, as taken.
    quantized = shutil.which("pngquant") and subprocess.run(
        ["pngquant", "--force", "--speed", "1", "--output", str(path), str(raw)]).returncode == 0
    if quantized:
        raw.unlink()
    else:
        raw.replace(path)
    print(f"{path}: {path.stat().st_size:,} bytes")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description="Test the web page in headless Chromium against the native machines.")
    parser.add_argument("--screenshot", type=pathlib.Path, help="take a picture of the page in use instead")
    args = parser.parse_args()
    for path in (SITE / "index.html", NATIVE):
        if not path.is_file():
            sys.exit(f"web-test: {path.relative_to(ROOT)} is missing: run make web")
    native = json.loads(NATIVE.read_text(encoding="utf-8"))

    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(TOTAL_SECONDS)
    server, url = start_server()
    driver = None
    try:
        driver = start_browser(1200, 900)
        if args.screenshot:
            return screenshot(driver, url, args.screenshot)
        return run_checks(driver, url, native)
    except (Failure, OutOfTime) as failure:
        print(f"web-test: {failure}")
        return 1
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        if driver is not None:
            driver.quit()
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
