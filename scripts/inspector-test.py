#!/usr/bin/env python3
"""make inspector-test: the inspector and the game for two, in headless Chromium, against a live host.

Starts `actomaton-host serve --listen` on a loopback port with the counter, tic-tac-toe and
platformer plugins (and --state, so that it can be restarted), opens its pages in Debian's
chromium through chromium-driver (Selenium), and, as people would, with clicks and keystrokes:

- two browsers (two separate profiles) join /play/tictactoe/KEY as X and O and play a game to a
  win, then (New game) to a draw. After every move, both boards must equal the instance's state
  as the host answers it. Refused moves (a taken square, a move after the end) show the
  machine's reason. Then the host is restarted in the middle of a game: both windows reconnect
  with ?after=SEQ and catch up with a move made while one of them was away;
- the inspector opens a counter that does not exist yet, starts its timer from the action
  form, and shows the timer's transitions arriving without a reload, the state following
  them and the timer counting down; a bad argument shows the host's one-line error beside the
  form; stopping the timer empties the timers table;
- when the plugin carries a diagram, the inspector's diagram of a tic-tac-toe game lights the
  node of the game's phase after every move;
- a host started with --tokens: the inspector asks for a token, refuses a bad one with the
  host's message (one not of a token's format before sending it), and with a good one lists the
  plugins; the play page watches with it; a token the host stops taking while a page watches
  asks for another, and the page watches again only once one is entered;
- what a hostile diagram, address, key or number could do: an SVG with XHTML elements in it is
  cleaned to SVG drawing elements; a malformed address, the keys . and .., and numbers that are
  not JSON or out of their type's range show an error instead; a watch refused again and again
  is tried less and less often;
- a deleted instance: the inspector and the play page read it afresh (no such instance yet)
  and follow the instance made again under its key, from its seq 1.

It fails on any JavaScript error in a page's console (network errors of refused requests
aside) and prints one line per check, then `N passed, N failed`.

    python scripts/inspector-test.py HOST_BINARY PLUGIN_DIR
    python scripts/inspector-test.py HOST_BINARY PLUGIN_DIR --screenshots DIR   # the README's pictures
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT_SECONDS = 20
TOTAL_SECONDS = 300


class Failure(Exception):
    """A check found a page different from what it should be."""


def expect(condition, message):
    if not condition:
        raise Failure(message)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Host:
    """actomaton-host serve --listen on a loopback port, restartable on the same port."""

    def __init__(self, binary, plugins, work, tokens=None):
        self.binary, self.plugins, self.tokens = binary, plugins, tokens
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.state = os.path.join(work, f"state-{self.port}.sqlite")
        self.log = open(os.path.join(work, f"host-{self.port}.log"), "ab")
        self.process = None

    def start(self):
        command = [self.binary, "serve", "--plugins", self.plugins, "--listen", f"127.0.0.1:{self.port}",
                   "--isolation", "none", "--state", self.state]
        if self.tokens:
            command += ["--tokens", self.tokens]
        self.process = subprocess.Popen(command, stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                connection.request("GET", "/readyz")
                if connection.getresponse().status == 200:
                    return
            except OSError:
                pass
            if self.process.poll() is not None:
                sys.exit(f"inspector-test: the host exited with {self.process.returncode}; see {self.log.name}")
            time.sleep(0.05)
        sys.exit("inspector-test: the host did not become ready in 60 s")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def request(self, method, path, body=None, token=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")


def start_browser(width=1280, height=900):
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            sys.exit(f"inspector-test: {path} is missing: `make inspector-test` installs chromium and chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", f"--window-size={width},{height}", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync",
                     "--disable-background-networking", "--disable-component-update", "--hide-scrollbars",
                     "--force-device-scale-factor=1", "--lang=en-US",
                     "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        options.add_argument(argument)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": COUNT_WEBSOCKETS})
    return driver


# Each page notes when it opens a WebSocket (performance.now(), in ms): how often it reconnects.
COUNT_WEBSOCKETS = """
window.webSocketsOpened = [];
const PageWebSocket = window.WebSocket;
window.WebSocket = class extends PageWebSocket {
  constructor(...parameters) { super(...parameters); window.webSocketsOpened.push(performance.now()); }
};
"""


def screenshot(driver, directory, name):
    """A picture of the page for the README, quantized to 256 colours when pngquant is there."""
    if not directory:
        return
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    raw = path + ".raw.png"
    driver.save_screenshot(raw)
    if shutil.which("pngquant") and subprocess.run(["pngquant", "--force", "--speed", "1", "--output", path, raw]).returncode == 0:
        os.unlink(raw)
    else:
        os.replace(raw, path)
    print(f"{path}: {os.path.getsize(path):,} bytes")


def wait_for(driver, condition, what):
    try:
        return WebDriverWait(driver, WAIT_SECONDS, poll_frequency=0.05).until(lambda _: condition())
    except TimeoutException:
        raise Failure(f"waited {WAIT_SECONDS} s for {what}") from None


def script_errors(driver, also_expected=()):
    """The console's errors, but for the network errors of requests the host refused on purpose
    (and those `also_expected` names)."""
    expected = ("Failed to load resource", "WebSocket connection to") + tuple(also_expected)
    return [entry["message"] for entry in driver.get_log("browser")
            if entry["level"] == "SEVERE" and not any(text in entry["message"] for text in expected)]


# ---- Tic-tac-toe for two ---------------------------------------------------------------------

READ_BOARD = """
const squares = [...document.querySelectorAll('#board button')];
return {board: squares.map((s) => s.dataset.mark || '.').join(''), seq: Number(document.getElementById('board').dataset.seq || 0),
        status: document.getElementById('status').textContent, reason: document.getElementById('reason').textContent,
        outcome: document.getElementById('status').dataset.outcome};
"""


def server_board(host, key, token=None):
    status, answer = host.request("GET", f"/v1/machines/tictactoe/{key}", token=token)
    expect(status == 200, f"GET tictactoe/{key} answered {status}: {answer}")
    return "".join(answer["state"]["board"]), answer["seq"], answer["state"]["outcome"]


def click(driver, row, column):
    driver.find_element(By.CSS_SELECTOR, f'#board button[data-row="{row}"][data-column="{column}"]').click()


def boards_follow(host, key, windows, token=None):
    """Both windows show the host's board and seq."""
    board, seq, outcome = server_board(host, key, token)
    for name, driver in windows.items():
        wait_for(driver, lambda: driver.execute_script(READ_BOARD)["seq"] >= seq, f"{name}'s board to reach seq {seq}")
        shown = driver.execute_script(READ_BOARD)
        expect(shown["board"] == board and shown["seq"] == seq,
               f"{name} shows {shown['board']} at seq {shown['seq']}, the host has {board} at seq {seq}")
    return board, outcome


def clicked(host, key, driver, element, token=None):
    """Clicks `element` and waits until the host has applied what it sent (a click returns
    before the page's request leaves)."""
    before = server_seq(host, key, token)
    element.click()
    wait_for(driver, lambda: server_seq(host, key, token) > before, "the click's request to reach the host")


def server_seq(host, key, token=None):
    status, answer = host.request("GET", f"/v1/machines/tictactoe/{key}", token=token)
    return answer["seq"] if status == 200 else 0


def play(host, key, windows, moves, token=None):
    """Each move clicked in its player's window; both boards checked after each."""
    player = "X"
    for row, column in moves:
        square = windows[player].find_element(By.CSS_SELECTOR, f'#board button[data-row="{row}"][data-column="{column}"]')
        clicked(host, key, windows[player], square, token)
        board, _ = boards_follow(host, key, windows, token)
        expect(board[row * 3 + column] == player, f"{player}'s move at {row},{column} is not on the board: {board}")
        player = "O" if player == "X" else "X"
    return server_board(host, key, token)


def test_two_players(host, base, checks, screenshots):
    x, o = start_browser(900, 700), start_browser(900, 700)
    try:
        key = "duel-1"
        x.get(f"{base}/play/tictactoe/{key}?as=X")
        o.get(f"{base}/play/tictactoe/{key}?as=O")
        windows = {"X": x, "O": o}
        for driver in windows.values():
            wait_for(driver, lambda: driver.execute_script(READ_BOARD)["status"].startswith("A new game"), "the empty board")
        _, _, outcome = play(host, key, windows, [(0, 0), (1, 0), (0, 1), (1, 1)])
        # A refused move: the machine's reason, the board unchanged.
        click(x, 1, 1)
        wait_for(x, lambda: x.execute_script(READ_BOARD)["reason"], "X's window to show why the move was refused")
        expect(x.execute_script(READ_BOARD)["reason"] == "plugin tictactoe: 'place 1 1' failed: that square is taken",
               f"the reason shown: {x.execute_script(READ_BOARD)['reason']!r}")
        boards_follow(host, key, windows)
        _, _, outcome = play(host, key, windows, [(0, 2)])
        expect(outcome == "X won", f"the game ended {outcome!r}, not 'X won'")
        for name, driver in windows.items():
            wait_for(driver, lambda: driver.execute_script(READ_BOARD)["outcome"] == "X won", f"{name} to show X won")
        click(o, 2, 2)
        wait_for(o, lambda: "the game is over" in o.execute_script(READ_BOARD)["reason"], "O's window to show the game is over")
        screenshot(o, screenshots, "play-tictactoe.png")
        checks.append("two windows played tic-tac-toe to a win; both boards followed every move; refused moves showed the machine's reason")

        clicked(host, key, x, x.find_element(By.ID, "restart"))
        for name, driver in windows.items():
            wait_for(driver, lambda: driver.execute_script(READ_BOARD)["board"] == "." * 9, f"{name}'s board to be cleared")
        _, _, outcome = play(host, key, windows, [(0, 0), (1, 1), (2, 2), (0, 2), (2, 0), (1, 0), (1, 2), (2, 1), (0, 1)])
        expect(outcome == "draw", f"the game ended {outcome!r}, not in a draw")
        for name, driver in windows.items():
            wait_for(driver, lambda: driver.execute_script(READ_BOARD)["outcome"] == "draw", f"{name} to show the draw")
        checks.append("a new game in the same windows, to a draw; both boards followed every move")

        # The host restarts mid-game; O's window is away meanwhile and X moves: both catch up.
        clicked(host, key, x, x.find_element(By.ID, "restart"))
        boards_follow(host, key, windows)
        play(host, key, windows, [(1, 1)])
        o.get("about:blank")
        host.stop()
        host.start()
        expect(not x.find_element(By.CSS_SELECTOR, '#board button[data-row="0"][data-column="0"]').is_enabled(),
               "X may click on O's turn")
        status, _ = host.request("POST", f"/v1/machines/tictactoe/{key}", {"action": "place", "args": [0, 0]})
        expect(status == 200, f"O's move over HTTP answered {status}")
        o.get(f"{base}/play/tictactoe/{key}?as=O")
        board, _ = boards_follow(host, key, windows)
        expect(board == "O...X....", f"after the restart the board is {board}")
        checks.append("after a host restart both windows reconnected (?after=SEQ) and caught up with a move made meanwhile")
        for name, driver in windows.items():
            errors = script_errors(driver)
            expect(not errors, f"{name}'s console: {errors}")
    finally:
        x.quit()
        o.quit()


# ---- The platformer, from the keyboard ------------------------------------------------------------

def test_platformer(host, base, checks, screenshots):
    driver = start_browser(900, 700)
    watcher = start_browser(900, 700)
    try:
        key = "runner-1"
        driver.get(f"{base}/play/platformer/{key}")
        watcher.get(f"{base}/play/platformer/{key}")
        for page in (driver, watcher):
            wait_for(page, lambda: page.find_element(By.ID, "leaves").text.startswith("idle"), "the character's page")
        body = driver.find_element(By.TAG_NAME, "body")
        presses = [(Keys.ARROW_RIGHT, None), (Keys.SHIFT + Keys.ARROW_RIGHT, None), ("d", None), ("f", None), ("t", None),
                   ("t", None), ("e", None), (" ", None), ("h", None), ("r", None), ("a", None), ("l", None),
                   (Keys.ARROW_DOWN, None)]
        for press, _ in presses:
            _, before = host.request("GET", f"/v1/machines/platformer/{key}")
            body.send_keys(press)
            wait_for(driver, lambda: host.request("GET", f"/v1/machines/platformer/{key}")[1] != before
                     and host.request("GET", f"/v1/machines/platformer/{key}")[1]["seq"] > (before or {}).get("seq", 0),
                     f"the key {press!r} to reach the host")
            _, answer = host.request("GET", f"/v1/machines/platformer/{key}")
            expected = ", ".join(answer["state"]["leaves"])
            for name, page in (("the player's window", driver), ("a second window", watcher)):
                wait_for(page, lambda: page.find_element(By.TAG_NAME, "body").get_attribute("data-seq") == str(answer["seq"]),
                         f"{name} to reach seq {answer['seq']}")
                shown = page.find_element(By.ID, "leaves").text
                expect(shown == expected, f"{name} shows {shown!r}, the host {expected!r} at seq {answer['seq']}")
                # The chart's context (ammo, stun ticks, jumps) as the host has it.
                state = answer["state"]
                data = page.find_element(By.ID, "data").text
                expected_data = f"{state['ammo']} rounds, stunned for {state['stunTicks']} ticks, {state['jumps']} jumps used"
                expect(data == expected_data, f"{name} shows the data {data!r}, the host {expected_data!r}")
        screenshot(watcher, screenshots, "play-platformer.png")
        checks.append(f"the platformer driven from the keyboard: {len(presses)} keys, both windows showed the host's active states and data")
        for page in (driver, watcher):
            errors = script_errors(page)
            expect(not errors, f"the console: {errors}")
    finally:
        driver.quit()
        watcher.quit()


# ---- The inspector ----------------------------------------------------------------------------

READ_INSTANCE = """
return {seq: Number(document.getElementById('seq')?.textContent || 0),
        state: document.getElementById('state')?.textContent || '',
        transitions: [...document.querySelectorAll('#transitions li.transition')].map((li) => li.textContent),
        timers: [...document.querySelectorAll('#timers tr')].filter((tr) => tr.children.length === 5)
                 .map((tr) => [...tr.children].map((td) => td.textContent)),
        connection: document.getElementById('connection')?.textContent || ''};
"""


def action_form(driver, name):
    return driver.find_element(By.CSS_SELECTOR, f'form.action[data-action="{name}"]')


def send_form(driver, name, *values):
    """Fills and sends an action's form, and waits for its answer beside it (a transition or
    an error): the host has then applied it, or refused it."""
    form = action_form(driver, name)
    inputs = form.find_elements(By.CSS_SELECTOR, "input, select")
    for field, value in zip(inputs, values):
        field.clear()
        field.send_keys(str(value))
    result = form.find_element(By.CSS_SELECTOR, ".result")
    driver.execute_script("arguments[0].textContent = ''", result)
    form.find_element(By.CSS_SELECTOR, "button").click()
    wait_for(driver, lambda: result.text not in ("", "…"), f"the answer to {name}")
    return form


def test_inspector(host, base, checks, screenshots):
    driver = start_browser()
    try:
        driver.get(f"{base}/")
        wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, '#plugin-list a[data-plugin="counter"]'), "the plugin list")
        names = [a.text for a in driver.find_elements(By.CSS_SELECTOR, "#plugin-list a")]
        expect(names == ["counter", "platformer", "tictactoe"], f"the plugins listed: {names}")
        driver.find_element(By.CSS_SELECTOR, '#plugin-list a[data-plugin="counter"]').click()
        wait_for(driver, lambda: driver.find_elements(By.ID, "open-instance"), "the counter's page")
        signatures = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "ul.signatures li")]
        expect("start(interval_ms: uint32)" in signatures, f"the counter's actions: {signatures}")
        field = driver.find_element(By.CSS_SELECTOR, "#open-instance input")
        field.send_keys("ticker-1")
        field.send_keys(Keys.ENTER)
        wait_for(driver, lambda: "no such instance yet" in driver.execute_script(READ_INSTANCE)["connection"], "a new instance's page")
        checks.append("the inspector lists the plugins and their manifests, and opens an instance by key")

        # What a hostile plugin could put in its diagram's SVG does not reach the page.
        cleaned = driver.execute_script("""
            const svg = sanitizedSVG('<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'
              + '<script>window.owned = 1</script><a xlink:href="javascript:window.owned=2"><text>x</text></a>'
              + '<g onclick="window.owned=3" style="display:none"><foreignObject><div>y</div></foreignObject></g>'
              + '<image href="http://elsewhere/i.png"/></svg>');
            return svg.outerHTML;""")
        for forbidden in ("<script", "<a ", "javascript:", "onclick", "style=", "foreignObject", "<image", "elsewhere"):
            expect(forbidden not in cleaned, f"the cleaned diagram still holds {forbidden!r}: {cleaned}")
        expect("<text>x</text>" in cleaned, f"the cleaned diagram lost its text: {cleaned}")
        # Regression (audit): Graphviz writes a fontname unescaped, so DOT text could slip XHTML in:
        # a refresh that took the tab elsewhere, a form asking for a password, a dialog.
        cleaned = driver.execute_script("""
            const svg = sanitizedSVG('<svg xmlns="http://www.w3.org/2000/svg"><g class="node"><title>a</title>'
              + '<text font-family="Helvetica"/><h:meta xmlns:h="http://www.w3.org/1999/xhtml" http-equiv="refresh" content="0;url=about:blank"/>'
              + '<h:form xmlns:h="http://www.w3.org/1999/xhtml"><h:input type="password"/></h:form>'
              + '<h:dialog xmlns:h="http://www.w3.org/1999/xhtml" open="">log in</h:dialog>'
              + '<g xmlns="http://www.w3.org/1999/xhtml"><meta http-equiv="refresh" content="0"/></g>'
              + '<set attributeName="fill" to="red"/><ellipse cx="1" rx="2" id="main" fill="url(https://elsewhere/p)"/></g></svg>');
            return {html: svg.outerHTML, foreign: [svg, ...svg.querySelectorAll('*')].filter((node) =>
              node.namespaceURI !== 'http://www.w3.org/2000/svg').map((node) => node.nodeName)};""")
        expect(not cleaned["foreign"], f"the cleaned diagram holds elements outside SVG: {cleaned['foreign']}")
        for forbidden in ("meta", "form", "input", "dialog", "<set", "log in", "elsewhere", 'id="main"'):
            expect(forbidden not in cleaned["html"], f"the cleaned diagram still holds {forbidden!r}: {cleaned['html']}")
        expect('<ellipse cx="1" rx="2" id="diagram-main">' in cleaned["html"] and "<title>a</title>" in cleaned["html"],
               f"the cleaned diagram lost its drawing: {cleaned['html']}")
        # Parsing it, the browser reports the page's policy blocking the handler and the style:
        # read here, so that only those are let through.
        unexpected = script_errors(driver, also_expected=("Content Security Policy",))
        expect(not unexpected, f"the console, cleaning a hostile diagram: {unexpected}")
        checks.append("a diagram's SVG is cleaned of scripts, links, handlers and foreign content before it is shown; "
                      "only SVG drawing elements are kept, XHTML ones dropped")

        # Regression (audit): the hash's percent-escapes were decoded unchecked: "%" threw, the
        # page stayed on "Loading…", or on a view saying "live" that no longer followed anything.
        driver.get(f"{base}/?fresh#/counter/%")
        wait_for(driver, lambda: driver.find_elements(By.ID, "route-error"), "the error for a malformed address")
        expect("is not an address of the inspector" in driver.find_element(By.ID, "route-error").text,
               driver.find_element(By.ID, "route-error").text)
        driver.get(f"{base}/#/counter/ticker-1")
        wait_for(driver, lambda: "no such instance yet" in driver.execute_script(READ_INSTANCE)["connection"], "the instance's page")
        driver.execute_script("location.hash = '#/counter/%E0%A4%A'")
        wait_for(driver, lambda: driver.find_elements(By.ID, "route-error") and not driver.find_elements(By.ID, "connection"),
                 "the open view to give way to the error")
        # Regression (audit): the keys . and .. passed the page's check; the browser then took them
        # as dot-segments and asked for another path.
        driver.get(f"{base}/#/counter")
        wait_for(driver, lambda: driver.find_elements(By.ID, "open-instance"), "the counter's page")
        for key in (".", ".."):
            field = driver.find_element(By.CSS_SELECTOR, "#open-instance input")
            field.clear()
            field.send_keys(key)
            field.send_keys(Keys.ENTER)
            wait_for(driver, lambda: driver.find_element(By.ID, "open-instance-error").text
                     == "an instance key cannot be . or .. (a URL takes them as its path's dot-segments)", f"the key {key!r} refused")
            expect(driver.execute_script("return location.hash") == "#/counter", f"the key {key!r} was opened")
            expect("invalid" in field.get_attribute("class"), f"the key {key!r}'s field is not marked")
        driver.get(f"{base}/#/counter/..")
        wait_for(driver, lambda: driver.find_elements(By.ID, "key-error"), "the error for the key .. in the address")
        checks.append("a malformed address, and the keys . and .., show an error instead of a page that follows nothing")

        # Regression (audit): a watch refused again and again (4404 here) was tried 4 times a second for ever.
        driver.execute_script("window.webSocketsOpened = []; location.hash = '#/counter/absent-1'")
        wait_for(driver, lambda: len(driver.execute_script("return window.webSocketsOpened")) >= 5, "five watches of a missing instance")
        opened = driver.execute_script("return window.webSocketsOpened")
        gaps = [later - earlier for earlier, later in zip(opened, opened[1:])]
        expect(gaps[3] >= 900 and gaps[3] > gaps[0], f"the watch is tried again without backing off: {[round(gap) for gap in gaps]} ms apart")
        checks.append(f"a refused watch is tried less and less often ({', '.join(str(round(gap)) for gap in gaps[:4])} ms apart)")

        driver.get(f"{base}/#/counter/ticker-1")
        wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, 'form.action[data-action="add"]'), "the instance's page")

        form = send_form(driver, "add", "abc")
        expect(form.find_element(By.CSS_SELECTOR, ".result").text == "argument 1 (amount) must be a number (int64)",
               f"a bad number: {form.find_element(By.CSS_SELECTOR, '.result').text!r}")
        # Regression (audit): numbers that are not JSON (leading zeros) went to the host, which
        # refused the body with no field marked; ranges were not checked.
        for action, value, error in [
                ("add", "007", "argument 1 (amount) must be a number (int64)"),
                ("add", "-00", "argument 1 (amount) must be a number (int64)"),
                ("add", "9223372036854775808",
                 "argument 1 (amount) of 'add' is 9223372036854775808, out of range for int64 (-9223372036854775808...9223372036854775807)"),
                ("start", "-5", "argument 1 (interval_ms) of 'start' is -5, out of range for uint32 (0...4294967295)")]:
            form = send_form(driver, action, value)
            shown = form.find_element(By.CSS_SELECTOR, ".result").text
            expect(shown == error, f"{action} {value}: {shown!r}")
            expect("invalid" in form.find_element(By.CSS_SELECTOR, "input").get_attribute("class"), f"{action} {value}: the field is not marked")
        status, _ = host.request("GET", "/v1/machines/counter/ticker-1")
        expect(status == 404, f"an action the page refused reached the host ({status})")
        checks.append("numbers that are not JSON, or out of their type's range, are refused beside the form, the field marked")

        send_form(driver, "add", "40")
        wait_for(driver, lambda: '"count": 40' in driver.execute_script(READ_INSTANCE)["state"], "the state after add 40")
        form = send_form(driver, "add", "9223372036854775807")
        wait_for(driver, lambda: "failed" in form.find_element(By.CSS_SELECTOR, ".result").text, "the host's error beside the form")
        expect(form.find_element(By.CSS_SELECTOR, ".result").text.startswith("plugin counter: 'add 9223372036854775807' failed: "),
               f"the host's error: {form.find_element(By.CSS_SELECTOR, '.result').text!r}")
        expect("error" in form.find_element(By.CSS_SELECTOR, ".result").get_attribute("class"), "the host's error is not marked")
        checks.append("an action the host refuses shows its one-line error beside the form")

        send_form(driver, "start", "300")
        wait_for(driver, lambda: len(driver.execute_script(READ_INSTANCE)["transitions"]) >= 5, "timer transitions without a reload")
        shown = driver.execute_script(READ_INSTANCE)
        expect(any("increment" in text and "repeating" in text for text in shown["transitions"]),
               f"no timer transition in the log: {shown['transitions'][:3]}")
        expect(shown["timers"] and shown["timers"][0][0] == "repeating" and shown["timers"][0][4].endswith(" s"),
               f"the timers table: {shown['timers']}")
        due = float(shown["timers"][0][4].split()[0])
        expect(0 <= due <= 0.3, f"the countdown shows {due} s of a 0.3 s period")
        _, answer = host.request("GET", "/v1/machines/counter/ticker-1")
        wait_for(driver, lambda: driver.execute_script(READ_INSTANCE)["seq"] >= answer["seq"], "the page to reach the host's seq")
        screenshot(driver, screenshots, "inspector.png")
        send_form(driver, "stop")
        wait_for(driver, lambda: not driver.execute_script(READ_INSTANCE)["timers"], "the timers table to empty after stop")
        _, answer = host.request("GET", "/v1/machines/counter/ticker-1")
        wait_for(driver, lambda: driver.execute_script(READ_INSTANCE)["seq"] == answer["seq"], "the last seq")
        expect(f'"count": {answer["state"]["count"]}' in driver.execute_script(READ_INSTANCE)["state"], "the state shown is not the host's")
        checks.append("the inspector shows a counter's timer transitions arriving live, its state and its timer counting down")

        # The diagram of a tic-tac-toe game, when the plugin carries one.
        _, plugins = host.request("GET", "/v1/plugins")
        tictactoe = next(p for p in plugins["plugins"] if p["name"] == "tictactoe")
        if tictactoe.get("diagram"):
            key = "lit-1"
            driver.get(f"{base}/#/tictactoe/{key}")
            wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, 'form.action[data-action="place"]'), "the tic-tac-toe page")
            for row, column in [(0, 0), (1, 1), (0, 1), (2, 2), (0, 2)]:
                send_form(driver, "place", row, column)
                _, answer = host.request("GET", f"/v1/machines/tictactoe/{key}")
                wait_for(driver, lambda: driver.find_element(By.ID, "diagram").get_attribute("data-active") == "\n".join(answer["active"]),
                         f"the diagram to light {answer['active']} at seq {answer['seq']}")
                lit = {node.get_attribute("data-node") for node in driver.find_elements(By.CSS_SELECTOR, "#diagram .active")}
                expect(lit == set(answer["active"]), f"the diagram lights {sorted(lit)}, the host says {answer['active']}")
            checks.append("the diagram's lit node followed a tic-tac-toe game to its end")
            # A statechart: its compound states are clusters, lit with their leaves.
            driver.get(f"{base}/#/platformer/runner-1")
            wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, 'form.action[data-action="jump"]'), "the platformer's page")
            for event in ("jump", "draw", "apex", "land"):
                send_form(driver, event)
                _, answer = host.request("GET", "/v1/machines/platformer/runner-1")
                wait_for(driver, lambda: driver.find_element(By.ID, "diagram").get_attribute("data-active") == "\n".join(answer["active"]),
                         f"the platformer's diagram to light {answer['active']} at seq {answer['seq']}")
                lit = {node.get_attribute("data-node") for node in driver.find_elements(By.CSS_SELECTOR, "#diagram .active")}
                expect(lit == set(answer["active"]), f"the platformer's diagram lights {sorted(lit)}, the host says {answer['active']}")
            screenshot(driver, screenshots, "inspector-statechart.png")
            checks.append("the platformer's statechart diagram lit its active states, compound ones included, after each event")
        errors = script_errors(driver)
        expect(not errors, f"the console: {errors}")
    finally:
        driver.quit()


def test_deletion(host, base, checks):
    """Regression (audit): after a deletion the pages resumed with their stale ?after=SEQ: they
    froze on the old state, and later took the next instance's transitions as the old one's."""
    inspector, player = start_browser(), start_browser(900, 700)
    try:
        for _ in range(3):
            host.request("POST", "/v1/machines/counter/doomed-1", {"action": "increment"})
        host.request("POST", "/v1/machines/tictactoe/doomed-2", {"action": "place", "args": [0, 0]})
        host.request("POST", "/v1/machines/tictactoe/doomed-2", {"action": "place", "args": [1, 1]})
        inspector.get(f"{base}/#/counter/doomed-1")
        player.get(f"{base}/play/tictactoe/doomed-2?as=X")
        wait_for(inspector, lambda: inspector.execute_script(READ_INSTANCE)["seq"] == 3
                 and inspector.execute_script(READ_INSTANCE)["connection"] == "live", "the counter at seq 3, live")
        wait_for(player, lambda: player.execute_script(READ_BOARD)["board"] == "X...O....", "the game at seq 2")
        for name in ("counter/doomed-1", "tictactoe/doomed-2"):
            status, _ = host.request("DELETE", f"/v1/machines/{name}")
            expect(status == 200, f"DELETE {name} answered {status}")
        wait_for(inspector, lambda: "no such instance yet" in inspector.execute_script(READ_INSTANCE)["connection"]
                 and inspector.execute_script(READ_INSTANCE)["seq"] == 0, "the inspector to read the deleted counter afresh")
        expect(not inspector.execute_script(READ_INSTANCE)["transitions"], "the deleted counter's transitions are still shown")
        wait_for(player, lambda: player.execute_script(READ_BOARD)["board"] == "." * 9
                 and player.execute_script(READ_BOARD)["status"].startswith("A new game"), "the play page to read the deleted game afresh")
        # Made again under the same keys: followed from seq 1, not from the old life's seq.
        host.request("POST", "/v1/machines/counter/doomed-1", {"action": "add", "args": [5]})
        host.request("POST", "/v1/machines/tictactoe/doomed-2", {"action": "place", "args": [2, 2]})
        wait_for(inspector, lambda: inspector.execute_script(READ_INSTANCE)["seq"] == 1
                 and '"count": 5' in inspector.execute_script(READ_INSTANCE)["state"], "the counter made again, at seq 1")
        wait_for(player, lambda: player.execute_script(READ_BOARD)["board"] == "........X"
                 and player.execute_script(READ_BOARD)["seq"] == 1, "the game made again, at seq 1")
        checks.append("after a DELETE the inspector and the play page read the instance afresh and follow the one made again")
        for page in (inspector, player):
            errors = script_errors(page)
            expect(not errors, f"the console: {errors}")
    finally:
        inspector.quit()
        player.quit()


def test_tokens(binary, plugins, work, base_checks):
    tokens = os.path.join(work, "tokens")
    with open(tokens, "w") as file:
        file.write("inspector-token-0123456789 *\n")
    os.chmod(tokens, 0o600)
    host = Host(binary, plugins, work, tokens=tokens)
    host.start()
    driver = start_browser()
    try:
        driver.get(f"{host.url}/")
        wait_for(driver, lambda: driver.find_element(By.ID, "token-panel").is_displayed(), "the page to ask for a token")
        expect("no token" in driver.find_element(By.ID, "token-error").text, driver.find_element(By.ID, "token-error").text)
        field = driver.find_element(By.ID, "token")
        # Regression (audit): a token with a character a header cannot carry was kept, and then
        # every request threw before it left, without asking again.
        field.send_keys("inspector-tökén-0123456789")
        field.send_keys(Keys.ENTER)
        wait_for(driver, lambda: driver.find_element(By.ID, "token-error").text
                 == "a token is 16 to 256 visible ASCII characters (no spaces)", "a token not of the format to be refused")
        expect(driver.execute_script("return sessionStorage.getItem('actomaton.token')") is None, "the malformed token was kept")
        field.clear()
        field.send_keys("wrong-token-0123456789")
        field.send_keys(Keys.ENTER)
        wait_for(driver, lambda: driver.find_element(By.ID, "token-error").text == "the token is not valid"
                 and driver.find_element(By.ID, "token-panel").is_displayed(), "the bad token to be refused")
        field.send_keys("inspector-token-0123456789")
        field.send_keys(Keys.ENTER)
        wait_for(driver, lambda: len(driver.find_elements(By.CSS_SELECTOR, "#plugin-list a")) == 3, "the plugins, with the token")
        base_checks.append("with --tokens the inspector asks for a token, refuses one not of a token's format and a bad one "
                           "with the host's message, takes a good one")
        # One kept before the page checked the format is not sent: the page asks for another.
        driver.execute_script("sessionStorage.setItem('actomaton.token', 'inspector-tökén-0123456789')")
        driver.refresh()
        wait_for(driver, lambda: driver.find_element(By.ID, "token-panel").is_displayed()
                 and "no token" in driver.find_element(By.ID, "token-error").text, "a kept malformed token to be asked again")
        field = driver.find_element(By.ID, "token")
        field.send_keys("inspector-token-0123456789")
        field.send_keys(Keys.ENTER)
        wait_for(driver, lambda: len(driver.find_elements(By.CSS_SELECTOR, "#plugin-list a")) == 3, "the plugins, with the token again")
        base_checks.append("a kept token that is not of a token's format is not sent: the page asks for another")
        # The play page watches with the token (a WebSocket subprotocol): a move made over HTTP shows.
        driver.get(f"{host.url}/play/tictactoe/guarded?as=X")
        click(driver, 1, 1)
        wait_for(driver, lambda: driver.execute_script(READ_BOARD)["board"] == "....X....", "X's move with the token")
        status, _ = host.request("POST", "/v1/machines/tictactoe/guarded", {"action": "place", "args": [0, 0]},
                                 token="inspector-token-0123456789")
        expect(status == 200, f"O's move answered {status}")
        wait_for(driver, lambda: driver.execute_script(READ_BOARD)["board"] == "O...X....", "the watched move, with the token")
        base_checks.append("the play page watches with the token as a WebSocket subprotocol")

        # Regression (audit): a watch refused for its token (4401) was tried again 4 times a
        # second for ever, and the failed authentications had every client of the address refused.
        driver.get(f"{host.url}/#/tictactoe/guarded")
        wait_for(driver, lambda: driver.execute_script(READ_INSTANCE)["connection"] == "live", "the inspector watching, with the token")
        host.stop()
        with open(tokens, "w") as file:
            file.write("rotated-token-0123456789 *\n")
        host.start()
        wait_for(driver, lambda: driver.find_element(By.ID, "token-panel").is_displayed(), "the page to ask for a new token")
        expect(driver.find_element(By.ID, "token-error").text == "the token is not valid", driver.find_element(By.ID, "token-error").text)
        attempts = len(driver.execute_script("return window.webSocketsOpened"))
        field = driver.find_element(By.ID, "token")
        field.send_keys("rotated-token-0123456789")
        field.send_keys(Keys.ENTER)
        wait_for(driver, lambda: driver.execute_script(READ_INSTANCE)["connection"] == "live", "the inspector watching with the new token")
        expect(len(driver.execute_script("return window.webSocketsOpened")) == attempts + 1,
               "the page watched again before a new token was entered")
        base_checks.append("a token the host no longer takes stops the watch and asks for another; the page watches again with it")
        errors = script_errors(driver)
        expect(not errors, f"the console: {errors}")
    finally:
        driver.quit()
        host.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("host")
    parser.add_argument("plugins")
    parser.add_argument("--screenshots", help="a directory for the README's pictures")
    arguments = parser.parse_args()
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(Failure(f"the test did not finish in {TOTAL_SECONDS} s")))
    signal.alarm(TOTAL_SECONDS)
    work = tempfile.mkdtemp(prefix="actomaton-inspector-")
    plugins = os.path.join(work, "plugins")
    os.makedirs(plugins)
    for name in ("counter", "tictactoe", "platformer"):
        shutil.copy(os.path.join(arguments.plugins, f"{name}.so"), plugins)
    host = Host(arguments.host, plugins, work)
    host.start()
    checks, failures = [], []
    try:
        for test in (lambda: test_two_players(host, host.url, checks, arguments.screenshots),
                     lambda: test_platformer(host, host.url, checks, arguments.screenshots),
                     lambda: test_inspector(host, host.url, checks, arguments.screenshots),
                     lambda: test_deletion(host, host.url, checks),
                     lambda: test_tokens(arguments.host, plugins, work, checks)):
            before = len(checks)
            try:
                test()
            except Failure as failure:
                failures.append(str(failure))
            except Exception:
                failures.append(traceback.format_exc())
            for line in checks[before:]:
                print(f"ok: {line}")
    finally:
        host.stop()
    for failure in failures:
        print(f"FAILED: {failure}")
    print(f"{len(checks)} passed, {len(failures)} failed")
    if failures:
        print(f"the host's logs are kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
