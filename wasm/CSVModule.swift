// csv.wasm: the streaming CSV tokenizer of Plugins/CSVExample behind a C ABI.
// The ABI is documented in actomaton_wasm.h.
//
// The host writes input into a buffer the module owns (`csv_input_buffer`), then calls
// `csv_feed` with the number of bytes written; tokens come back encoded in an output buffer.

import ActomatonCore
import CSVExample

/// A growable byte buffer in linear memory, owned by the module.
struct ByteBuffer {
    var base: UnsafeMutablePointer<UInt8>?
    var capacity = 0
    var count = 0

    /// Makes room for `total` bytes, keeping the contents; false when memory is exhausted.
    mutating func reserve(_ total: Int) -> Bool {
        guard total > capacity else { return true }
        // Doubling, without overflowing Int (32 bits here) on absurd requests.
        var newCapacity = max(capacity, 128)
        while newCapacity < total {
            let (doubled, overflow) = newCapacity.multipliedReportingOverflow(by: 2)
            newCapacity = overflow ? total : doubled
        }
        guard let raw = tryAllocate(newCapacity) else { return false }
        let grown = raw.assumingMemoryBound(to: UInt8.self)
        if let base {
            grown.update(from: base, count: count)
            deallocate(base)
        }
        base = grown
        capacity = newCapacity
        return true
    }

    mutating func append(_ byte: UInt8) -> Bool {
        guard reserve(count + 1) else { return false }
        base![count] = byte
        count += 1
        return true
    }

    mutating func append(_ value: UInt32) -> Bool {
        append(UInt8(truncatingIfNeeded: value)) && append(UInt8(truncatingIfNeeded: value >> 8))
            && append(UInt8(truncatingIfNeeded: value >> 16)) && append(UInt8(truncatingIfNeeded: value >> 24))
    }

    mutating func append(_ bytes: [UInt8]) -> Bool {
        guard reserve(count + bytes.count) else { return false }
        for byte in bytes {
            base![count] = byte
            count += 1
        }
        return true
    }
}

// From runtime.c: unlike `UnsafeMutablePointer.allocate`, these return nil instead of trapping.
@_extern(c, "am_try_allocate") func tryAllocate(_ size: Int) -> UnsafeMutableRawPointer?
@_extern(c, "am_deallocate") func deallocate(_ pointer: UnsafeMutableRawPointer?)

nonisolated(unsafe) var tokenizer = MealyMachine(state: CSVTokenizer.State(), reducer: CSVTokenizer(), effectManager: ReplyEffectManager())
nonisolated(unsafe) var input = ByteBuffer()
nonisolated(unsafe) var output = ByteBuffer()

@_expose(wasm, "am_abi_version") @_cdecl("am_abi_version")
func abiVersion() -> Int32 { WasmABI.version }

/// Starts a new input, fields separated by `delimiter` (a byte; 44 is `,`).
@_expose(wasm, "csv_reset") @_cdecl("csv_reset")
func csvReset(_ delimiter: Int32) -> Int32 {
    guard (0...255).contains(delimiter), delimiter != 34, delimiter != 10, delimiter != 13 else {
        return WasmABI.badArgument
    }
    tokenizer = MealyMachine(state: CSVTokenizer.State(), reducer: CSVTokenizer(delimiter: UInt8(delimiter)),
                             effectManager: ReplyEffectManager())
    output.count = 0
    return WasmABI.ok
}

/// A buffer of at least `capacity` bytes for the next `csv_feed`; 0 when out of memory.
@_expose(wasm, "csv_input_buffer") @_cdecl("csv_input_buffer")
func csvInputBuffer(_ capacity: Int32) -> UnsafeMutablePointer<UInt8>? {
    guard capacity >= 0, input.reserve(max(Int(capacity), 1)) else { return nil }
    return input.base
}

/// Tokenizes the first `length` bytes of the input buffer; returns the number of tokens.
@_expose(wasm, "csv_feed") @_cdecl("csv_feed")
func csvFeed(_ length: Int32) -> Int32 {
    guard length >= 0, Int(length) <= input.capacity else { return WasmABI.badArgument }
    output.count = 0
    var tokens: Int32 = 0
    for index in 0..<Int(length) {
        let status = encode(tokenizer.send(.byte(input.base![index])), count: &tokens)
        guard status == WasmABI.ok else { return status }
    }
    return tokens
}

/// Ends the input: emits the last field and record; returns the number of tokens.
@_expose(wasm, "csv_finish") @_cdecl("csv_finish")
func csvFinish() -> Int32 {
    output.count = 0
    var tokens: Int32 = 0
    let status = encode(tokenizer.send(.endOfInput), count: &tokens)
    return status == WasmABI.ok ? tokens : status
}

/// Where the tokens of the last `csv_feed` or `csv_finish` are.
@_expose(wasm, "csv_output_pointer") @_cdecl("csv_output_pointer")
func csvOutputPointer() -> UnsafeMutablePointer<UInt8>? { output.base }

/// How many bytes of tokens the last `csv_feed` or `csv_finish` wrote.
@_expose(wasm, "csv_output_length") @_cdecl("csv_output_length")
func csvOutputLength() -> Int32 { Int32(output.count) }

/// Token encoding: a kind byte (1 field, 2 end of record, 3 error), a little-endian UInt32
/// payload length, the payload (a field's bytes; an error's kind byte, line and column).
func encode(_ tokens: [CSVToken], count: inout Int32) -> Int32 {
    for token in tokens {
        let written: Bool
        switch token {
        case let .field(bytes):
            written = output.append(UInt8(1)) && output.append(UInt32(bytes.count)) && output.append(bytes)
        case .endOfRecord:
            written = output.append(UInt8(2)) && output.append(UInt32(0))
        case let .error(error):
            written = output.append(UInt8(3)) && output.append(UInt32(9)) && output.append(error.kind.rawValue)
                && output.append(UInt32(truncatingIfNeeded: error.line)) && output.append(UInt32(truncatingIfNeeded: error.column))
        }
        guard written else { return WasmABI.outOfMemory }
        count += 1
    }
    return WasmABI.ok
}
