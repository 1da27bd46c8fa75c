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
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter((part) => part).map(decodeURIComponent);
  const main = document.getElementById("main");
  main.replaceChildren();
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
  const open = el("form", {id: "open-instance", className: "inline"},
    el("label", {}, "Key ", el("input", {name: "key", required: true, pattern: "[A-Za-z0-9._:\\-]{1,128}", placeholder: "room-1"})),
    el("button", {}, "Open"));
  open.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = "#/" + encodeURIComponent(name) + "/" + encodeURIComponent(open.elements.key.value);
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
        el("div", {id: "actions"}, plugin.actions.map((action) => actionForm(plugin, key, action)))),
      el("section", {},
        el("h2", {}, "Diagram"), diagram,
        el("h2", {}, "Transitions"), log)));

  let watcher = null;
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
  Actomaton.followInstance(name, key, {
    initial: (status) => {
      if (!status) {
        exists = false;
        connection.textContent = "no such instance yet: an action creates it";
        state.textContent = "";
        return;
      }
      seq.textContent = status.seq;
      showState(status.state);
      lit(status.active);
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
  }).then((following) => {
    watcher = following;
    if (closed && watcher) watcher.close();
  });

  return {
    close() {
      closed = true;
      clearInterval(ticker);
      if (watcher) watcher.close();
    },
  };
}

// ---- A form per action, from the manifest's typed parameters ---------------------------------

function actionForm(plugin, key, action) {
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
        const pattern = parameter.type in INTEGER_RANGES ? /^-?\d+$/ : /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/;
        if (!pattern.test(value)) {
          input.classList.add("invalid");
          result.className = "result error";
          result.textContent = `argument ${index + 1} (${parameter.name}) must be a number (${parameter.type})`;
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
    } catch (error) {
      result.className = "result error";
      result.textContent = error.message;
      const named = /argument (\d+)/.exec(error.message);
      if (named && inputs[Number(named[1]) - 1]) inputs[Number(named[1]) - 1].input.classList.add("invalid");
    }
  });
  return form;
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

/// The host's rendering of a plugin's diagram, without what a hostile plugin could slip into
/// it: links, scripts, foreign content, event handlers (the page's policy forbids them too).
function sanitizedSVG(text) {
  const document = new DOMParser().parseFromString(text, "image/svg+xml");
  const svg = document.documentElement;
  if (svg.nodeName !== "svg") return el("p", {className: "error"}, "the host sent a diagram that is not SVG");
  for (const node of svg.querySelectorAll("script, foreignObject, a, style, image, use, iframe")) {
    node.replaceWith(...node.childNodes);
  }
  for (const node of [svg, ...svg.querySelectorAll("*")]) {
    for (const attribute of [...node.attributes]) {
      const name = attribute.name.toLowerCase();
      if (name.startsWith("on") || name.endsWith("href") || name === "style") node.removeAttribute(attribute.name);
    }
  }
  return window.document.importNode(svg, true);
}

start();
