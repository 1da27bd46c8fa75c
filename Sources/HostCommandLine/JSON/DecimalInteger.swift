/// The integer a decimal number's text writes, read from the text itself: `5.0`, `5e0`,
/// `1.5e3` and `9007199254740993.0` are the integers 5, 5, 1500 and 9007199254740993.
///
/// A number with a fraction or an exponent was read as a double, and a double past 2^53 may
/// hold another integer than the one written: `9007199254740993.0` became 9007199254740992, and
/// an int64 parameter took it. Read from the digits, an integral text is its integer exactly.
enum DecimalInteger: Equatable {
    /// An integer that fits an `Int64`.
    case int(Int64)
    /// An integer above `Int64.max` that fits a `UInt64`.
    case uint(UInt64)

    /// The integer `text` writes — a number `-?digits[.digits][(e|E)[+-]digits]`, already
    /// checked as one — or `nil` when it has a fraction, is zero (whose sign a double keeps),
    /// or is past `UInt64.max` (or below `Int64.min`).
    static func exact(_ text: some Collection<UInt8>) -> DecimalInteger? {
        var negative = false
        var digits: [UInt8] = []
        var fractionDigits = 0
        var exponent = 0
        var exponentNegative = false
        var part = 0 // 0: integer digits, 1: fraction digits, 2: exponent
        for byte in text {
            switch byte {
            case UInt8(ascii: "-"):
                if part == 2 { exponentNegative = true } else { negative = true }
            case UInt8(ascii: "+"):
                continue
            case UInt8(ascii: "."):
                part = 1
            case UInt8(ascii: "e"), UInt8(ascii: "E"):
                part = 2
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                let digit = byte - UInt8(ascii: "0")
                switch part {
                case 2:
                    // Saturated: an exponent past a million is out of any integer's range either way.
                    exponent = min(exponent * 10 + Int(digit), 1_000_000)
                case 1:
                    fractionDigits += 1
                    digits.append(digit)
                default:
                    digits.append(digit)
                }
            default:
                return nil
            }
        }
        // digits × 10^power, with the leading and trailing zeros taken off.
        var power = (exponentNegative ? -exponent : exponent) - fractionDigits
        guard let first = digits.firstIndex(where: { $0 != 0 }) else { return nil }
        var last = digits.count - 1
        while digits[last] == 0 {
            last -= 1
            power += 1
        }
        let significant = digits[first...last]
        guard power >= 0 else { return nil }
        // UInt64.max has 20 digits.
        guard significant.count + power <= 20 else { return nil }
        var magnitude: UInt64 = 0
        for digit in significant {
            let (shifted, overflowA) = magnitude.multipliedReportingOverflow(by: 10)
            let (added, overflowB) = shifted.addingReportingOverflow(UInt64(digit))
            guard !overflowA, !overflowB else { return nil }
            magnitude = added
        }
        for _ in 0..<power {
            let (shifted, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            guard !overflow else { return nil }
            magnitude = shifted
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return .int(magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude))
        }
        return magnitude <= UInt64(Int64.max) ? .int(Int64(magnitude)) : .uint(magnitude)
    }
}
