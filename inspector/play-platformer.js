// The platformer's character over the network, driven from the keyboard: a key press is a
// POST; every window follows the instance through the watch WebSocket.
"use strict";

const {api, path, element: el} = Actomaton;
const PLUGIN = "platformer";
const key = decodeURIComponent(location.pathname.split("/").pop());
const BINDINGS = [
  ["ArrowRight", "walk", {action: "move", args: [3]}],
  ["Shift+ArrowRight", "run", {action: "move", args: [8]}],
  ["ArrowDown", "stop", {action: "move", args: [0]}],
  [" ", "jump", {action: "jump", args: []}],
  ["a", "apex", {action: "apex", args: []}],
  ["g", "leave the ground", {action: "leaveGround", args: []}],
  ["l", "land", {action: "land", args: []}],
  ["h", "get hit", {action: "hit", args: []}],
  ["r", "recover", {action: "recover", args: []}],
  ["d", "draw the weapon", {action: "draw", args: []}],
  ["q", "holster it", {action: "holster", args: []}],
  ["f", "fire", {action: "fire", args: []}],
  ["t", "tick", {action: "tick", args: []}],
  ["e", "reload", {action: "reload", args: []}],
];
let seq = 0;

document.getElementById("key").textContent = key;
Actomaton.installTokenPanel();

document.querySelector("#keys tbody").append(...BINDINGS.map(([name, what]) =>
  el("tr", {}, el("td", {}, el("kbd", {}, name === " " ? "Space" : name)), el("td", {}, what))));

function show(state, at) {
  if (at < seq) return;
  seq = at;
  document.getElementById("leaves").textContent = state ? state.leaves.join(", ") : "idle (no events yet)";
  document.getElementById("outputs").textContent = state && state.outputs.length ? state.outputs.join(", ") : "none";
  document.getElementById("data").textContent = state && state.ammo !== undefined
    ? `${state.ammo} rounds, stunned for ${state.stunTicks} ticks, ${state.jumps} jumps used` : "";
  document.getElementById("ignored").textContent = state && state.ignored ? "(the chart ignored the last event)" : "";
  document.body.dataset.seq = at;
}

document.addEventListener("keydown", async (event) => {
  if (event.target instanceof HTMLInputElement) return;
  const name = (event.shiftKey && event.key.startsWith("Arrow") ? "Shift+" : "") + event.key;
  const binding = BINDINGS.find(([bound]) => bound === name);
  if (!binding) return;
  event.preventDefault();
  document.getElementById("reason").textContent = "";
  try {
    const answer = await api("POST", path(PLUGIN, key), JSON.stringify(binding[2]));
    show(answer.state, answer.seq);
    following.wake();
  } catch (error) {
    document.getElementById("reason").textContent = error.message;
  }
});

// Read afresh (a deleted character, a host restarted without it), it starts over from the host's.
const following = Actomaton.followInstance(PLUGIN, key, {
  initial: (status) => {
    seq = 0;
    show(status ? status.state : null, status ? status.seq : 0);
  },
  transition: (message) => show(message.state, message.seq),
  status: (text) => { document.getElementById("connection").textContent = text; },
  problem: (message) => { document.getElementById("reason").textContent = message; },
});
