import ActomatonPluginContract
import HostCommandLine

/// The service's JSON bodies, written without Foundation: a plugin's state description is
/// embedded as JSON when it is JSON, and as a string when it is not.
enum ServiceJSON {
    /// `text` as JSON when it parses, else as a JSON string; `null` for `nil`.
    static func embedded(_ text: String?) -> String {
        guard let text else { return "null" }
        if (try? JSONParser.parse(text)) != nil { return text }
        return JSONText.string(text)
    }

    static func strings(_ items: [String]) -> String {
        JSONText.array(items.map(JSONText.string))
    }

    /// What `POST /v1/machines/{plugin}/{key}` answers.
    static func transition(_ transition: InstanceTransition, address: InstanceAddress) -> String {
        JSONText.object([
            ("plugin", JSONText.string(address.plugin)),
            ("key", JSONText.string(address.key.text)),
            ("seq", String(transition.seq)),
            ("action", JSONText.string(transition.action)),
            ("state", embedded(transition.state)),
            ("started", strings(transition.started)),
            ("cancelled", strings(transition.cancelled)),
        ])
    }

    /// One watcher message: a transition with where its action came from.
    static func watchMessage(_ transition: InstanceTransition, address: InstanceAddress) -> String {
        JSONText.object([
            ("plugin", JSONText.string(address.plugin)),
            ("key", JSONText.string(address.key.text)),
            ("seq", String(transition.seq)),
            ("origin", JSONText.string(transition.origin.rawValue)),
            ("effect_id", transition.effectID.map(JSONText.string) ?? "null"),
            ("action", JSONText.string(transition.action)),
            ("state", embedded(transition.state)),
            ("started", strings(transition.started)),
            ("cancelled", strings(transition.cancelled)),
        ])
    }

    /// What `GET /v1/machines/{plugin}/{key}` answers.
    static func status(_ status: InstanceStatus, address: InstanceAddress) -> String {
        JSONText.object([
            ("plugin", JSONText.string(address.plugin)),
            ("key", JSONText.string(address.key.text)),
            ("seq", String(status.seq)),
            ("state", embedded(status.state)),
            ("timers", JSONText.array(status.timers.map { timer in
                JSONText.object([
                    ("kind", JSONText.string(timer.kind)),
                    ("id", timer.id.map(JSONText.string) ?? "null"),
                    ("action", JSONText.string(timer.action)),
                    ("effect", JSONText.string(timer.text)),
                ])
            })),
            ("effects", String(status.effects)),
        ])
    }

    /// What `GET /v1/machines/{plugin}` answers.
    static func keys(_ keys: [InstanceKey], of plugin: String, more: Bool) -> String {
        JSONText.object([
            ("plugin", JSONText.string(plugin)),
            ("keys", strings(keys.map(\.text))),
            ("next", more ? keys.last.map { JSONText.string($0.text) } ?? "null" : "null"),
        ])
    }

    /// What `GET /v1/plugins` answers.
    static func plugins(_ catalog: PluginCatalog) -> String {
        let items = catalog.names.compactMap { catalog.types[$0] }.map { type in
            let manifest = type.plugin.manifest
            return JSONText.object([
                ("name", JSONText.string(manifest.name)),
                ("version", JSONText.string(manifest.version)),
                ("abi", String(manifest.abiVersion)),
                ("summary", manifest.summary.map(JSONText.string) ?? "null"),
                ("sandbox", type.plugin.isWebAssembly ? "\"wasm\"" : (type.isolation.isProcess ? "\"process\"" : "\"none\"")),
                ("actions", JSONText.array(manifest.actions.map { action in
                    JSONText.object([
                        ("name", JSONText.string(action.name)),
                        ("signature", JSONText.string(action.description)),
                        ("parameters", JSONText.array(action.parameters.map { parameter in
                            JSONText.object([("name", JSONText.string(parameter.name)), ("type", JSONText.string(parameter.type.description))])
                        })),
                    ])
                })),
            ])
        }
        return JSONText.object([("plugins", JSONText.array(items))])
    }
}

extension PluginIsolation {
    /// Whether plugins run in worker processes.
    var isProcess: Bool {
        if case .process = self { true } else { false }
    }
}
