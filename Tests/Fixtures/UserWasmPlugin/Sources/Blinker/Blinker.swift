import ActomatonCore
import ActomatonPluginCore

/// A blinking light: `start` blinks it every `interval_ms` until `stop`.
public enum BlinkerAction: Sendable {
    case start(intervalMilliseconds: UInt32)
    case toggle
    case stop

    /// The vocabulary entry of each action.
    public var call: PluginCall {
        switch self {
        case let .start(interval): PluginCall("start", .uint(UInt64(interval)))
        case .toggle: PluginCall("toggle")
        case .stop: PluginCall("stop")
        }
    }
}

/// The light.
public struct Light: Sendable, Equatable, CustomStringConvertible, PluginSnapshotCodable {
    public var isOn = false
    public var blinks: Int64 = 0

    public init() {}

    public var description: String { #"{"blinks":\#(blinks),"on":\#(isOn)}"# }

    public func encode(to writer: inout PluginSnapshotWriter) {
        writer.write(isOn)
        writer.write(blinks)
    }

    public init(from reader: inout PluginSnapshotReader) throws(PluginSnapshotError) {
        isOn = try reader.read(Bool.self)
        blinks = try reader.read(Int64.self)
    }
}

/// The reducer.
public let blinker = MealyReducer<BlinkerAction, Light, Void, PluginEffect<BlinkerAction>> { action, light, _ in
    switch action {
    case let .start(interval):
        guard interval > 0 else { return .fail("interval_ms must be at least 1") }
        return .every(.milliseconds(Int64(interval)), send: .toggle, id: "blink")
    case .toggle:
        light.isOn.toggle()
        light.blinks += 1
        return .empty
    case .stop:
        return .cancel(id: "blink")
    }
}
