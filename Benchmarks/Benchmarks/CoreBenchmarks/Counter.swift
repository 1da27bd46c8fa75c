import ActomatonCore

enum CounterAction: Sendable {
    case increment, decrement, add(Int), reset
}

struct CounterState: Sendable {
    var count = 0
    var resets = 0
}

/// The same transition, as a struct reducer for `MealyMachine`.
struct CounterReducer: MealyReducerProtocol, Sendable {
    @inline(__always)
    func reduce(_ action: CounterAction, into state: inout CounterState, environment: Void) {
        handWrittenCounter(action, &state)
    }
}

/// The physical limit: a `switch` on a plain struct.
@inline(__always)
func handWrittenCounter(_ action: CounterAction, _ state: inout CounterState) {
    switch action {
    case .increment: state.count &+= 1
    case .decrement: state.count &-= 1
    case let .add(n): state.count &+= n
    case .reset:
        state.count = 0
        state.resets &+= 1
    }
}

/// A fixed, irregular action stream so neither loop can be folded to a formula.
let counterMask = 1023
let counterActions: [CounterAction] = (0...counterMask).map { index in
    switch (index &* 2_654_435_761) % 17 {
    case 0: .reset
    case 1...6: .decrement
    case 7...9: .add(index % 5)
    default: .increment
    }
}

enum ChainAction: Sendable {
    case tap(Int), add(Int), count
}

struct ChainState: Sendable {
    var total = 0
    var taps = 0
}

/// One `.tap` feeds back two actions, `.add` then `.count`, as an inline `Feedback`.
struct InlineChainReducer: MealyReducerProtocol, Sendable {
    @inline(__always)
    func reduce(_ action: ChainAction, into state: inout ChainState, environment: Void) -> Feedback<ChainAction> {
        switch action {
        case let .tap(n): return .actions(.add(n), .count)
        case let .add(n): state.total &+= n
        case .count: state.taps &+= 1
        }
        return .none
    }
}

/// The same, returning an array literal.
struct ArrayChainReducer: MealyReducerProtocol, Sendable {
    @inline(__always)
    func reduce(_ action: ChainAction, into state: inout ChainState, environment: Void) -> [ChainAction] {
        switch action {
        case let .tap(n): return [.add(n), .count]
        case let .add(n): state.total &+= n
        case .count: state.taps &+= 1
        }
        return []
    }
}

/// The same work by hand: the tap's two follow-ups written out inline, in order.
@inline(__always)
func handWrittenChain(_ action: ChainAction, _ state: inout ChainState) {
    switch action {
    case let .tap(n):
        state.total &+= n
        state.taps &+= 1
    case let .add(n): state.total &+= n
    case .count: state.taps &+= 1
    }
}

/// A fixed, irregular stream of chain actions, mostly taps, for both loops.
let chainActions: [ChainAction] = (0...counterMask).map { index in
    switch (index &* 2_654_435_761) % 11 {
    case 0: .count
    case 1: .add(index % 3)
    default: .tap(index % 7)
    }
}
