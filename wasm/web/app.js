// The page's behaviour: loads tictactoe.wasm, csv.wasm and platformer.wasm and draws what they
// answer.
//
// No rule of any machine lives here. The board is read back from the module after every
// action, the tokens are the module's own, and so are the character's states and outputs.
// The modules' C interface is documented in wasm/actomaton_wasm.h; only the functions listed
// there are used. The platformer's state and output names come with the page (the generator
// writes them, from the Swift enums, into the <script id="platformer-data"> of index.html).

// The interface grows only at the end, so a module of a later version has all of these too.
const ABI_VERSION = 1;
const NEEDED_EXPORTS = {
  tictactoe: ["ttt_reset", "ttt_send", "ttt_square", "ttt_next_player", "ttt_outcome"],
  csv: ["csv_reset", "csv_input_buffer", "csv_feed", "csv_finish", "csv_output_pointer", "csv_output_length"],
  platformer: ["platformer_reset", "platformer_send", "platformer_leaves", "platformer_output_count", "platformer_output"],
};

/** Fetches and instantiates wasm/NAME.wasm; it imports nothing. */
async function loadModule(name) {
  const url = `wasm/${name}.wasm`;
  const response = await fetch(url);
  if (!response.ok) {
    throw new Error(`${url}: the server answered ${response.status} ${response.statusText}`);
  }
  const type = response.headers.get("content-type") || "(none)";
  if (!type.startsWith("application/wasm")) {
    throw new Error(`${url} was served as ${type}, not application/wasm: serve the page with make web-serve`);
  }
  const size = Number(response.headers.get("content-length")) || 0;
  const { instance } = await WebAssembly.instantiateStreaming(response, {});
  const exports = instance.exports;
  const version = typeof exports.am_abi_version === "function" ? exports.am_abi_version() : 0;
  if (version < ABI_VERSION) {
    throw new Error(`${url} speaks version ${version} of the interface; this page needs ${ABI_VERSION} or later`);
  }
  const missing = NEEDED_EXPORTS[name].filter((export_) => typeof exports[export_] !== "function");
  if (!(exports.memory instanceof WebAssembly.Memory)) missing.push("memory");
  if (missing.length) throw new Error(`${url} does not export ${missing.join(", ")}`);
  const label = document.querySelector(`.module[data-module="${name}"]`);
  if (label) label.textContent = size ? `${name}.wasm, ${size.toLocaleString("en")} bytes` : `${name}.wasm`;
  return exports;
}

function element(tag, properties = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(properties)) {
    if (key === "dataset") Object.assign(node.dataset, value);
    else if (key in node) node[key] = value;
    else node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

// ---- Tic-tac-toe ------------------------------------------------------------------------

const SQUARE_NAMES = [
  "the top left square", "the top middle square", "the top right square",
  "the middle left square", "the centre square", "the middle right square",
  "the bottom left square", "the bottom middle square", "the bottom right square",
];

/** ttt_send's answers (actomaton_wasm.h), by code. */
const TTT_REPLIES = new Map([
  [1, "moved"], [2, "x-won"], [3, "o-won"], [4, "draw"], [5, "restarted"],
  [-11, "refused:outside-board"], [-12, "refused:square-taken"], [-13, "refused:game-over"],
]);

const MARKS = ["", "X", "O"];

function tttPhase(game) {
  switch (game.ttt_outcome()) {
    case 1: return "X won";
    case 2: return "O won";
    case 3: return "draw";
    default: return game.ttt_next_player() === 1 ? "X to move" : "O to move";
  }
}

function replyText(reply, player, square, code) {
  switch (reply) {
    case "moved": return `${player} took ${square}.`;
    case "x-won":
    case "o-won": return `${player} took ${square}: three in a row, ${player} wins.`;
    case "draw": return `${player} took ${square}: the board is full, it is a draw.`;
    case "restarted": return "New game: the board is empty and X moves first.";
    case "refused:square-taken": return `Refused: ${square} is already taken. The board is unchanged.`;
    case "refused:game-over": return "Refused: the game is over. Press “New game” to play again.";
    case "refused:outside-board": return "Refused: that square is not on the board.";
    default: return `The module answered ${code}, an answer this page does not know. The board is as the module says.`;
  }
}

function setUpTicTacToe(game) {
  const board = document.getElementById("ttt-board");
  const status = document.getElementById("ttt-status");
  const replyLine = document.getElementById("ttt-reply");
  const log = document.getElementById("ttt-log");
  const restart = document.getElementById("ttt-restart");
  const diagram = document.querySelector("#ttt-diagram svg");
  const squares = [];

  for (let index = 0; index < 9; index++) {
    const square = element("button", {
      type: "button", className: "square", role: "gridcell",
      dataset: { row: String(Math.floor(index / 3)), column: String(index % 3), mark: "" },
    });
    square.addEventListener("click", () => send(0, Math.floor(index / 3), index % 3));
    square.addEventListener("animationend", () => square.classList.remove("refused"));
    squares.push(square);
    board.append(square);
  }
  restart.addEventListener("click", () => send(1, 0, 0));
  restart.disabled = false;

  function highlight(selector, title, className) {
    if (!diagram) return;
    for (const node of diagram.querySelectorAll(selector)) {
      const name = node.querySelector("title")?.textContent;
      node.classList.toggle(className, name === title);
    }
  }

  function draw(from) {
    for (const [index, square] of squares.entries()) {
      const mark = MARKS[game.ttt_square(Math.floor(index / 3), index % 3)] ?? "?";
      square.textContent = mark;
      square.dataset.mark = mark;
      square.setAttribute("aria-label", `${SQUARE_NAMES[index]}: ${mark || "empty"}`);
    }
    const phase = tttPhase(game);
    status.dataset.phase = phase;
    status.textContent = {
      "X to move": "X to move.", "O to move": "O to move.",
      "X won": "X won.", "O won": "O won.", "draw": "A draw.",
    }[phase];
    highlight("g.node", phase, "current");
    highlight("g.edge", from === undefined ? "" : `${from}->${phase}`, "taken");
  }

  function send(action, row, column) {
    const from = tttPhase(game);
    const player = MARKS[game.ttt_next_player()];
    const code = game.ttt_send(action, row, column);
    const reply = TTT_REPLIES.get(code) ?? "unknown";
    const square = SQUARE_NAMES[row * 3 + column];
    replyLine.dataset.reply = reply;
    replyLine.textContent = replyText(reply, player, square, code);
    replyLine.classList.toggle("refused", reply.startsWith("refused"));
    if (reply.startsWith("refused")) {
      const target = squares[row * 3 + column];
      target.classList.remove("refused");
      void target.offsetWidth; // restarts the shake
      target.classList.add("refused");
    }
    const sent = action === 1 ? "restart" : `place(row: ${row}, column: ${column})`;
    log.append(element("li", { dataset: { reply } }, element("code", {}, sent), ` → ${reply}`));
    draw(from);
  }

  game.ttt_reset();
  draw();
}

// ---- CSV ---------------------------------------------------------------------------------

const MAX_INPUT_BYTES = 1 << 20;
const MAX_ROWS_SHOWN = 500;
const MAX_TOKENS_SHOWN = 2000;

const CSV_ERRORS = {
  1: "a quote inside an unquoted field; it is kept as part of the field",
  2: "a character after a closing quote; it is kept and the field goes on unquoted",
  3: "the text ended inside a quoted field; the field is kept as read",
};

class ModuleError extends Error {}

/** Decodes the tokens csv_feed or csv_finish wrote (the encoding of actomaton_wasm.h). */
function readTokens(csv, count, decoder) {
  const pointer = csv.csv_output_pointer() >>> 0;
  const length = csv.csv_output_length();
  const memory = new Uint8Array(csv.memory.buffer);
  if (length < 0 || pointer + length > memory.length) {
    throw new ModuleError(`the module's output (${length} bytes at ${pointer}) is outside its memory`);
  }
  const bytes = memory.subarray(pointer, pointer + length);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tokens = [];
  let offset = 0;
  while (offset < length) {
    if (offset + 5 > length) throw new ModuleError("a token's header is cut short");
    const kind = bytes[offset];
    const size = view.getUint32(offset + 1, true);
    offset += 5;
    if (size > length - offset) throw new ModuleError("a token's payload runs past the output");
    const payload = bytes.subarray(offset, offset + size);
    offset += size;
    if (kind === 1) {
      tokens.push({ kind: "field", text: decoder.decode(payload) });
    } else if (kind === 2 && size === 0) {
      tokens.push({ kind: "end" });
    } else if (kind === 3 && size === 9) {
      tokens.push({
        kind: "error", error: payload[0],
        line: view.getUint32(offset - 8, true), column: view.getUint32(offset - 4, true),
      });
    } else {
      throw new ModuleError(`a token of unknown kind ${kind} (${size} bytes)`);
    }
  }
  if (tokens.length !== count) throw new ModuleError(`${count} tokens announced, ${tokens.length} found`);
  return tokens;
}

/** The whole text through the tokenizer: reset, feed, finish. */
function tokenize(csv, bytes, delimiter, decoder) {
  if (csv.csv_reset(delimiter) !== 0) throw new ModuleError(`the module refused delimiter ${delimiter}`);
  const pointer = csv.csv_input_buffer(bytes.length) >>> 0;
  if (pointer === 0) throw new ModuleError("the module has no memory left for the text");
  new Uint8Array(csv.memory.buffer, pointer, bytes.length).set(bytes);
  const fed = csv.csv_feed(bytes.length);
  if (fed < 0) throw new ModuleError(`csv_feed answered ${fed}`);
  const tokens = readTokens(csv, fed, decoder);
  const finished = csv.csv_finish();
  if (finished < 0) throw new ModuleError(`csv_finish answered ${finished}`);
  return tokens.concat(readTokens(csv, finished, decoder));
}

/** Byte offsets where each line starts. A line ends at LF, CR or CRLF, as the tokenizer counts. */
function lineStarts(bytes) {
  const starts = [0];
  for (let index = 0; index < bytes.length; index++) {
    if (bytes[index] === 13 && bytes[index + 1] === 10) index++;
    if (bytes[index] === 10 || bytes[index] === 13) starts.push(index + 1);
  }
  return starts;
}

/** The length of the UTF-8 sequence that starts with `byte` (1 for a stray continuation byte). */
function sequenceLength(byte) {
  if (byte >= 0xf0) return 4;
  if (byte >= 0xe0) return 3;
  if (byte >= 0xc0) return 2;
  return 1;
}

function errorText(token) {
  return `Line ${token.line}, column ${token.column}: ${CSV_ERRORS[token.error] ?? `error ${token.error}`}.`;
}

function setUpCSV(csv) {
  const input = document.getElementById("csv-input");
  const delimiterChoice = document.getElementById("csv-delimiter");
  const summary = document.getElementById("csv-summary");
  const output = document.getElementById("csv-output");
  const table = document.getElementById("csv-records");
  const errorList = document.getElementById("csv-errors");
  const echo = document.getElementById("csv-echo");
  const tokenList = document.getElementById("csv-tokens");
  const encoder = new TextEncoder();
  const decoder = new TextDecoder("utf-8");

  function showProblem(message) {
    summary.textContent = message;
    summary.classList.add("problem");
    table.replaceChildren();
    errorList.replaceChildren();
    tokenList.replaceChildren();
    echo.replaceChildren();
  }

  function renderEcho(bytes, errors) {
    const starts = lineStarts(bytes);
    const marks = errors.map((token, index) => {
      const start = starts[token.line - 1];
      const offset = start === undefined ? bytes.length : Math.min(start + token.column - 1, bytes.length);
      return { offset, index, token };
    }).sort((a, b) => a.offset - b.offset);
    const parts = [];
    let position = 0;
    for (const { offset, index, token } of marks) {
      if (offset < position) continue; // two errors on one byte: the first is marked
      parts.push(decoder.decode(bytes.subarray(position, offset)));
      const end = Math.min(offset + sequenceLength(bytes[offset] ?? 0), bytes.length);
      const text = offset < bytes.length ? decoder.decode(bytes.subarray(offset, end)) : "⟂";
      parts.push(element("mark", {
        title: errorText(token), dataset: { error: String(index + 1) },
        className: offset < bytes.length ? "" : "end-of-input",
      }, text));
      position = end;
    }
    parts.push(decoder.decode(bytes.subarray(position)));
    echo.replaceChildren(...parts);
  }

  function update() {
    summary.classList.remove("problem");
    const bytes = encoder.encode(input.value);
    if (bytes.length > MAX_INPUT_BYTES) {
      showProblem(`The text is ${bytes.length.toLocaleString("en")} bytes; this page tokenizes at most ${MAX_INPUT_BYTES.toLocaleString("en")}.`);
      output.dataset.inputBytes = String(bytes.length);
      return;
    }
    let tokens;
    try {
      tokens = tokenize(csv, bytes, Number(delimiterChoice.value), decoder);
    } catch (error) {
      if (!(error instanceof ModuleError)) throw error;
      showProblem(`The tokenizer could not answer: ${error.message}.`);
      output.dataset.inputBytes = String(bytes.length);
      return;
    }

    // Records: one row per record, one cell per field. An error belongs to the field the
    // tokenizer emits next (it reports the error as it reads the offending byte).
    const rows = [];
    const errors = [];
    let cells = [];
    let pendingErrors = [];
    let fields = 0;
    for (const token of tokens) {
      if (token.kind === "error") {
        errors.push(token);
        pendingErrors.push(errors.length);
      } else if (token.kind === "field") {
        fields++;
        const cell = element("td", { className: "field", dataset: { text: token.text } }, token.text);
        if (token.text === "") cell.classList.add("empty");
        if (pendingErrors.length) {
          cell.classList.add("has-error");
          cell.dataset.errors = pendingErrors.join(" ");
          cell.title = pendingErrors.map((number) => errorText(errors[number - 1])).join("\n");
          pendingErrors = [];
        }
        cells.push(cell);
      } else {
        rows.push(element("tr", {}, element("th", { scope: "row" }, String(rows.length + 1)), ...cells));
        cells = [];
      }
    }
    const shown = rows.slice(0, MAX_ROWS_SHOWN);
    if (rows.length > shown.length) {
      shown.push(element("tr", { className: "more" },
        element("td", { colSpan: 2 }, `… and ${(rows.length - shown.length).toLocaleString("en")} more records`)));
    }
    table.replaceChildren(...shown);

    errorList.replaceChildren(...errors.map((token, index) => element("li", {
      dataset: { error: String(token.error), line: String(token.line), column: String(token.column), number: String(index + 1) },
    }, errorText(token))));

    const plural = (count, word) => `${count.toLocaleString("en")} ${word}${count === 1 ? "" : "s"}`;
    summary.textContent = bytes.length === 0
      ? "Nothing to tokenize yet."
      : `${plural(rows.length, "record")}, ${plural(fields, "field")}, ${errors.length ? plural(errors.length, "error") : "no errors"}.`;
    summary.classList.toggle("has-errors", errors.length > 0);

    renderEcho(bytes, errors);

    tokenList.replaceChildren(...tokens.slice(0, MAX_TOKENS_SHOWN).map((token) => {
      if (token.kind === "field") {
        return element("li", { dataset: { kind: "field" } }, "field ", element("code", {}, token.text));
      }
      if (token.kind === "end") return element("li", { dataset: { kind: "end" } }, "end of record");
      return element("li", {
        dataset: { kind: "error", error: String(token.error), line: String(token.line), column: String(token.column) },
        className: "error",
      }, `error: ${errorText(token)}`);
    }));
    if (tokens.length > MAX_TOKENS_SHOWN) {
      tokenList.append(element("li", {}, `… and ${(tokens.length - MAX_TOKENS_SHOWN).toLocaleString("en")} more tokens`));
    }
    output.dataset.inputBytes = String(bytes.length);
  }

  input.addEventListener("input", update);
  delimiterChoice.addEventListener("change", update);
  input.disabled = false;
  update();
}

// ---- Platformer --------------------------------------------------------------------------

/** platformer_send's answers (actomaton_wasm.h), by code. */
const PLATFORMER_STATUSES = new Map([
  [1, "transitioned"], [2, "ignored"], [3, "finished"], [4, "stopped"], [-2, "unknown-event"],
]);
const PLATFORMER_LOG_LENGTH = 8;

/** The state and output names by raw value, as the generator wrote them into the page. */
function platformerNames() {
  const data = document.getElementById("platformer-data");
  if (!data) throw new Error("the page has no platformer names: build it with make web");
  const names = JSON.parse(data.textContent);
  return { states: names.states ?? [], outputs: names.outputs ?? [] };
}

function setUpPlatformer(character) {
  const names = platformerNames();
  const leavesLine = document.getElementById("pf-leaves");
  const replyLine = document.getElementById("pf-reply");
  const log = document.getElementById("pf-log");
  const reset = document.getElementById("pf-reset");
  const diagram = document.querySelector("#pf-diagram svg");
  const buttons = [...document.querySelectorAll("#platformer button[data-event]")];
  const stateName = (raw) => names.states[raw] ?? `state ${raw}`;
  const outputName = (raw) => names.outputs[raw] ?? `output ${raw}`;
  let logged = 0;

  /** The active leaves, by raw value, from the module's bit set. */
  function activeLeaves() {
    const bits = character.platformer_leaves() >>> 0;
    const leaves = [];
    for (let raw = 0; raw < 32; raw++) if (bits & (1 << raw)) leaves.push(raw);
    return leaves;
  }

  function lastOutputs() {
    const outputs = [];
    const count = character.platformer_output_count();
    for (let index = 0; index < count; index++) {
      const raw = character.platformer_output(index);
      outputs.push(raw < 0 ? `(error ${raw})` : outputName(raw));
    }
    return outputs;
  }

  function show(eventName, status, outputs) {
    const leaves = activeLeaves();
    const leafNames = leaves.map(stateName);
    leavesLine.dataset.leaves = leafNames.join(",");
    leavesLine.textContent = `Active states: ${leafNames.join(", ")}.`;
    replyLine.dataset.event = eventName;
    replyLine.dataset.status = status;
    replyLine.dataset.outputs = outputs.join(",");
    const emitted = outputs.length ? `outputs ${outputs.join(", ")}` : "no outputs";
    replyLine.textContent = {
      reset: `Reset: back to the initial states, ${emitted}.`,
      transitioned: `${eventName}: transitioned, ${emitted}.`,
      ignored: `${eventName}: ignored, no transition for it here; nothing changed.`,
      finished: `${eventName}: the chart has finished; nothing changed.`,
      stopped: `${eventName}: stopped at the microstep limit, ${emitted}.`,
    }[status] ?? `${eventName}: the module answered ${status}.`;
    replyLine.classList.toggle("ignored", status === "ignored");
    if (diagram) {
      const active = new Set(leaves.map(String));
      for (const node of diagram.querySelectorAll("g.node")) {
        node.classList.toggle("current", active.has(node.querySelector("title")?.textContent));
      }
    }
    const entry = element("li", { dataset: { event: eventName, status } },
      element("code", {}, eventName), status === "reset" ? "" : ` → ${status}`,
      outputs.length ? element("span", { className: "outputs" }, ` (${outputs.join(", ")})`) : "",
      `: ${leafNames.join(", ")}`);
    log.append(entry);
    logged++;
    while (log.children.length > PLATFORMER_LOG_LENGTH) log.firstElementChild.remove();
    log.start = logged - log.children.length + 1; // numbered from the page's first event
  }

  for (const button of buttons) {
    button.addEventListener("click", () => {
      const code = character.platformer_send(Number(button.dataset.kind), Number(button.dataset.speed));
      const status = PLATFORMER_STATUSES.get(code) ?? `code ${code}`;
      // Outputs are read back even when the event was ignored: the module says there are none.
      show(button.dataset.event, status, code > 0 ? lastOutputs() : []);
    });
    button.disabled = false;
  }
  reset.addEventListener("click", () => {
    character.platformer_reset();
    show("reset", "reset", lastOutputs());
  });
  reset.disabled = false;

  character.platformer_reset();
  show("reset", "reset", lastOutputs());
}

// ---- Start ---------------------------------------------------------------------------------

async function start() {
  const status = document.getElementById("load-status");
  const problems = [];
  const machines = [["tictactoe", setUpTicTacToe], ["csv", setUpCSV], ["platformer", setUpPlatformer]];
  const loaded = await Promise.allSettled(machines.map(([name]) => loadModule(name)));
  for (const [index, result] of loaded.entries()) {
    const [name, setUp] = machines[index];
    if (result.status === "fulfilled") {
      setUp(result.value);
    } else {
      const message = `${name}.wasm could not be loaded: ${result.reason?.message ?? result.reason}`;
      problems.push(message);
      console.error(message);
      document.querySelector(`#${name} .play`).prepend(element("p", { className: "problem" }, message));
    }
  }
  if (problems.length) {
    status.textContent = location.protocol === "file:"
      ? "Opened from a file, the page cannot load its WebAssembly: run make web-serve and open the address it prints."
      : "Part of the page could not start; the reason is shown in its section.";
    status.classList.add("problem");
    document.body.dataset.ready = "failed";
  } else {
    status.textContent = "All three machines are loaded and running in this page.";
    document.body.dataset.ready = "yes";
  }
}

start();
