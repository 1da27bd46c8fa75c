/// A small, fast random number generator that a seed makes reproducible.
///
/// For simulations, games and tests that must replay the same way: the same seed gives the same
/// numbers on every platform, Embedded Swift included (which has no system generator without a
/// libc). Not for cryptography. The algorithm is Steele, Lea and Flood's SplitMix64.
///
/// ```swift
/// var random = SplitMix64(seed: 42)
/// let roll = Int.random(in: 1...6, using: &random)
/// ```
public struct SplitMix64: RandomNumberGenerator, Sendable {
    @usableFromInline
    var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    @inlinable
    public init(seed: UInt64) {
        state = seed
    }

    /// The next 64 random bits.
    @inlinable
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
