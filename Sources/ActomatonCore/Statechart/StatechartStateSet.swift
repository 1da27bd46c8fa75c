/// A set of up to 128 states of a statechart, one bit per raw value: a value type with no
/// storage outside itself, so copying and changing it never allocates.
public struct StatechartStateSet: Hashable, Sendable {
    /// The number of states a set (and so a chart) can hold: raw values `0..<capacity`.
    public static let capacity = 128

    /// Bits 0–63.
    @usableFromInline var low: UInt64
    /// Bits 64–127.
    @usableFromInline var high: UInt64

    /// The empty set.
    @inlinable
    public init() {
        low = 0
        high = 0
    }

    @inlinable
    init(low: UInt64, high: UInt64) {
        self.low = low
        self.high = high
    }

    /// The set whose members are the one bits of `words`: bits 0–63 in the first word, 64–127
    /// in the second. ``words`` is the inverse.
    ///
    /// For reading a state back from bytes (a snapshot, a file, a wire): any two words make a
    /// set, so check the ``StatechartState`` they form with ``Statechart/isValid(_:)`` before
    /// running it.
    @inlinable
    public init(words: (UInt64, UInt64)) {
        self.init(low: words.0, high: words.1)
    }

    /// The members as two 64-bit words, bits 0–63 then 64–127: for writing a state as bytes.
    /// ``init(words:)`` reads them back.
    @inlinable
    public var words: (UInt64, UInt64) { (low, high) }

    /// A set holding only `index`.
    @inlinable
    init(index: Int) {
        self.init()
        insert(index)
    }

    /// Whether the set has no member.
    @inlinable
    public var isEmpty: Bool { low | high == 0 }

    /// The number of members.
    @inlinable
    public var count: Int { low.nonzeroBitCount + high.nonzeroBitCount }

    /// Whether `index` is a member; `false` for an index outside `0..<capacity`.
    @inlinable
    public func contains(_ index: Int) -> Bool {
        guard UInt(bitPattern: index) < UInt(Self.capacity) else { return false }
        return index < 64 ? low & (1 &<< UInt64(index)) != 0 : high & (1 &<< UInt64(index &- 64)) != 0
    }

    /// Adds `index`, which must be in `0..<capacity` (an index past it was folded onto
    /// another: 128 added 64).
    @inlinable
    public mutating func insert(_ index: Int) {
        precondition(UInt(bitPattern: index) < UInt(Self.capacity), "a state set holds the indices 0..<128")
        if index < 64 { low |= 1 &<< UInt64(index) } else { high |= 1 &<< UInt64(index &- 64) }
    }

    /// Removes `index`, which must be in `0..<capacity`.
    @inlinable
    public mutating func remove(_ index: Int) {
        precondition(UInt(bitPattern: index) < UInt(Self.capacity), "a state set holds the indices 0..<128")
        if index < 64 { low &= ~(1 &<< UInt64(index)) } else { high &= ~(1 &<< UInt64(index &- 64)) }
    }

    /// The members of either set.
    @inlinable
    public func union(_ other: Self) -> Self { Self(low: low | other.low, high: high | other.high) }

    /// The members of both sets.
    @inlinable
    public func intersection(_ other: Self) -> Self { Self(low: low & other.low, high: high & other.high) }

    /// The members of this set that are not in `other`.
    @inlinable
    public func subtracting(_ other: Self) -> Self { Self(low: low & ~other.low, high: high & ~other.high) }

    /// Whether the sets share a member.
    @inlinable
    public func intersects(_ other: Self) -> Bool { (low & other.low) | (high & other.high) != 0 }

    /// Whether every member of this set is in `other`.
    @inlinable
    public func isSubset(of other: Self) -> Bool { subtracting(other).isEmpty }

    /// The smallest member, or `nil` when the set is empty.
    @inlinable
    public var first: Int? {
        if low != 0 { return low.trailingZeroBitCount }
        if high != 0 { return 64 &+ high.trailingZeroBitCount }
        return nil
    }

    /// The largest member, or `nil` when the set is empty.
    @inlinable
    public var last: Int? {
        if high != 0 { return 127 &- high.leadingZeroBitCount }
        if low != 0 { return 63 &- low.leadingZeroBitCount }
        return nil
    }

    /// Removes and returns the smallest member, or returns `nil` when the set is empty.
    @inlinable
    public mutating func popFirst() -> Int? {
        if low != 0 {
            let index = low.trailingZeroBitCount
            low &= low &- 1
            return index
        }
        if high != 0 {
            let index = 64 &+ high.trailingZeroBitCount
            high &= high &- 1
            return index
        }
        return nil
    }
}

extension StatechartStateSet: Sequence {
    /// The members in increasing order.
    public struct Iterator: IteratorProtocol {
        @usableFromInline var remaining: StatechartStateSet

        @inlinable
        init(_ set: StatechartStateSet) { remaining = set }

        /// The next member.
        @inlinable
        public mutating func next() -> Int? { remaining.popFirst() }
    }

    /// An iterator over the members in increasing order.
    @inlinable
    public func makeIterator() -> Iterator { Iterator(self) }
}
