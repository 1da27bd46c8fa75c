/// The API's OpenAPI 3.1 document, served at `GET /v1/openapi.yaml`.
///
/// The same text is `docs/openapi.yaml` in the repository; a test checks that they match.
public enum OpenAPIDocument {
    /// The document of a service whose `--max-page-size` is `maxPageSize`: the page's maximum
    /// said is that one (it said 1,000 whatever the flag said).
    public static func yaml(maxPageSize: Int) -> String {
        let line = "schema: {type: integer, minimum: 1, maximum: 1000}}"
        return maxPageSize == 1000 ? yaml
            : yaml.replacing(line, with: "schema: {type: integer, minimum: 1, maximum: \(maxPageSize)}}")
    }

    /// The document, YAML, with the default limits.
    public static let yaml = #"""
openapi: 3.1.0
info:
  title: actomaton-host
  version: "1"
  summary: Keyed instances of reducer plugins over HTTP and WebSocket.
  description: |
    A plugin is a machine type; an instance is (plugin, key), created by its first action from
    the plugin's initial state. Actions to one instance are applied one at a time, in the order
    they arrive whole (a DELETE among them); instances run concurrently. Every error is {"error": "one line"}. Every GET
    also answers HEAD (the same status and fields, no body); a method a path does not take is
    405, with the methods it takes in `Allow`. A method HTTP does not define (methods are
    case-sensitive), or a transfer coding but chunked, is 501, and so is CONNECT (the service is
    no proxy; that answer has no body); a content coding but identity is 415; a Host field that
    is not a host with an optional port is 400; each closes its connection. A target in absolute
    form (http://HOST/PATH) names the host, as RFC 9112 says, not the Host field.
servers:
  - url: http://127.0.0.1:8080
security:
  - bearer: []
components:
  securitySchemes:
    bearer:
      type: http
      scheme: bearer
      description: "A token of the --tokens file. Without --tokens no token is needed: the service listens on loopback only, and answers only a request addressed to this machine (its Host localhost, 127.0.0.1, [::1] or a name --allow-host gives) and not sent by a page of another site (its Origin, if any, of this machine too): 403 otherwise."
  parameters:
    plugin:
      name: plugin
      in: path
      required: true
      schema: {type: string, minLength: 1}
    key:
      name: key
      in: path
      required: true
      description: "The instance's key: not . or .., which a URL takes as dot-segments."
      schema: {type: string, minLength: 1, maxLength: 128, pattern: "^[A-Za-z0-9._:-]+$"}
  schemas:
    Error:
      type: object
      required: [error]
      properties:
        error: {type: string, description: One line saying what went wrong.}
    Action:
      type: object
      required: [action]
      additionalProperties: false
      properties:
        action: {type: string}
        args:
          description: "Positional or named, checked against the action's parameters: an integer parameter takes an integral number in its range (5, 5.0, 5e0 or 1.5e3: the integer its digits write, exactly), a floating-point one any number, a string at most 1 MiB without NUL."
          oneOf:
            - type: array
              items: {type: [number, boolean, string]}
            - type: object
              additionalProperties: {type: [number, boolean, string]}
        plugin: {type: string, description: Optional; must equal the path's plugin.}
    State:
      description: The plugin's own description of the state, as JSON when it is JSON, else as a string; null when it could not be had.
    Transition:
      type: object
      required: [plugin, key, seq, action, state, started, cancelled]
      properties:
        plugin: {type: string}
        key: {type: string}
        seq: {type: integer, minimum: 1, description: The instance's count of transitions, this one included.}
        action: {type: string}
        state: {$ref: "#/components/schemas/State"}
        started: {type: array, items: {type: string}}
        cancelled: {type: array, items: {type: string}}
        active: {$ref: "#/components/schemas/Active"}
    Active:
      type: array
      items: {type: string}
      description: The plugin's diagram nodes active in the state; present only for a plugin that names them (ABI version 2).
    Diagram:
      type: object
      required: [plugin, dot, svg, problem, nodes]
      properties:
        plugin: {type: string}
        dot: {type: string, description: "The plugin's state diagram, Graphviz DOT text."}
        svg: {type: [string, "null"], description: "The diagram drawn by Graphviz on the host; null when it could not be."}
        problem: {type: [string, "null"], description: "Why there is no drawing (Graphviz is not installed, or failed)."}
        nodes:
          type: array
          items:
            type: object
            required: [name, label]
            properties:
              name: {type: string, description: "The node's ID, as active names it."}
              label: {type: string}
    WatchMessage:
      allOf:
        - $ref: "#/components/schemas/Transition"
        - type: object
          required: [origin, effect_id]
          properties:
            origin: {type: string, enum: [input, next, delayed, repeating]}
            effect_id: {type: [string, "null"]}
    Status:
      type: object
      required: [plugin, key, seq, state, timers, effects]
      properties:
        plugin: {type: string}
        key: {type: string}
        seq: {type: integer, minimum: 0}
        state: {$ref: "#/components/schemas/State"}
        timers:
          type: array
          items:
            type: object
            required: [kind, id, action, effect, interval_ms, due_in_ms]
            properties:
              kind: {type: string, enum: [delayed, repeating]}
              id: {type: [string, "null"]}
              action: {type: string}
              effect: {type: string}
              interval_ms: {type: integer, minimum: 0, description: "The delay of a delayed action (one brought back from the journal: the delay it had left then), the period of a repeating one."}
              due_in_ms: {type: integer, minimum: 0, description: "How long until it next fires, as of this answer."}
        effects: {type: integer, minimum: 0}
        active: {$ref: "#/components/schemas/Active"}
    Keys:
      type: object
      required: [plugin, keys, next]
      properties:
        plugin: {type: string}
        keys: {type: array, items: {type: string}}
        next: {type: [string, "null"], description: The last key of the page when more follow (pass it as after).}
    Plugins:
      type: object
      required: [plugins]
      properties:
        plugins:
          type: array
          items:
            type: object
            required: [name, version, abi, summary, sandbox, diagram, actions]
            properties:
              name: {type: string}
              version: {type: string}
              abi: {type: integer}
              summary: {type: [string, "null"]}
              sandbox: {type: string, enum: [none, process, wasm]}
              diagram: {type: boolean, description: "Whether the plugin carries a state diagram (GET /v1/plugins/{plugin}/diagram)."}
              actions:
                type: array
                items:
                  type: object
                  required: [name, signature, parameters]
                  properties:
                    name: {type: string}
                    signature: {type: string}
                    parameters:
                      type: array
                      items:
                        type: object
                        required: [name, type]
                        properties:
                          name: {type: string}
                          type: {type: string}
  responses:
    BadRequest: {description: "Bad JSON, action, arguments, key or query.", content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
    Unauthorized: {description: No valid token., headers: {WWW-Authenticate: {description: "The scheme to authenticate with: Bearer.", schema: {type: string}}}, content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
    Forbidden: {description: "The token's scopes do not cover the request; or, without --tokens, the request was addressed to another name than this machine's, or sent by a page of another site.", content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
    NotFound: {description: Unknown plugin or instance., content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
    TooLarge: {description: The body is over the limit (--max-body-size, default 64 KiB)., content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
    Unprocessable: {description: The plugin refused the action, or an Idempotency-Key was reused for another request., content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
    TooMany: {description: "Over a limit (instances, watchers, requests per second, idempotency keys), or too many failed authentications from this address.", headers: {Retry-After: {description: "Seconds until the limit lets a request through, where the service knows it: a token's requests per second, failed authentications, the idempotency keys kept.", schema: {type: integer, minimum: 1}}}, content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
    Failed: {description: The plugin failed (a crash in its worker, a trap in its sandbox)., content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
    ShuttingDown: {description: "The service is shutting down; or, in a cluster, the instance's owner could not be reached, its ownership is moving, or the journal refused the action: nothing was applied (retry).", content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
    BadGateway: {description: "In a cluster: the instance's owner answered what this API does not give (a status it does not use, a body that is not a JSON object).", content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
    GatewayTimeout: {description: "In a cluster: the instance's owner was sent the request and did not answer in time; it may have applied it (retry with the same Idempotency-Key, or read the instance).", content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
    HeadersTooLarge: {description: "The header fields are longer than --max-header-size (16 KiB by default).", content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
paths:
  /healthz:
    get:
      security: []
      summary: Whether the process is up.
      responses:
        "431": {$ref: "#/components/responses/HeadersTooLarge"}
        "200": {description: Up., content: {application/json: {schema: {type: object}}}}
  /readyz:
    get:
      security: []
      summary: Whether it takes requests (503 while shutting down).
      responses:
        "431": {$ref: "#/components/responses/HeadersTooLarge"}
        "200": {description: Ready., content: {application/json: {schema: {type: object}}}}
        "503": {description: "Shutting down; or, in a cluster, this host could not renew its lease in the shared database (why, in reason): send requests to the other hosts meanwhile.", content: {application/json: {schema: {type: object}}}}
  /metrics:
    get:
      summary: Metrics in Prometheus' text format.
      responses:
        "431": {$ref: "#/components/responses/HeadersTooLarge"}
        "200": {description: The metrics., content: {text/plain: {schema: {type: string}}}}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "403": {$ref: "#/components/responses/Forbidden"}
        "429": {$ref: "#/components/responses/TooMany"}
        "503": {$ref: "#/components/responses/ShuttingDown"}
  /v1/openapi.yaml:
    get:
      summary: This document.
      responses:
        "431": {$ref: "#/components/responses/HeadersTooLarge"}
        "200": {description: The document (YAML)., content: {application/yaml: {}}}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "403": {$ref: "#/components/responses/Forbidden"}
        "429": {$ref: "#/components/responses/TooMany"}
        "503": {$ref: "#/components/responses/ShuttingDown"}
  /v1/plugins:
    get:
      summary: The plugins' manifests.
      responses:
        "431": {$ref: "#/components/responses/HeadersTooLarge"}
        "200": {description: The manifests., content: {application/json: {schema: {$ref: "#/components/schemas/Plugins"}}}}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "403": {$ref: "#/components/responses/Forbidden"}
        "429": {$ref: "#/components/responses/TooMany"}
        "503": {$ref: "#/components/responses/ShuttingDown"}
  /v1/plugins/{plugin}/diagram:
    get:
      summary: A plugin's state diagram, drawn as SVG when Graphviz is installed on the host, and its nodes.
      parameters:
        - $ref: "#/components/parameters/plugin"
      responses:
        "431": {$ref: "#/components/responses/HeadersTooLarge"}
        "200": {description: The diagram., content: {application/json: {schema: {$ref: "#/components/schemas/Diagram"}}}}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "403": {$ref: "#/components/responses/Forbidden"}
        "404": {$ref: "#/components/responses/NotFound"}
        "429": {$ref: "#/components/responses/TooMany"}
        "503": {$ref: "#/components/responses/ShuttingDown"}
  /v1/machines/{plugin}:
    get:
      summary: A plugin's instance keys, in byte order, paged.
      parameters:
        - $ref: "#/components/parameters/plugin"
        - {name: after, in: query, schema: {type: string, maxLength: 128, pattern: "^[A-Za-z0-9._:-]+$"}}
        - {name: limit, in: query, description: "At most --max-page-size (1,000 by default, the maximum given here).", schema: {type: integer, minimum: 1, maximum: 1000}}
      responses:
        "431": {$ref: "#/components/responses/HeadersTooLarge"}
        "200": {description: A page of keys., content: {application/json: {schema: {$ref: "#/components/schemas/Keys"}}}}
        "400": {$ref: "#/components/responses/BadRequest"}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "403": {$ref: "#/components/responses/Forbidden"}
        "404": {$ref: "#/components/responses/NotFound"}
        "429": {$ref: "#/components/responses/TooMany"}
        "503": {$ref: "#/components/responses/ShuttingDown"}
  /v1/machines/{plugin}/{key}:
    parameters:
      - $ref: "#/components/parameters/plugin"
      - $ref: "#/components/parameters/key"
    post:
      summary: Send an action; the instance is created by its first.
      parameters:
        - {name: Idempotency-Key, in: header, schema: {type: string, minLength: 1, maxLength: 128}, description: "A retry with the same key and the same action (its name and arguments, however the body writes them) returns the first response (with Idempotent-Replayed: true), not applied again. After a 400 (a request not read as an action), a 5xx or a 429, which decided nothing, a retry runs again, and may change its body."}
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Action"}
            example: {action: add, args: [5]}
      responses:
        "431": {$ref: "#/components/responses/HeadersTooLarge"}
        "200":
          description: The transition.
          headers:
            Idempotent-Replayed: {schema: {type: string, enum: ["true"]}, description: Present on a replayed response.}
          content: {application/json: {schema: {$ref: "#/components/schemas/Transition"}}}
        "400": {$ref: "#/components/responses/BadRequest"}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "403": {$ref: "#/components/responses/Forbidden"}
        "404": {$ref: "#/components/responses/NotFound"}
        "413": {$ref: "#/components/responses/TooLarge"}
        "422": {$ref: "#/components/responses/Unprocessable"}
        "429": {$ref: "#/components/responses/TooMany"}
        "500": {$ref: "#/components/responses/Failed"}
        "502": {$ref: "#/components/responses/BadGateway"}
        "503": {$ref: "#/components/responses/ShuttingDown"}
        "504": {$ref: "#/components/responses/GatewayTimeout"}
    get:
      summary: An instance's transition count, state and pending timers.
      description: A passivated instance is restored first; 500 when its plugin refuses to restore it.
      responses:
        "431": {$ref: "#/components/responses/HeadersTooLarge"}
        "200": {description: The instance., content: {application/json: {schema: {$ref: "#/components/schemas/Status"}}}}
        "400": {$ref: "#/components/responses/BadRequest"}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "403": {$ref: "#/components/responses/Forbidden"}
        "404": {$ref: "#/components/responses/NotFound"}
        "429": {$ref: "#/components/responses/TooMany"}
        "500": {$ref: "#/components/responses/Failed"}
        "502": {$ref: "#/components/responses/BadGateway"}
        "503": {$ref: "#/components/responses/ShuttingDown"}
        "504": {$ref: "#/components/responses/GatewayTimeout"}
    delete:
      summary: Cancel an instance's effects and forget it (needs the admin scope).
      responses:
        "431": {$ref: "#/components/responses/HeadersTooLarge"}
        "200": {description: Deleted., content: {application/json: {schema: {type: object, required: [plugin, key, deleted]}}}}
        "400": {$ref: "#/components/responses/BadRequest"}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "403": {$ref: "#/components/responses/Forbidden"}
        "404": {$ref: "#/components/responses/NotFound"}
        "429": {$ref: "#/components/responses/TooMany"}
        "502": {$ref: "#/components/responses/BadGateway"}
        "503": {$ref: "#/components/responses/ShuttingDown"}
        "504": {$ref: "#/components/responses/GatewayTimeout"}
  /v1/machines/{plugin}/{key}/watch:
    parameters:
      - $ref: "#/components/parameters/plugin"
      - $ref: "#/components/parameters/key"
    get:
      summary: "A WebSocket: one JSON text message (WatchMessage) per transition, timers' included."
      description: |
        A watcher more than --watcher-buffer (default 256) transitions behind, or more than
        --watcher-buffer-bytes (default 1 MiB) of them, is closed with 1008 and a reason; a deleted instance closes its watchers with 1000; shutdown with 1001. A
        watcher the service closes has --watcher-close-timeout (default 10 s) to take what was
        buffered and the close frame; then its connection is cut.
        The statuses below answer a request that is not a WebSocket handshake (400, once its
        token and path are checked); a handshake that is refused (no instance, a bad or expired `after`, a token, a limit) is accepted and closed
        at once with code 4000 + that status (4404, 4410, 4429, 4401, 4403, ...) and the error's
        line as the reason, cut to 123 bytes.
        With `after`, the kept transitions after that seq come first (the last --watch-history,
        default 1,000, at most --watch-history-bytes of them, in memory; with --state also those the journal keeps, across passivations
        and restarts), then the new ones: no gap and no duplicate, within one life of the
        instance (a DELETE ends it, and a key made again starts at seq 1: a client that may have
        missed a deletion reads the instance before it resumes). An `after` older than what is
        kept is closed with 4410 (or, when only the journal could tell, with 1008), and one past
        the instance's last transition with 4400, each with the reason.
      parameters:
        - name: after
          in: query
          required: false
          description: The seq the watcher saw last.
          schema: {type: integer, minimum: 0, maximum: 9999999999999999999}
      responses:
        "431": {$ref: "#/components/responses/HeadersTooLarge"}
        "101": {description: Switching to the WebSocket protocol.}
        "400": {$ref: "#/components/responses/BadRequest"}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "403": {$ref: "#/components/responses/Forbidden"}
        "404": {$ref: "#/components/responses/NotFound"}
        "429": {$ref: "#/components/responses/TooMany"}
        "503": {$ref: "#/components/responses/ShuttingDown"}

"""#
}
