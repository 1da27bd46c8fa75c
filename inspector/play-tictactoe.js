// Tic-tac-toe for two over the network: one instance of the tictactoe plugin, a click is a
// POST, both windows follow the instance through the watch WebSocket.
"use strict";

const {api, path, element: el} = Actomaton;
const PLUGIN = "tictactoe";
const key = decodeURIComponent(location.pathname.split("/").pop());
const role = new URLSearchParams(location.search).get("as"); // "X", "O", or null (watching)
const squares = [];
let game = null; // the last state: {board: ["X..", ...], next, outcome}

document.getElementById("key").textContent = key;
document.getElementById("you").textContent = role === "X" || role === "O" ? `You play ${role}.` : "You are watching.";

Actomaton.installTokenPanel();

const board = document.getElementById("board");
for (let row = 0; row < 3; row++) {
  for (let column = 0; column < 3; column++) {
    const square = el("button", {type: "button", "data-row": row, "data-column": column, "aria-label": `row ${row}, column ${column}`});
    square.addEventListener("click", () => place(row, column));
    squares.push(square);
    board.append(square);
  }
}

function show(state, seq) {
  game = state;
  board.dataset.seq = seq;
  for (const square of squares) {
    const mark = state ? state.board[square.dataset.row][square.dataset.column] : ".";
    square.textContent = mark === "." ? "" : mark;
    square.dataset.mark = mark;
    // A player may click any square on their turn, or once the game is over: the machine
    // refuses a taken square or a finished game, and the page shows its reason.
    const playing = role === "X" || role === "O";
    square.disabled = !playing || (state ? !state.outcome && state.next !== role : role !== "X");
  }
  const status = document.getElementById("status");
  if (!state) status.textContent = "A new game: X moves first.";
  else if (state.outcome) status.textContent = state.outcome === "draw" ? "A draw." : state.outcome + ".";
  else status.textContent = state.next + " to move" + (state.next === role ? " (you)." : ".");
  status.dataset.outcome = state && state.outcome ? state.outcome : "";
}

async function send(body) {
  const reason = document.getElementById("reason");
  reason.textContent = "";
  try {
    const answer = await api("POST", path(PLUGIN, key), body);
    if (answer.seq > Number(board.dataset.seq)) show(answer.state, answer.seq);
    following.wake();
  } catch (error) {
    reason.textContent = error.message; // the machine's reason, as the host gave it
  }
}

function place(row, column) {
  if (role !== "X" && role !== "O") {
    document.getElementById("reason").textContent = "You are watching: pick X or O above to play.";
    return;
  }
  if (game && !game.outcome && game.next !== role) {
    document.getElementById("reason").textContent = `It is ${game.next}'s turn.`;
    return;
  }
  send(JSON.stringify({action: "place", args: [row, column]}));
}

document.getElementById("restart").addEventListener("click", () => send(JSON.stringify({action: "restart", args: []})));

// No game yet (null): the first move makes it; until then the page keeps looking for it. Read
// afresh (a deleted game, a host restarted without it), the board starts over from the host's.
const following = Actomaton.followInstance(PLUGIN, key, {
  initial: (status) => show(status ? status.state : null, status ? status.seq : 0),
  transition: (message) => {
    if (message.seq > Number(board.dataset.seq)) show(message.state, message.seq);
  },
  status: (text) => { document.getElementById("connection").textContent = text; },
  problem: (message) => { document.getElementById("reason").textContent = message; },
});
