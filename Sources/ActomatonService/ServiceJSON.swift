import ActomatonHost
import ActomatonPluginContract
import HostCommandLine

/// The service's JSON bodies, written without Foundation: a plugin's state description is
/// embedded as JSON when it is JSON, and as a string when it is not.
enum ServiceJSON {
    /// `text` as a JSON string, quotes included: `"` and `\` escaped, control characters as
    /// `\u00XX` (`/` is left as it is, unlike ``JSONText/string(_:)``, so paths read as paths).
    static func string(_ text: String) -> String {
        if !needsEscaping(text) { return "\"" + text + "\"" }
        var out: [UInt8] = [UInt8(ascii: "\"")]
        out.reserveCapacity(text.utf8.count + 2)
        let digits = Array("0123456789abcdef".utf8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out += [92, byte]
            case 0x0A: out += [92, UInt8(ascii: "n")]
            case 0x0D: out += [92, UInt8(ascii: "r")]
            case 0x09: out += [92, UInt8(ascii: "t")]
            case 0..<0x20: out += Array("\\u00".utf8) + [digits[Int(byte >> 4)], digits[Int(byte & 15)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether ``string(_:)`` must escape something in `text` (most names and keys need nothing).
    static func needsEscaping(_ text: String) -> Bool {
        text.utf8.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
    }

    /// Appends `text` as a JSON string (``string(_:)``) to `out`.
    static func append(_ text: String, to out: inout String) {
        if needsEscaping(text) {
            out += string(text)
        } else {
            out += "\""
            out += text
            out += "\""
        }
    }

    /// `text` as JSON when it parses, else as a JSON string; `null` for `nil`.
    static func embedded(_ text: String?) -> String {
        guard let text else { return "null" }
        if (try? JSONParser.parse(text)) != nil { return text }
        return ServiceJSON.string(text)
    }

    static func strings(_ items: [String]) -> String {
        JSONText.array(items.map(ServiceJSON.string))
    }

    /// What `POST /v1/machines/{plugin}/{key}` answers.
    static func transition(_ transition: InstanceTransition, address: InstanceAddress) -> String {
        object(of: transition, address: address, withOrigin: false)
    }

    /// One watcher message: a transition with where its action came from.
    static func watchMessage(_ transition: InstanceTransition, address: InstanceAddress) -> String {
        object(of: transition, address: address, withOrigin: true)
    }

    /// A transition's object; `withOrigin` adds `origin` and `effect_id` after `seq`.
    private static func object(of transition: InstanceTransition, address: InstanceAddress, withOrigin: Bool) -> String {
        var object = ObjectWriter()
        object.string("plugin", address.plugin)
        object.string("key", address.key.text)
        object.raw("seq", String(transition.seq))
        if withOrigin {
            object.string("origin", transition.origin.rawValue)
            if let effectID = transition.effectID { object.string("effect_id", effectID) } else { object.raw("effect_id", "null") }
        }
        object.string("action", transition.action)
        object.raw("state", embedded(transition.state))
        object.strings("started", transition.started)
        object.strings("cancelled", transition.cancelled)
        if let active = transition.active { object.strings("active", active) }
        return object.finish()
    }

    /// A JSON object written member by member into one string, for the bodies written once per
    /// transition. Its keys are the service's own, plain ASCII, written as they are.
    struct ObjectWriter {
        private var text = "{"
        private var isEmpty = true

        init() {
            text.reserveCapacity(256)
        }

        /// A member whose value is JSON already.
        mutating func raw(_ key: String, _ value: String) {
            open(key)
            text += value
        }

        /// A member whose value is `value` as a JSON string.
        mutating func string(_ key: String, _ value: String) {
            open(key)
            ServiceJSON.append(value, to: &text)
        }

        /// A member whose value is an array of `values` as JSON strings.
        mutating func strings(_ key: String, _ values: [String]) {
            open(key)
            text += "["
            for (index, value) in values.enumerated() {
                if index > 0 { text += "," }
                ServiceJSON.append(value, to: &text)
            }
            text += "]"
        }

        private mutating func open(_ key: String) {
            text += isEmpty ? "\"" : ",\""
            isEmpty = false
            text += key
            text += "\":"
        }

        /// The object's text.
        consuming func finish() -> String {
            text + "}"
        }
    }

    /// What `GET /v1/machines/{plugin}/{key}` answers.
    static func status(_ status: InstanceStatus, address: InstanceAddress, now: ContinuousClock.Instant = .now) -> String {
        JSONText.object([
            ("plugin", ServiceJSON.string(address.plugin)),
            ("key", ServiceJSON.string(address.key.text)),
            ("seq", String(status.seq)),
            ("state", embedded(status.state)),
            ("timers", JSONText.array(status.timers.map { timer in
                JSONText.object([
                    ("kind", ServiceJSON.string(timer.kind)),
                    ("id", timer.id.map(ServiceJSON.string) ?? "null"),
                    ("action", ServiceJSON.string(timer.action)),
                    ("effect", ServiceJSON.string(timer.text)),
                    ("interval_ms", String(milliseconds(timer.interval))),
                    ("due_in_ms", String(milliseconds(timer.dueIn(at: now)))),
                ])
            })),
            ("effects", String(status.effects)),
        ] + active(status.active))
    }

    /// The `active` member, when the plugin names its diagram's active nodes.
    static func active(_ names: [String]?) -> [(key: String, value: String)] {
        names.map { [(key: "active", value: strings($0))] } ?? []
    }

    /// `duration` in whole milliseconds, rounded up (a timer 0.2 ms from due is not yet due).
    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    }

    /// What `GET /v1/machines/{plugin}` answers.
    static func keys(_ keys: [InstanceKey], of plugin: String, more: Bool) -> String {
        JSONText.object([
            ("plugin", ServiceJSON.string(plugin)),
            ("keys", strings(keys.map(\.text))),
            ("next", more ? keys.last.map { ServiceJSON.string($0.text) } ?? "null" : "null"),
        ])
    }

    /// What `GET /v1/plugins` answers.
    static func plugins(_ catalog: PluginCatalog) -> String {
        let items = catalog.names.compactMap { catalog.types[$0] }.map { (type: PluginType) -> String in
            let manifest = type.plugin.manifest
            return JSONText.object([
                ("name", ServiceJSON.string(manifest.name)),
                ("version", ServiceJSON.string(manifest.version)),
                ("abi", String(manifest.abiVersion)),
                ("summary", manifest.summary.map(ServiceJSON.string) ?? "null"),
                ("sandbox", type.plugin.isWebAssembly ? "\"wasm\"" : (type.isolation.isProcess ? "\"process\"" : "\"none\"")),
                ("diagram", manifest.diagram == nil ? "false" : "true"),
                ("actions", JSONText.array(manifest.actions.map { action in
                    JSONText.object([
                        ("name", ServiceJSON.string(action.name)),
                        ("signature", ServiceJSON.string(action.description)),
                        ("parameters", JSONText.array(action.parameters.map { parameter in
                            JSONText.object([("name", ServiceJSON.string(parameter.name)), ("type", ServiceJSON.string(parameter.type.description))])
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
