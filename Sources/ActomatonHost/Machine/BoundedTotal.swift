import Synchronization

/// A count many holders take from and give back to, never past its limit unless forced: the
/// bytes of a host's `.wasm` memories (``WasmMemoryBudget``), of a service's watch histories.
public final class BoundedTotal: Sendable {
    /// The most that may be taken, all holders together.
    public let limit: Int
    private let taken = Atomic<Int>(0)

    /// A total of at most `limit` (0 when negative).
    public init(limit: Int) {
        self.limit = max(limit, 0)
    }

    /// What is taken now.
    public var used: Int { taken.load(ordering: .relaxed) }

    /// What is left to take.
    public var available: Int { max(limit - used, 0) }

    /// Takes `amount` when it fits under the limit; whether it did.
    public func reserve(_ amount: Int) -> Bool {
        taken.take(amount, upTo: limit)
    }

    /// Takes `amount` when it fits under the limit plus `extra`; whether it did. For a holder
    /// about to give back `extra` (`amount` takes its place).
    public func reserve(_ amount: Int, allowingOver extra: Int) -> Bool {
        let (limit, overflowed) = limit.addingReportingOverflow(max(extra, 0))
        return taken.take(amount, upTo: overflowed ? .max : limit)
    }

    /// Takes `amount` whether or not it fits.
    public func forceReserve(_ amount: Int) {
        if amount > 0 { taken.add(amount, ordering: .relaxed) }
    }

    /// Gives back `amount` taken before.
    public func release(_ amount: Int) {
        if amount > 0 { taken.subtract(amount, ordering: .relaxed) }
    }
}

extension Atomic where Value == Int {
    /// Adds `amount` when the sum stays at most `limit`; whether it did.
    func take(_ amount: Int, upTo limit: Int) -> Bool {
        guard amount > 0 else { return true }
        var current = load(ordering: .relaxed)
        while true {
            let (sum, overflowed) = current.addingReportingOverflow(amount)
            guard !overflowed, sum <= limit else { return false }
            let (exchanged, original) = compareExchange(expected: current, desired: sum, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }
}
