// The inspector: the host's plugins and their instances; one instance's state, transitions,
// timers and actions, live; its state diagram with the active nodes lit.
"use strict";

const {api, path, element: el} = Actomaton;

const INTEGER_RANGES = {
  int8: [-128n, 127n], int16: [-32768n, 32767n], int32: [-2147483648n, 2147483647n],
  int64: [-9223372036854775808n, 9223372036854775807n], uint8: [0n, 255n], uint16: [0n, 65535n],
  uint32: [0n, 4294967295n], uint64: [0n, 18446744073709551615n],
};
const PAGE_SIZE = 20;
const LOG_LIMIT = 200;

let plugins = [];
let view = null; // what the main area shows now: {close()} ends its watchers and timers

Actomaton.installTokenPanel();

// ---- Routes: #/, #/PLUGIN, #/PLUGIN/KEY ------------------------------------------------------

function route() {
  if (view) view.close();
  view = null;
  const main = document.getElementById("main");
  main.replaceChildren();
  let parts;
  try {
    parts = location.hash.replace(/^#\/?/, "").split("/").filter((part) => part).map(decodeURIComponent);
  } catch (error) {
    // A malformed percent-escape (URIError).
    main.append(el("p", {className: "error", id: "route-error"}, `${location.hash} is not an address of the inspector: ${error.message}`));
    return;
  }
  for (const item of document.querySelectorAll("#plugin-list a")) {
    item.classList.toggle("current", item.dataset.plugin === parts[0]);
  }
  if (parts.length === 0) {
    main.append(el("p", {className: "hint"}, plugins.length ? "Pick a plugin." : "No plugins are loaded."));
  } else if (parts.length === 1) {
    view = showPlugin(main, parts[0]);
  } else {
    view = showInstance(main, parts[0], parts.slice(1).join("/"));
  }
}

async function start() {
  try {
    plugins = (await api("GET", "/v1/plugins")).plugins;
  } catch (error) {
    document.getElementById("main").replaceChildren(el("p", {className: "error"}, error.message));
    return;
  }
  const list = document.getElementById("plugin-list");
  list.replaceChildren(...plugins.map((plugin) => el("li", {},
    el("a", {href: "#/" + encodeURIComponent(plugin.name), "data-plugin": plugin.name}, plugin.name),
    el("span", {className: "version"}, " " + plugin.version))));
  window.addEventListener("hashchange", route);
  route();
}

// ---- A plugin: its manifest and its instances ----------------------------------------------

function showPlugin(main, name) {
  const plugin = plugins.find((item) => item.name === name);
  if (!plugin) {
    main.append(el("p", {className: "error"}, `no plugin named ${name}`));
    return null;
  }
  const keys = el("ul", {id: "instances", className: "keys"});
  const more = el("button", {id: "more-instances", hidden: true}, "More");
  const problem = el("p", {className: "error", id: "instances-error"});
  const keyError = el("span", {className: "error", id: "open-instance-error"});
  const open = el("form", {id: "open-instance", className: "inline"},
    el("label", {}, "Key ", el("input", {name: "key", required: true, placeholder: "room-1"})),
    " ", el("button", {}, "Open"), " ", keyError);
  open.addEventListener("submit", (event) => {
    event.preventDefault();
    const key = open.elements.key.value;
    keyError.textContent = Actomaton.keyProblem(key) || "";
    open.elements.key.classList.toggle("invalid", Boolean(keyError.textContent));
    if (!keyError.textContent) location.hash = "#/" + encodeURIComponent(name) + "/" + encodeURIComponent(key);
  });
  main.append(
    el("h1", {}, plugin.name, el("span", {className: "version"}, " " + plugin.version)),
    plugin.summary ? el("p", {className: "summary"}, plugin.summary) : null,
    el("p", {className: "meta"}, `ABI version ${plugin.abi}, sandbox: ${plugin.sandbox}`),
    el("h2", {}, "Actions"),
    el("ul", {className: "signatures"}, plugin.actions.map((action) => el("li", {}, el("code", {}, action.signature)))),
    el("h2", {}, "Instances"), open, keys, more, problem);
  let after = null;
  async function page() {
    more.disabled = true;
    try {
      const answer = await api("GET", path(name) + `?limit=${PAGE_SIZE}` + (after ? "&after=" + encodeURIComponent(after) : ""));
      for (const key of answer.keys) {
        keys.append(el("li", {}, el("a", {href: "#/" + encodeURIComponent(name) + "/" + encodeURIComponent(key)}, key)));
      }
      if (!keys.children.length) keys.append(el("li", {className: "hint"}, "none yet: open a key and send it an action"));
      after = answer.next;
      more.hidden = !after;
    } catch (error) {
      problem.textContent = error.message;
    }
    more.disabled = false;
  }
  more.addEventListener("click", page);
  page();
  return {close() {}};
}

// ---- An instance ---------------------------------------------------------------------------

function showInstance(main, name, key) {
  const plugin = plugins.find((item) => item.name === name);
  if (!plugin) {
    main.append(el("p", {className: "error"}, `no plugin named ${name}`));
    return null;
  }
  // A browser would take . and .. in the API's path as dot-segments, and ask for another path.
  const keyProblem = Actomaton.keyProblem(key);
  if (keyProblem) {
    main.append(el("p", {className: "error", id: "key-error"}, keyProblem));
    return null;
  }
  const seq = el("span", {id: "seq"}, "0");
  const connection = el("span", {id: "connection", className: "connection"}, "loading");
  const state = el("pre", {id: "state"}, "…");
  const effects = el("span", {id: "effects"}, "0");
  const timers = el("tbody", {id: "timers"});
  const log = el("ol", {id: "transitions", className: "log"});
  const diagram = el("div", {id: "diagram", className: "diagram"});
  main.append(
    el("h1", {}, el("a", {href: "#/" + encodeURIComponent(name)}, name), " / ", el("span", {id: "key"}, key)),
    el("p", {className: "meta"}, "seq ", seq, " · effects running ", effects, " · ", connection),
    el("div", {className: "columns"},
      el("section", {},
        el("h2", {}, "State"), state,
        el("h2", {}, "Timers"),
        el("table", {className: "timers"},
          el("thead", {}, el("tr", {}, el("th", {}, "kind"), el("th", {}, "id"), el("th", {}, "action"), el("th", {}, "effect"), el("th", {}, "due in"))),
          timers),
        el("h2", {}, "Actions"),
        el("div", {id: "actions"}, plugin.actions.map((action) => actionForm(plugin, key, action, () => watcher.wake())))),
      el("section", {},
        el("h2", {}, "Diagram"), diagram,
        el("h2", {}, "Transitions"), log)));

  let pending = []; // the timers shown: [{row, cell, due, interval, kind}]
  let refreshing = null;
  let closed = false;
  const ticker = setInterval(showCountdowns, 100);
  const lit = diagramView(plugin, diagram);

  function showState(text) {
    state.textContent = JSON.stringify(text, null, 2);
  }

  function showCountdowns() {
    const now = performance.now();
    for (const timer of pending) {
      let left = timer.due - now;
      if (timer.kind === "repeating" && timer.interval > 0 && left < 0) {
        left = timer.interval - ((-left) % timer.interval);
      }
      timer.cell.textContent = (Math.max(0, left) / 1000).toFixed(1) + " s";
    }
  }

  async function refresh() {
    // One status request at a time; a transition during one asks for another after it.
    if (refreshing) { refreshing.again = true; return; }
    refreshing = {again: false};
    try {
      const status = await api("GET", path(name, key));
      if (closed) return;
      effects.textContent = status.effects;
      const now = performance.now();
      pending = status.timers.map((timer) => {
        const cell = el("td", {className: "due"});
        const row = el("tr", {}, el("td", {}, timer.kind), el("td", {}, timer.id ?? ""), el("td", {}, timer.action),
          el("td", {}, el("code", {}, timer.effect)), cell);
        return {row, cell, due: now + timer.due_in_ms, interval: timer.interval_ms, kind: timer.kind};
      });
      timers.replaceChildren(...pending.map((timer) => timer.row));
      if (!pending.length) timers.append(el("tr", {}, el("td", {colspan: 5, className: "hint"}, "none pending")));
      showCountdowns();
      return status;
    } catch (error) {
      if (error.status !== 404) connection.textContent = error.message;
    } finally {
      const again = refreshing.again;
      refreshing = null;
      if (again && !closed) refresh();
    }
  }

  function transition(message) {
    seq.textContent = message.seq;
    showState(message.state);
    lit(message.active);
    const effectsText = [
      message.started.length ? "started " + message.started.join("; ") : null,
      message.cancelled.length ? "cancelled " + message.cancelled.join("; ") : null,
    ].filter((part) => part).join(" · ");
    log.prepend(el("li", {className: "transition", "data-seq": message.seq},
      el("span", {className: "seq"}, "#" + message.seq), " ",
      el("span", {className: "origin " + message.origin}, message.origin), " ",
      el("code", {className: "action"}, message.action),
      effectsText ? el("div", {className: "effects"}, effectsText) : null,
      el("div", {className: "after"}, JSON.stringify(message.state))));
    while (log.children.length > LOG_LIMIT) log.lastElementChild.remove();
    refresh();
  }

  let exists = true;
  // First, and again when the instance is read afresh (deleted, or the host restarted without it).
  const watcher = Actomaton.followInstance(name, key, {
    initial: (status) => {
      log.replaceChildren();
      exists = Boolean(status);
      seq.textContent = status ? status.seq : 0;
      lit(status ? status.active : []);
      if (!status) {
        connection.textContent = "no such instance yet: an action creates it";
        state.textContent = "";
        pending = [];
        effects.textContent = "0";
        timers.replaceChildren();
        return;
      }
      showState(status.state);
      refresh();
    },
    transition: (message) => {
      if (!exists) connection.textContent = "live";
      exists = true;
      transition(message);
    },
    // Until its first transition, a new instance's page says so rather than "reconnecting".
    status: (text) => { if (exists) connection.textContent = text; },
    problem: (message) => { connection.textContent = message; },
  });

  return {
    close() {
      closed = true;
      clearInterval(ticker);
      watcher.close();
    },
  };
}

// ---- A form per action, from the manifest's typed parameters ---------------------------------

/// `applied()` is called after the host applied the action.
function actionForm(plugin, key, action, applied) {
  const inputs = action.parameters.map((parameter) => {
    let input;
    if (parameter.type === "bool") {
      input = el("select", {name: parameter.name}, el("option", {value: "false"}, "false"), el("option", {value: "true"}, "true"));
    } else if (parameter.type in INTEGER_RANGES) {
      input = el("input", {name: parameter.name, inputmode: "numeric", required: true, placeholder: parameter.type, size: 12});
    } else if (parameter.type === "float" || parameter.type === "double") {
      input = el("input", {name: parameter.name, inputmode: "decimal", required: true, placeholder: parameter.type, size: 12});
    } else {
      input = el("input", {name: parameter.name, placeholder: parameter.type, size: 16});
    }
    return {parameter, input};
  });
  const result = el("span", {className: "result"});
  const form = el("form", {className: "action", "data-action": action.name},
    el("button", {type: "submit"}, action.name),
    inputs.map(({parameter, input}) => el("label", {}, " " + parameter.name + " ", input)),
    " ", result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    result.className = "result";
    result.textContent = "…";
    for (const {input} of inputs) input.classList.remove("invalid");
    // The arguments are written as JSON text here, so a 64-bit integer keeps every digit.
    const args = [];
    for (const [index, {parameter, input}] of inputs.entries()) {
      const value = input.value.trim();
      if (parameter.type in INTEGER_RANGES || parameter.type === "float" || parameter.type === "double") {
        const problem = numberProblem(value, parameter.type);
        if (problem) {
          input.classList.add("invalid");
          result.className = "result error";
          result.textContent = `argument ${index + 1} (${parameter.name}) ` + (problem === "not a number"
            ? `must be a number (${parameter.type})` : `of '${action.name}' is ${value}, ${problem}`);
          return;
        }
        args.push(value);
      } else if (parameter.type === "bool") {
        args.push(value);
      } else {
        args.push(JSON.stringify(input.value));
      }
    }
    const body = `{"action": ${JSON.stringify(action.name)}, "args": [${args.join(", ")}]}`;
    try {
      const answer = await api("POST", path(plugin.name, key), body);
      result.textContent = `seq ${answer.seq}: ${JSON.stringify(answer.state)}`;
      applied();
    } catch (error) {
      result.className = "result error";
      result.textContent = error.message;
      const named = /argument (\d+)/.exec(error.message);
      if (named && inputs[Number(named[1]) - 1]) inputs[Number(named[1]) - 1].input.classList.add("invalid");
    }
  });
  return form;
}

/// What keeps `text` from being an argument of `type`: "not a number" when it is not a JSON
/// number (of an integer type: with no fraction or exponent), the range it is out of, or null.
function numberProblem(text, type) {
  if (type in INTEGER_RANGES) {
    if (!/^-?(0|[1-9]\d*)$/.test(text)) return "not a number";
    const [low, high] = INTEGER_RANGES[type];
    const value = BigInt(text);
    return value < low || value > high ? `out of range for ${type} (${low}...${high})` : null;
  }
  if (!/^-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?$/.test(text)) return "not a number";
  return Number.isFinite(Number(text)) ? null : `out of range for ${type}`;
}

// ---- The diagram ---------------------------------------------------------------------------

/// Shows the plugin's diagram (when it carries one) and returns a function that lights the
/// nodes named active.
function diagramView(plugin, box) {
  if (!plugin.diagram) {
    box.append(el("p", {className: "hint"}, "This plugin carries no diagram."));
    return () => {};
  }
  let nodes = new Map(); // name → elements to light
  let active = [];
  function light(names) {
    if (names === undefined || names === null) return;
    active = names;
    for (const [name, elements] of nodes) {
      for (const item of elements) item.classList.toggle("active", active.includes(name));
    }
    box.dataset.active = active.join("\n");
  }
  (async () => {
    try {
      const answer = await api("GET", "/v1/plugins/" + encodeURIComponent(plugin.name) + "/diagram");
      if (answer.svg) {
        box.replaceChildren(sanitizedSVG(answer.svg));
        // A node's title is its ID; a compound state is drawn as the cluster "cluster_ID".
        for (const group of box.querySelectorAll("g.node, g.cluster")) {
          const title = group.querySelector(":scope > title");
          if (!title) continue;
          const name = group.classList.contains("cluster") ? title.textContent.replace(/^cluster_/, "") : title.textContent;
          group.dataset.node = name;
          if (!nodes.has(name)) nodes.set(name, []);
          nodes.get(name).push(group);
        }
      } else {
        const list = el("ul", {className: "nodes"});
        for (const node of answer.nodes) {
          const item = el("li", {"data-node": node.name}, node.label);
          nodes.set(node.name, [item]);
          list.append(item);
        }
        box.append(el("p", {className: "hint"}, `No drawing (${answer.problem}): the states, as a list.`), list);
      }
      light(active);
    } catch (error) {
      box.append(el("p", {className: "error"}, error.message));
    }
  })();
  return light;
}

const SVG_NAMESPACE = "http://www.w3.org/2000/svg";
/// The elements of Graphviz's drawings the page shows: any other is dropped, its text kept for
/// the few that wrap a drawing's parts (a link, a switch), dropped with it for the rest.
const DRAWING_ELEMENTS = new Set(["svg", "g", "title", "path", "polygon", "polyline", "ellipse", "circle", "rect",
  "line", "text", "tspan", "defs", "linearGradient", "radialGradient", "stop"]);
const UNWRAPPED_ELEMENTS = new Set(["a", "switch"]);
/// The attributes of those elements the page keeps (no event handler, link or style); an ID
/// is kept prefixed with DRAWING_ID_PREFIX, so that it names none of the page's elements.
const DRAWING_ATTRIBUTES = new Set(["class", "width", "height", "viewBox", "preserveAspectRatio", "transform",
  "points", "d", "cx", "cy", "r", "rx", "ry", "x", "y", "x1", "y1", "x2", "y2", "dx", "dy", "fill", "fill-opacity",
  "stroke", "stroke-width", "stroke-opacity", "stroke-dasharray", "stroke-linecap", "stroke-linejoin",
  "text-anchor", "font-family", "font-size", "font-weight", "font-style", "text-decoration", "baseline-shift",
  "offset", "stop-color", "stop-opacity", "gradientUnits", "gradientTransform", "fx", "fy", "id"]);
const DRAWING_ID_PREFIX = "diagram-";

/// The host's rendering of a plugin's diagram, keeping only the SVG drawing elements and
/// attributes listed above: nothing a hostile plugin's DOT text slips into it (a script, a
/// link, an XHTML <meta http-equiv="refresh"> or <form>, a handler, a style) reaches the page.
function sanitizedSVG(text) {
  const parsed = new DOMParser().parseFromString(text, "image/svg+xml").documentElement;
  if (parsed.namespaceURI !== SVG_NAMESPACE || parsed.localName !== "svg") {
    return el("p", {className: "error"}, "the host sent a diagram that is not SVG");
  }
  function copy(node) {
    if (node.nodeType === Node.TEXT_NODE) return [window.document.createTextNode(node.data)];
    if (node.nodeType !== Node.ELEMENT_NODE || node.namespaceURI !== SVG_NAMESPACE) return [];
    const children = () => [...node.childNodes].flatMap(copy);
    if (UNWRAPPED_ELEMENTS.has(node.localName)) return children();
    if (!DRAWING_ELEMENTS.has(node.localName)) return [];
    const clean = window.document.createElementNS(SVG_NAMESPACE, node.localName);
    for (const {namespaceURI, name, value} of node.attributes) {
      if (namespaceURI !== null || !DRAWING_ATTRIBUTES.has(name)) continue;
      if (name === "id") {
        clean.setAttribute(name, DRAWING_ID_PREFIX + value);
      } else if (/url\s*\(/i.test(value)) {
        // A gradient's fill, by its ID: kept pointing into the drawing; any other reference dropped.
        const reference = /^url\(#([\w.:-]+)\)$/.exec(value);
        if (reference) clean.setAttribute(name, `url(#${DRAWING_ID_PREFIX}${reference[1]})`);
      } else {
        clean.setAttribute(name, value);
      }
    }
    clean.append(...children());
    return [clean];
  }
  return copy(parsed)[0];
}

start();
