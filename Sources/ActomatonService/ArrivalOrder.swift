import Synchronization

/// The requests that change one instance — its actions and its deletion — taken in the order
/// they reached the service, whatever the instance was doing meanwhile.
///
/// An instance's machine applies its actions one at a time, first come first served (a
/// ``TurnLock``). But requests that came while the instance was being made, restored or
/// deleted waited on the registry first, and were let go in no order: ten POSTs 2 ms apart to a
/// new key were applied 6, 5, 4, 3, 2, 1, 7, 8, 9, 10, and POSTs sent after a DELETE were
/// applied before it, then deleted with it. Each such request now enters here when it arrives,
/// and leaves once its turn on the machine is taken (an action) or it is done (a deletion).
final class ArrivalOrder: Sendable {
    /// The lock of each address with a request in it, and how many requests hold or wait for it.
    private let locks = Mutex<[InstanceAddress: (lock: TurnLock, users: Int)]>([:])

    /// Waits until every request to `address` that entered before has left; `nil` when the task
    /// is cancelled first (the end of a shutdown's time).
    func enter(_ address: InstanceAddress) async -> Arrival? {
        let lock = locks.withLock { locks in
            if let entry = locks[address] {
                locks[address] = (entry.lock, entry.users + 1)
                return entry.lock
            }
            let lock = TurnLock()
            locks[address] = (lock, 1)
            return lock
        }
        guard await lock.acquireUnlessCancelled(inLine: { [self] in enteredCount.add(1, ordering: .relaxed) }) else {
            forget(address)
            return nil
        }
        return Arrival(order: self, address: address, lock: lock)
    }

    /// Lets the next request to `address` in (`lock`, held by the one leaving, is released).
    fileprivate func leave(_ address: InstanceAddress, _ lock: TurnLock) {
        lock.release()
        forget(address)
    }

    /// One request less holds or waits for the lock of `address`.
    private func forget(_ address: InstanceAddress) {
        locks.withLock { locks in
            guard let entry = locks[address] else { return }
            if entry.users <= 1 {
                locks[address] = nil
            } else {
                locks[address] = (entry.lock, entry.users - 1)
            }
        }
    }

    /// How many requests are in line so far (holding their turn, or waiting for it), all
    /// addresses together (tests).
    private let enteredCount = Atomic(0)

    /// How many requests are in line so far, all addresses together (tests).
    var entered: Int { enteredCount.load(ordering: .relaxed) }

    /// How many requests wait for their turn at `address` (tests).
    func waiting(at address: InstanceAddress) -> Int {
        locks.withLock { $0[address]?.lock }?.waiting ?? 0
    }

    /// How many addresses have a request in (tests).
    var addressCount: Int { locks.withLock { $0.count } }
}

/// A request's place in an instance's ``ArrivalOrder``: held until ``leave()``, which later
/// calls ignore.
final class Arrival: Sendable {
    private let order: ArrivalOrder
    private let address: InstanceAddress
    private let lock: TurnLock
    private let left = Atomic(false)

    fileprivate init(order: ArrivalOrder, address: InstanceAddress, lock: TurnLock) {
        self.order = order
        self.address = address
        self.lock = lock
    }

    /// Lets the next request to the instance in.
    func leave() {
        guard !left.exchange(true, ordering: .acquiringAndReleasing) else { return }
        order.leave(address, lock)
    }

    deinit { leave() }
}
