/// A state a plugin snapshots as bytes without Foundation or reflection, so the same state
/// type serves a `.so` plugin, a `.wasm` plugin and firmware.
///
/// The encoding is the writer's: little-endian fixed-width integers, length-prefixed strings
/// and arrays. Write a version byte first, so that a later plugin can read an older snapshot:
///
/// ```swift
/// extension Count: PluginSnapshotCodable {
///     func encode(to writer: inout PluginSnapshotWriter) {
///         writer.write(UInt8(1))
///         writer.write(value)
///     }
///     init(from reader: inout PluginSnapshotReader) throws(PluginSnapshotError) {
///         guard try reader.read(UInt8.self) == 1 else { throw PluginSnapshotError("unknown snapshot version") }
///         value = try reader.read(Int64.self)
///     }
/// }
/// ```
public protocol PluginSnapshotCodable {
    /// Writes the state.
    func encode(to writer: inout PluginSnapshotWriter)
    /// Reads a state `encode(to:)` wrote; throws for bytes it cannot read.
    init(from reader: inout PluginSnapshotReader) throws(PluginSnapshotError)
}

/// Why snapshot bytes could not be read: one line for the user.
public struct PluginSnapshotError: Error, Equatable {
    /// What is wrong.
    public var message: String

    /// An error saying `message`.
    public init(_ message: String) {
        self.message = message
    }
}

/// Writes a snapshot's bytes.
public struct PluginSnapshotWriter {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8] = []

    /// An empty writer.
    public init() {}

    /// Appends `value`, little-endian.
    public mutating func write<T: FixedWidthInteger>(_ value: T) {
        var remaining = value
        for _ in 0..<(T.bitWidth / 8) {
            bytes.append(UInt8(truncatingIfNeeded: remaining))
            remaining = remaining >> 8
        }
    }

    /// Appends `value` as one byte, 0 or 1.
    public mutating func write(_ value: Bool) {
        bytes.append(value ? 1 : 0)
    }

    /// Appends `value`'s UTF-8 bytes after their count (`UInt32`).
    public mutating func write(_ value: String) {
        write(Array(value.utf8))
    }

    /// Appends `value` after its count (`UInt32`).
    public mutating func write(_ value: [UInt8]) {
        write(UInt32(truncatingIfNeeded: value.count))
        bytes.append(contentsOf: value)
    }

    /// Appends `value` with its own encoding.
    public mutating func write<T: PluginSnapshotCodable>(_ value: T) {
        value.encode(to: &self)
    }

    /// Appends `values` after their count (`UInt32`).
    public mutating func write<T: PluginSnapshotCodable>(_ values: [T]) {
        write(UInt32(truncatingIfNeeded: values.count))
        for value in values { value.encode(to: &self) }
    }
}

/// Reads a snapshot's bytes, refusing anything short or out of range.
public struct PluginSnapshotReader {
    private let bytes: [UInt8]
    private var offset = 0

    /// A reader of `bytes`.
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { offset == bytes.count }

    /// Reads a little-endian integer.
    public mutating func read<T: FixedWidthInteger>(_: T.Type) throws(PluginSnapshotError) -> T {
        let size = T.bitWidth / 8
        guard bytes.count - offset >= size else { throw PluginSnapshotError("the snapshot ends too early") }
        var value: T = 0
        for index in 0..<size { value |= T(truncatingIfNeeded: bytes[offset + index]) << (8 * index) }
        offset += size
        return value
    }

    /// Reads a byte that must be 0 or 1.
    public mutating func read(_: Bool.Type) throws(PluginSnapshotError) -> Bool {
        switch try read(UInt8.self) {
        case 0: return false
        case 1: return true
        default: throw PluginSnapshotError("the snapshot holds a boolean that is neither 0 nor 1")
        }
    }

    /// Reads a count-prefixed byte array of at most `limit` bytes.
    public mutating func read(_: [UInt8].Type, limit: Int = 1 << 26) throws(PluginSnapshotError) -> [UInt8] {
        let count = Int(try read(UInt32.self))
        guard count <= limit else { throw PluginSnapshotError("the snapshot holds \(count) bytes where at most \(limit) fit") }
        guard bytes.count - offset >= count else { throw PluginSnapshotError("the snapshot ends too early") }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    /// Reads a count-prefixed UTF-8 string; invalid UTF-8 is refused.
    public mutating func read(_: String.Type, limit: Int = 1 << 26) throws(PluginSnapshotError) -> String {
        let utf8 = try read([UInt8].self, limit: limit)
        guard let text = String(validating: utf8, as: UTF8.self) else {
            throw PluginSnapshotError("the snapshot holds a string that is not UTF-8")
        }
        return text
    }

    /// Reads a value with its own encoding.
    public mutating func read<T: PluginSnapshotCodable>(_: T.Type) throws(PluginSnapshotError) -> T {
        try T(from: &self)
    }

    /// Reads a count-prefixed array of at most `limit` values.
    public mutating func read<T: PluginSnapshotCodable>(_: [T].Type, limit: Int = 1 << 20) throws(PluginSnapshotError) -> [T] {
        let count = Int(try read(UInt32.self))
        guard count <= limit, count <= bytes.count - offset else {
            throw PluginSnapshotError("the snapshot holds a list of \(count) items, more than it can")
        }
        var values: [T] = []
        values.reserveCapacity(count)
        for _ in 0..<count { values.append(try T(from: &self)) }
        return values
    }

    /// Throws unless every byte was read.
    public func finish() throws(PluginSnapshotError) {
        guard isAtEnd else { throw PluginSnapshotError("the snapshot has \(bytes.count - offset) bytes too many") }
    }
}

extension PluginSnapshotCodable {
    /// The snapshot bytes of `self`.
    public var snapshotBytes: [UInt8] {
        var writer = PluginSnapshotWriter()
        encode(to: &writer)
        return writer.bytes
    }

    /// Reads a value from `bytes`, which must hold exactly one.
    public init(snapshotBytes bytes: [UInt8]) throws(PluginSnapshotError) {
        var reader = PluginSnapshotReader(bytes)
        self = try Self(from: &reader)
        try reader.finish()
    }
}

extension String: PluginSnapshotCodable {
    /// Writes the string as its UTF-8 length and bytes.
    public func encode(to writer: inout PluginSnapshotWriter) { writer.write(self) }
    /// Reads a string written by `encode(to:)`.
    public init(from reader: inout PluginSnapshotReader) throws(PluginSnapshotError) { self = try reader.read(String.self) }
}
