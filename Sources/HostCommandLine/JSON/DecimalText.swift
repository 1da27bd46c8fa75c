/// What a decimal number's text writes, read from its digits rather than from the double
/// nearest to it: `5.0`, `5e0` and `1.5e3` write the integers 5, 5 and 1500;
/// `9007199254740993.0` writes 9007199254740993, which no double holds (the nearest is
/// …992); `2.0000000000000001` and `1e-400` write numbers with a fraction, which the nearest
/// double (2 and 0) loses.
///
/// An integer parameter took the nearest double when it was a whole number, so each of these
/// was applied as another number than the one sent, without a word.
enum DecimalText: Equatable {
    /// A nonzero integer that fits an `Int64`.
    case int(Int64)
    /// An integer above `Int64.max` that fits a `UInt64`.
    case uint(UInt64)
    /// Zero, written with a fraction or an exponent (`0.0`, `-0e3`): the double keeps its sign.
    case zero
    /// An integer past `UInt64.max`, or below `Int64.min`.
    case beyondIntegers
    /// A number with a fraction.
    case fraction

    /// What `text` writes: a number `[+-]?digits[.digits][(e|E)[+-]digits]`, already checked
    /// as one (anything else is a ``fraction``, the kind that is never taken for an integer).
    static func read(_ text: some Collection<UInt8>) -> DecimalText {
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
                    // Saturated: an exponent past a million is past every integer (or below every
                    // fraction a text of this size can write) either way.
                    exponent = min(exponent * 10 + Int(digit), 1_000_000)
                case 1:
                    fractionDigits += 1
                    digits.append(digit)
                default:
                    digits.append(digit)
                }
            default:
                return .fraction
            }
        }
        guard let first = digits.firstIndex(where: { $0 != 0 }) else { return .zero }
        // digits × 10^power, with the leading and trailing zeros taken off.
        var power = (exponentNegative ? -exponent : exponent) - fractionDigits
        var last = digits.count - 1
        while digits[last] == 0 {
            last -= 1
            power += 1
        }
        let significant = digits[first...last]
        guard power >= 0 else { return .fraction }
        // UInt64.max has 20 digits.
        guard significant.count + power <= 20 else { return .beyondIntegers }
        var magnitude: UInt64 = 0
        for digit in significant {
            let (shifted, overflowA) = magnitude.multipliedReportingOverflow(by: 10)
            let (added, overflowB) = shifted.addingReportingOverflow(UInt64(digit))
            guard !overflowA, !overflowB else { return .beyondIntegers }
            magnitude = added
        }
        for _ in 0..<power {
            let (shifted, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            guard !overflow else { return .beyondIntegers }
            magnitude = shifted
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return .beyondIntegers }
            return .int(magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude))
        }
        return magnitude <= UInt64(Int64.max) ? .int(Int64(magnitude)) : .uint(magnitude)
    }

    /// Whether `double`, the nearest to a ``fraction``'s text, lost all of its fraction: it is
    /// a whole number (or zero), which an integer parameter would take as one.
    static func losesTheFraction(_ double: Double) -> Bool {
        double.rounded(.towardZero) == double
    }
}
