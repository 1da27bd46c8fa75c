/// A first-in, first-out queue: an array and the index of its first element.
///
/// ``popFirst()`` is O(1), where `Array.removeFirst()` shifts every element left (draining
/// a lane's backlog of n waiting effects cost O(n²) under the runtime's lock). The elements
/// taken are dropped once they are half the storage, so each element is moved at most once
/// per halving: O(1) amortized. The storage shrinks with it: a backlog that drained keeps no
/// room for its peak.
struct FIFOQueue<Element> {
    private var storage: [Element] = []
    private var head = 0
    /// How many elements compaction has moved, in all (for tests of the amortized cost).
    private(set) var moveCount = 0

    /// An empty queue.
    init() {}

    /// Whether the queue has no element.
    var isEmpty: Bool { head == storage.count }

    /// How many elements the queue holds.
    var count: Int { storage.count - head }

    /// The elements, first first.
    var elements: ArraySlice<Element> { storage[head...] }

    /// How many elements the storage has room for.
    var capacity: Int { storage.capacity }

    /// Storage up to this many elements is kept when the queue empties, for the next ones.
    private static var keptCapacity: Int { 64 }

    /// The first element; `nil` when empty.
    var first: Element? { head < storage.count ? storage[head] : nil }

    /// The last element; `nil` when empty.
    var last: Element? { head < storage.count ? storage.last : nil }

    /// Adds `element` at the end.
    mutating func append(_ element: Element) {
        storage.append(element)
    }

    /// Removes and returns the first element; `nil` when empty.
    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let first = storage[head]
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.capacity <= Self.keptCapacity)
            head = 0
        } else if head >= 16, head * 2 >= storage.count {
            moveCount += storage.count - head
            storage = Array(storage[head...])
            head = 0
        }
        return first
    }

    /// Removes and returns the last element; `nil` when empty.
    mutating func popLast() -> Element? {
        guard head < storage.count else { return nil }
        let last = storage.removeLast()
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.capacity <= Self.keptCapacity)
            head = 0
        }
        return last
    }

    /// Removes the elements that satisfy `shouldBeRemoved`, into storage of the size left.
    mutating func removeAll(where shouldBeRemoved: (Element) throws -> Bool) rethrows {
        moveCount += storage.count - head
        storage = try storage[head...].filter { try !shouldBeRemoved($0) }
        head = 0
    }
}
