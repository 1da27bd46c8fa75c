import Actomaton

/// A two-way binding to a field of a store's state, for a control that edits it (a text field,
/// a toggle): reading returns the field, writing sends an action.
///
/// Made by ``Store/binding(get:onChange:)-(KeyPath<State,Value>,_)``. Writing does not change the
/// state itself: the action does, once the machine has run it, and the binding then reads the new
/// value. On Apple platforms, wrap it in a SwiftUI `Binding`:
/// `Binding(get: { binding.wrappedValue }, set: { binding.wrappedValue = $0 })`.
@MainActor
public struct StoreBinding<Value> {
    private let get: @MainActor () -> Value
    private let set: @MainActor (Value) -> Void

    /// A binding that reads with `get` and writes with `set`.
    ///
    /// - Parameters:
    ///   - get: Reads the value.
    ///   - set: Takes a new value.
    public init(get: @escaping @MainActor () -> Value, set: @escaping @MainActor (Value) -> Void) {
        self.get = get
        self.set = set
    }

    /// The field's value; setting it sends the store's action for the new value.
    public var wrappedValue: Value {
        get { get() }
        nonmutating set { set(newValue) }
    }
}

extension Store {
    /// A binding to a field of the state that sends an action when written.
    ///
    /// ```swift
    /// let username = store.binding(get: \.username, onChange: Action.updateUsername)
    /// username.wrappedValue = "alice" // sends .updateUsername("alice")
    /// ```
    ///
    /// Reading the binding tracks the field, as reading it through the store does.
    ///
    /// - Parameters:
    ///   - keyPath: The field.
    ///   - onChange: The action to send for a new value; `nil` sends nothing.
    /// - Returns: The binding.
    public func binding<Value>(
        get keyPath: KeyPath<State, Value>,
        onChange: @escaping (Value) -> Action?
    ) -> StoreBinding<Value> {
        StoreBinding(
            get: { self[dynamicMember: keyPath] },
            set: { value in
                if let action = onChange(value) { self.send(action) }
            }
        )
    }

    /// A binding to a value derived from the state that sends an action when written.
    ///
    /// - Parameters:
    ///   - get: Derives the value from the state; reading the binding tracks the whole state.
    ///   - onChange: The action to send for a new value; `nil` sends nothing.
    /// - Returns: The binding.
    public func binding<Value>(
        get: @escaping (State) -> Value,
        onChange: @escaping (Value) -> Action?
    ) -> StoreBinding<Value> {
        StoreBinding(
            get: { get(self.state) },
            set: { value in
                if let action = onChange(value) { self.send(action) }
            }
        )
    }
}
