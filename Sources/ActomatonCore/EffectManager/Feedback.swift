/// A short list of feedback actions that stores up to two actions inline, without an array.
///
/// ``ActionEffectManager`` accepts any bidirectional collection of actions as output, `[Action]`
/// included. An array literal builds an array object on every transition, though; on a hot path
/// return a `Feedback` built with ``none``, ``action(_:)`` or ``actions(_:_:)``, which builds
/// nothing. (An array literal of `Feedback` also works, at the cost of the literal's array.)
///
/// ```swift
/// case let .tap(n): return .actions(.add(n), .count)
/// case .add, .count: return .none
/// ```
public struct Feedback<Action>: BidirectionalCollection, ExpressibleByArrayLiteral, ReducerOutput {
    @usableFromInline
    enum Storage {
        case none
        case one(Action)
        case two(Action, Action)
        case many([Action])
    }

    @usableFromInline
    let storage: Storage

    @inlinable
    init(_ storage: Storage) {
        self.storage = storage
    }

    /// No feedback.
    @inlinable
    public static var none: Feedback { Feedback(.none) }

    /// One action fed back.
    @inlinable
    public static func action(_ action: Action) -> Feedback { Feedback(.one(action)) }

    /// Two actions fed back, `first` first.
    @inlinable
    public static func actions(_ first: Action, _ second: Action) -> Feedback { Feedback(.two(first, second)) }

    /// Any number of actions fed back, in order.
    @inlinable
    public init(_ actions: [Action]) {
        switch actions.count {
        case 0: storage = .none
        case 1: storage = .one(actions[0])
        case 2: storage = .two(actions[0], actions[1])
        default: storage = .many(actions)
        }
    }

    /// The actions of the literal, in order.
    @inlinable
    public init(arrayLiteral actions: Action...) {
        self.init(actions)
    }

    /// No feedback.
    @inlinable
    public static var empty: Feedback { .none }

    /// The actions of `lhs`, then those of `rhs`.
    @inlinable
    public static func + (lhs: Feedback, rhs: Feedback) -> Feedback {
        if lhs.isEmpty { return rhs }
        if rhs.isEmpty { return lhs }
        return Feedback(Array(lhs) + Array(rhs))
    }

    /// The position of the first action: always 0.
    @inlinable
    public var startIndex: Int { 0 }

    /// One past the position of the last action.
    @inlinable
    public var endIndex: Int {
        switch storage {
        case .none: 0
        case .one: 1
        case .two: 2
        case let .many(actions): actions.count
        }
    }

    /// The position after `index`.
    @inlinable
    public func index(after index: Int) -> Int { index + 1 }

    /// The position before `index`.
    @inlinable
    public func index(before index: Int) -> Int { index - 1 }

    /// The action at `position`, in the order they are fed back.
    @inlinable
    public subscript(position: Int) -> Action {
        switch storage {
        case let .one(action) where position == 0: action
        case let .two(first, second) where position == 0 || position == 1: position == 0 ? first : second
        case let .many(actions): actions[position]
        default: fatalError("Feedback index \(position) out of range")
        }
    }
}

extension Feedback: Sendable where Action: Sendable {}
extension Feedback.Storage: Sendable where Action: Sendable {}

extension Feedback: Equatable where Action: Equatable {
    /// Whether both hold the same actions in the same order.
    @inlinable
    public static func == (lhs: Feedback, rhs: Feedback) -> Bool {
        lhs.elementsEqual(rhs)
    }
}
