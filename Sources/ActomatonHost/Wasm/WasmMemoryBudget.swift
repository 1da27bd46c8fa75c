import Synchronization

/// The linear memory that the `.wasm` instances of a host may have together
/// (`--wasm-memory-total`): each instance reserves its memory from the budget when it is made
/// and at every `memory.grow`, and gives it back when it is freed.
///
/// ``WasmLimits/memoryLimit`` bounds one instance; this bounds them all. A service makes an
/// instance per key, and without it a client naming new keys could make the host hold
/// ``WasmLimits/memoryLimit`` for each of its instances in memory (64 MiB times 100,000 by
/// default). Past the budget an instance is not made, and a `memory.grow` returns -1 to the
/// module; the call that needed it fails with
/// ``PluginCallError/Reason/wasmMemoryTotalReached(limit:size:needed:failure:)``, which a
/// service answers with 429 after passivating idle instances to make room. An instance rebuilt
/// after a trap takes what it needs whatever the others hold (it replaces one): the total may
/// be passed by what a rebuild needs beyond what the trapped instance held.
///
/// The budget counts the memory the instances declare and grow to, not the pages they touch:
/// a module may touch every page it has, so that is what the bound must cover.
public final class WasmMemoryBudget: Sendable, Hashable, CustomStringConvertible {
    /// The most bytes all instances may reserve together.
    public var limit: Int { bytes.limit }
    private let bytes: BoundedTotal

    /// The default: 4 GiB.
    public static let defaultLimit = 4 << 30

    /// A budget of `limit` bytes, shared by whatever limits it is put in.
    public init(limit: Int = WasmMemoryBudget.defaultLimit) {
        bytes = BoundedTotal(limit: limit)
    }

    /// The budget of this process for `limit`: the same object for the same limit, so that
    /// every plugin a host loads with the same options shares it.
    public static func hostWide(limit: Int = WasmMemoryBudget.defaultLimit) -> WasmMemoryBudget {
        hostWideBudgets.withLock { budgets in
            if let budget = budgets[limit] { return budget }
            let budget = WasmMemoryBudget(limit: limit)
            budgets[limit] = budget
            return budget
        }
    }

    private static let hostWideBudgets = Mutex<[Int: WasmMemoryBudget]>([:])

    /// The bytes reserved now.
    public var used: Int { bytes.used }

    /// The bytes left to reserve.
    public var available: Int { bytes.available }

    /// Reserves `count` bytes when they fit under the limit; whether they did.
    func reserve(_ count: Int) -> Bool { bytes.reserve(count) }

    /// Reserves `count` bytes whether or not they fit: for a rebuild, which replaces an instance.
    func forceReserve(_ count: Int) { bytes.forceReserve(count) }

    /// Gives back `count` bytes reserved before.
    func release(_ count: Int) { bytes.release(count) }

    /// Why an instance was not made or a grow refused, for a budget of `limit` bytes.
    static func reachedPhrase(limit: Int) -> String {
        "the .wasm instances of this host already hold too much of the \(limit) bytes of memory they may have together (--wasm-memory-total)"
    }

    /// `N of M bytes`.
    public var description: String { "\(used) of \(limit) bytes" }

    public static func == (lhs: WasmMemoryBudget, rhs: WasmMemoryBudget) -> Bool { lhs === rhs }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }
}
