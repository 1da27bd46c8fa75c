// Shared by the inspector and the play pages: the token, the API and the watch WebSocket.
// Served by actomaton-host serve --listen; talks only to the host that served it.
"use strict";

const Actomaton = (() => {
  const TOKEN_KEY = "actomaton.token";
  /// A token as the host takes one (TokenTable): 16 to 256 visible ASCII characters.
  const TOKEN_FORMAT = /^[\x21-\x7e]{16,256}$/;
  const TOKEN_FORMAT_PROBLEM = "a token is 16 to 256 visible ASCII characters (no spaces)";
  /// The longest instance key, in bytes (InstanceKeyRule.maxLength).
  const MAX_KEY_BYTES = 128;
  // Watching again after a connection ends: the wait doubles from RETRY_FIRST_MS up to
  // RETRY_MAX_MS while connections bring nothing, less up to half of it at random (so that pages
  // do not come back in step), and starts over once one brings a message or stays open
  // RETRY_STEADY_MS. A limit (4429) waits RETRY_OVER_LIMIT_MS at least; an instance not made
  // yet is looked for every RETRY_ABSENT_MAX_MS at most.
  const RETRY_FIRST_MS = 250;
  const RETRY_MAX_MS = 30000;
  const RETRY_OVER_LIMIT_MS = 5000;
  const RETRY_ABSENT_MAX_MS = 5000;
  const RETRY_STEADY_MS = 5000;
  let tokenPrompt = null; // the page's way to ask for a token: (message) => Promise
  let pendingPrompt = null; // one prompt at a time, shared by every request that needs it

  class APIError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  function token() {
    // One kept before the page checked tokens may not fit a header: fetch would throw on it.
    const kept = sessionStorage.getItem(TOKEN_KEY);
    return kept && TOKEN_FORMAT.test(kept) ? kept : null;
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

  /// What is wrong with an instance key, in the host's words (InstanceKeyRule); null when nothing.
  function keyProblem(key) {
    const bytes = new TextEncoder().encode(key);
    if (!bytes.length) return "an instance key must not be empty";
    if (bytes.length > MAX_KEY_BYTES) return `an instance key is at most ${MAX_KEY_BYTES} bytes, got ${bytes.length}`;
    if (key === "." || key === "..") return "an instance key cannot be . or .. (a URL takes them as its path's dot-segments)";
    const offset = bytes.findIndex((byte) => !/[A-Za-z0-9._:-]/.test(String.fromCharCode(byte)));
    if (offset >= 0) return `an instance key may hold only letters, digits and . _ : - (byte ${offset + 1} is not one)`;
    return null;
  }

  function path(plugin, key) {
    return "/v1/machines/" + encodeURIComponent(plugin) + (key === undefined ? "" : "/" + encodeURIComponent(key));
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
        const value = input.value.trim();
        input.classList.toggle("invalid", !TOKEN_FORMAT.test(value));
        if (!TOKEN_FORMAT.test(value)) {
          problem.textContent = TOKEN_FORMAT_PROBLEM;
          return;
        }
        setToken(value);
        panel.hidden = true;
        forget.hidden = false;
        resolve();
      };
    }));
  }

  /// Reads an instance's status and follows its transitions from there, through the watch
  /// WebSocket, reconnecting with ?after=SEQ so that nothing is missed or seen twice.
  ///
  /// `handlers.initial(status)` gets the status (null when the instance does not exist yet: its
  /// first action makes it, and it is watched from seq 0) — first, and again whenever the
  /// instance must be read afresh: deleted, or the host restarted without it (4404, 1000), or
  /// `after` is past its last transition or older than what is kept (4400, 4410, 1008).
  /// `handlers.transition` gets each transition after it, in order; `handlers.status` how the
  /// connection is; `handlers.problem` why the instance cannot be followed. A refused token
  /// (4401, 4403) asks for another before it watches again.
  ///
  /// Returns {close(), wake()}: wake() looks for an instance not made yet at once (the page's
  /// own action just made it).
  function followInstance(plugin, key, handlers) {
    let last = 0; // the last seq shown
    let absent = false; // the instance did not exist when last read
    let socket = null;
    let timer = null;
    let closed = false;
    let delay = RETRY_FIRST_MS;

    /// Runs `next` after the wait, at least `atLeast` ms, and doubles the wait.
    function later(next, atLeast = 0) {
      const limit = absent ? RETRY_ABSENT_MAX_MS : RETRY_MAX_MS;
      delay = Math.min(delay, limit);
      const wait = Math.max(atLeast, delay / 2 + Math.random() * delay / 2);
      delay = Math.min(delay * 2, limit);
      timer = setTimeout(() => {
        timer = null;
        next();
      }, wait);
    }

    /// Reads the instance and watches it from its seq (from 0 when it does not exist yet).
    async function read(first) {
      let status = null;
      try {
        status = await api("GET", path(plugin, key));
      } catch (error) {
        if (closed) return;
        if (error.status !== 404) {
          // No answer, or the service busy: read again later; any other refusal stands.
          if (first || !(error.status === 0 || error.status === 429 || error.status >= 500)) {
            handlers.problem(error.message);
            return;
          }
          handlers.status("reconnecting (" + error.message + ")");
          later(() => read(false), error.status === 429 ? RETRY_OVER_LIMIT_MS : 0);
          return;
        }
      }
      if (closed) return;
      absent = !status;
      last = status ? status.seq : 0;
      handlers.initial(status);
      connect();
    }

    function connect() {
      if (closed) return;
      const scheme = location.protocol === "https:" ? "wss:" : "ws:";
      const url = `${scheme}//${location.host}${path(plugin, key)}/watch?after=${last}`;
      // A browser cannot set Authorization on a WebSocket: the token rides as a subprotocol.
      const current = token();
      const protocols = current ? ["actomaton.v1", "actomaton.token." + hex(current)] : ["actomaton.v1"];
      let openedAt = null;
      let heard = false;
      socket = new WebSocket(url, protocols);
      socket.onopen = () => {
        openedAt = performance.now();
        if (!absent) handlers.status("live");
      };
      socket.onmessage = (event) => {
        heard = true;
        delay = RETRY_FIRST_MS;
        if (absent) {
          absent = false;
          handlers.status("live");
        }
        const message = JSON.parse(event.data);
        if (message.seq <= last) return;
        last = message.seq;
        handlers.transition(message);
      };
      socket.onclose = (event) => {
        socket = null;
        if (closed) return;
        if (heard || (openedAt !== null && performance.now() - openedAt >= RETRY_STEADY_MS)) delay = RETRY_FIRST_MS;
        const reason = event.reason ? " (" + event.reason + ")" : "";
        if ((event.code === 4401 || event.code === 4403) && tokenPrompt) {
          handlers.status("waiting for a token" + reason);
          askForToken(event.reason || "the host refused the token").then(() => {
            delay = RETRY_FIRST_MS;
            connect();
          });
        } else if (event.code === 4404 && absent) {
          handlers.status("no such instance yet");
          later(connect);
        } else if ([4404, 4400, 4410, 1000].includes(event.code) || (event.code === 1008 && !heard)) {
          // Another life of the instance, or none: what was shown is read again, not resumed.
          handlers.status("reading it again" + reason);
          later(() => read(false));
        } else {
          handlers.status("reconnecting" + reason);
          later(connect, event.code === 4429 ? RETRY_OVER_LIMIT_MS : 0);
        }
      };
    }

    read(true);
    return {
      close() {
        closed = true;
        clearTimeout(timer);
        if (socket) socket.close();
      },
      wake() {
        delay = RETRY_FIRST_MS;
        if (closed || !absent || !timer) return;
        clearTimeout(timer);
        timer = null;
        connect();
      },
    };
  }

  return {APIError, api, path, keyProblem, token, setToken, onTokenNeeded, element, installTokenPanel, followInstance};
})();
