// Shared by the inspector and the play pages: the token, the API and the watch WebSocket.
// Served by actomaton-host serve --listen; talks only to the host that served it.
"use strict";

const Actomaton = (() => {
  const TOKEN_KEY = "actomaton.token";
  let tokenPrompt = null; // the page's way to ask for a token: (message) => Promise
  let pendingPrompt = null; // one prompt at a time, shared by every request that needs it

  class APIError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  function token() {
    return sessionStorage.getItem(TOKEN_KEY);
  }

  function setToken(value) {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
  }

  /// Sets how the page asks for a token when the host answers 401.
  function onTokenNeeded(prompt) {
    tokenPrompt = prompt;
  }

  function askForToken(message) {
    if (!pendingPrompt) {
      pendingPrompt = tokenPrompt(message).finally(() => { pendingPrompt = null; });
    }
    return pendingPrompt;
  }

  /// Calls the API: `body` is a string of JSON (sent as it is) or undefined. Resolves to the
  /// parsed answer; rejects with an APIError carrying the host's one-line message.
  async function api(method, path, body) {
    for (;;) {
      const headers = {};
      const current = token();
      if (current) headers["Authorization"] = "Bearer " + current;
      if (body !== undefined) headers["Content-Type"] = "application/json";
      let response;
      try {
        response = await fetch(path, {method, headers, body, cache: "no-store"});
      } catch (error) {
        throw new APIError(0, "the host did not answer (" + error.message + ")");
      }
      const text = await response.text();
      let json = null;
      try { json = JSON.parse(text); } catch (error) { json = null; }
      const message = (json && typeof json.error === "string") ? json.error : `${response.status} ${response.statusText}`;
      if (response.status === 401 && tokenPrompt) {
        await askForToken(message);
        continue;
      }
      if (!response.ok) throw new APIError(response.status, message);
      return json;
    }
  }

  function hex(text) {
    return Array.from(new TextEncoder().encode(text), (byte) => byte.toString(16).padStart(2, "0")).join("");
  }

  function path(plugin, key) {
    return "/v1/machines/" + encodeURIComponent(plugin) + (key === undefined ? "" : "/" + encodeURIComponent(key));
  }

  /// Watches an instance's transitions from `after`, reconnecting with ?after=SEQ when the
  /// connection ends, so nothing is missed or seen twice. `handlers.transition(message)` gets
  /// each one in order; `handlers.status(text)` how the connection is.
  function watch(plugin, key, after, handlers) {
    let last = after;
    let socket = null;
    let closed = false;
    let delay = 250;
    let timer = null;
    function connect() {
      if (closed) return;
      const scheme = location.protocol === "https:" ? "wss:" : "ws:";
      const url = `${scheme}//${location.host}${path(plugin, key)}/watch?after=${last}`;
      // A browser cannot set Authorization on a WebSocket: the token rides as a subprotocol.
      const current = token();
      const protocols = current ? ["actomaton.v1", "actomaton.token." + hex(current)] : ["actomaton.v1"];
      socket = new WebSocket(url, protocols);
      socket.onopen = () => {
        delay = 250;
        handlers.status("live");
      };
      socket.onmessage = (event) => {
        const message = JSON.parse(event.data);
        if (message.seq <= last) return;
        last = message.seq;
        handlers.transition(message);
      };
      socket.onclose = (event) => {
        socket = null;
        if (closed) return;
        handlers.status(event.reason ? "reconnecting (" + event.reason + ")" : "reconnecting");
        timer = setTimeout(connect, delay);
        delay = Math.min(delay * 2, 2000);
      };
    }
    connect();
    return {
      get last() { return last; },
      close() {
        closed = true;
        clearTimeout(timer);
        if (socket) socket.close();
      },
    };
  }

  function element(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else if (name === "className") node.className = value;
      else node.setAttribute(name, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  /// Adds the token panel and the "Forget token" button to the page's header, and asks there
  /// for a token whenever the host answers 401 (with its message).
  function installTokenPanel() {
    const header = document.querySelector("header");
    const input = element("input", {id: "token", type: "password", autocomplete: "off", required: true});
    const problem = element("span", {id: "token-error", className: "error"});
    const form = element("form", {id: "token-form"}, element("label", {}, "Token ", input), " ",
      element("button", {type: "submit"}, "Use token"), " ", problem);
    const panel = element("section", {id: "token-panel", hidden: true}, form);
    const forget = element("button", {id: "forget-token", type: "button", hidden: !token()}, "Forget token");
    forget.addEventListener("click", () => {
      setToken(null);
      location.reload();
    });
    header.append(forget);
    header.after(panel);
    onTokenNeeded((message) => new Promise((resolve) => {
      problem.textContent = message;
      panel.hidden = false;
      input.value = "";
      input.focus();
      form.onsubmit = (event) => {
        event.preventDefault();
        setToken(input.value.trim());
        panel.hidden = true;
        forget.hidden = false;
        resolve();
      };
    }));
  }

  /// Reads an instance's status and follows its transitions from there: `handlers.initial`
  /// gets the status (null when the instance does not exist yet: its first action makes it,
  /// and it is watched from seq 0), `handlers.transition` each transition after it, in order,
  /// `handlers.status` how the connection is, `handlers.problem` why it cannot be followed.
  async function followInstance(plugin, key, handlers) {
    let status = null;
    try {
      status = await api("GET", path(plugin, key));
    } catch (error) {
      if (error.status !== 404) {
        handlers.problem(error.message);
        return null;
      }
    }
    handlers.initial(status);
    return watch(plugin, key, status ? status.seq : 0, handlers);
  }

  return {APIError, api, watch, path, token, setToken, onTokenNeeded, element, installTokenPanel, followInstance};
})();
