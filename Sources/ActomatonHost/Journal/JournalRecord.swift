import ActomatonPluginContract

/// When an action counts as acknowledged, and what a crash can lose: how the journal trades
/// speed for durability, like Redis's `appendfsync`.
///
/// An action is acknowledged when the host reports it (`actomaton-host` prints its line;
/// ``PluginMachine/send(_:)`` returns). Under every policy the machines go on with the next
/// actions while a commit is under way, and the actions that arrive meanwhile share the next
/// commit (group commit), so one stream of actions is not held to one disk sync per action.
public enum JournalSyncPolicy: String, Sendable, Hashable, CaseIterable {
    /// Acknowledged once committed and synced to disk. Nothing acknowledged is lost, by a host
    /// crash or a power loss.
    case always
    /// Acknowledged at once, committed and synced at most ``JournalOptions/batchWindow`` later.
    /// A crash loses at most the actions acknowledged in one window, and never more than
    /// ``JournalOptions/maxUnsyncedActions``: past either bound, actions wait for their commit
    /// to be acknowledged, as under ``always``.
    case batch
    /// Acknowledged once committed (written to the operating system), without syncing. A host
    /// crash (even `kill -9`) loses nothing acknowledged; a power loss or an operating-system
    /// crash may.
    case off
}

/// How a ``PluginJournal`` writes.
public struct JournalOptions: Sendable, Hashable {
    /// When an action counts as acknowledged.
    public var sync: JournalSyncPolicy
    /// After how many journaled actions of one plugin its state is snapshotted (and the
    /// journal before the previous snapshot pruned).
    public var snapshotInterval: Int
    /// Under ``JournalSyncPolicy/batch``: the longest an acknowledged action waits for its
    /// commit to begin.
    public var batchWindow: Duration
    /// Under ``JournalSyncPolicy/batch``: the most actions acknowledged and not yet committed.
    public var maxUnsyncedActions: Int
    /// The most bytes the database may hold (its write-ahead log aside), rounded down to whole
    /// 4 KiB pages; `nil` for no limit but the disk's. A commit past it fails as on a full
    /// disk: nothing from then on is acknowledged.
    public var maxDatabaseSize: Int64?

    /// Creates options.
    public init(sync: JournalSyncPolicy = .always, snapshotInterval: Int = 1000, batchWindow: Duration = .milliseconds(100),
                maxUnsyncedActions: Int = 5000, maxDatabaseSize: Int64? = nil) {
        self.sync = sync
        self.maxDatabaseSize = maxDatabaseSize
        self.snapshotInterval = max(1, snapshotInterval)
        self.batchWindow = batchWindow
        self.maxUnsyncedActions = max(1, maxUnsyncedActions)
    }
}

/// A delayed or repeating action the journal remembers until it fires (delayed) or is
/// cancelled, so a restarted host arms it again.
public struct JournaledTimer: Sendable, Hashable {
    /// Its key in the journal.
    public var key: Int64
    /// The plugin's name.
    public var plugin: String
    /// The action's name and arguments.
    public var action: String
    /// The action's arguments, in order.
    public var arguments: [PluginValue]
    /// Whether the row's arguments were bytes that are not the host's coding (a database
    /// edited or damaged): ``arguments`` is then empty, and the timer is not armed again.
    public var unreadableArguments = false
    /// Whether the row names a queue whose policy or count no host writes (a database edited
    /// or damaged): the timer is not armed again, rather than armed without its queue.
    public var unreadableQueue = false
    /// When it fires next, in milliseconds since 1970 (wall clock).
    public var due: Int64
    /// Its interval in milliseconds for a repeating action; `nil` for a delayed one.
    public var interval: Int64?
    /// Its effect ID and queue.
    public var options: PluginEffectOptions

    /// Creates a timer as a store read it.
    public init(key: Int64, plugin: String, action: String, arguments: [PluginValue], due: Int64, interval: Int64?,
                options: PluginEffectOptions) {
        self.key = key
        self.plugin = plugin
        self.action = action
        self.arguments = arguments
        self.due = due
        self.interval = interval
        self.options = options
    }
}

extension JournaledTimer {
    /// Why the timer is not armed again (``unreadableArguments``, ``unreadableQueue``), or `nil`.
    public var unreadable: String? {
        if unreadableArguments { return JournaledAction.unreadableReason }
        return unreadableQueue ? Self.unreadableQueueReason : nil
    }

    /// Why a timer whose queue cannot be read is not armed again.
    public static let unreadableQueueReason = "its queue's policy or count is not one a host writes (the database was edited or damaged)"

    /// A timer's effect options as a store keeps them: its effect ID, and its queue's name,
    /// policy (the contract's number) and capacity; no queue when the name is `nil` or the
    /// policy is not one of the contract's (``unreadableQueue`` then says so).
    public static func options(id: String?, queue: String?, policy: Int64, maxCount: Int64) -> PluginEffectOptions {
        var options = PluginEffectOptions()
        options.id = id
        // A plugin asks for a count from 1 to UInt32.max (`max_count`); no host writes another.
        if let queue, (1...Int64(UInt32.max)).contains(maxCount),
           let policy = PluginQueuePolicy(abiPolicy: UInt32(clamping: policy), maxCount: Int(maxCount)) {
            options.queue = .init(name: queue, policy: policy)
        }
        return options
    }
}

/// One journaled action of a plugin.
public struct JournaledAction: Sendable, Hashable {
    /// Its position in the journal (increasing).
    public var sequence: Int64
    /// The plugin's version that ran it.
    public var version: String
    /// The action's name and arguments.
    public var action: String
    /// The action's arguments, in order.
    public var arguments: [PluginValue]
    /// Whether the row's arguments were bytes that are not the host's coding (a database
    /// edited or damaged): ``arguments`` is then empty, and the action is reported as one that
    /// cannot be replayed, as an unknown action is, while the others replay.
    public var unreadableArguments: Bool

    /// Creates an action as a store read it.
    public init(sequence: Int64, version: String, action: String, arguments: [PluginValue], unreadableArguments: Bool = false) {
        self.sequence = sequence
        self.version = version
        self.action = action
        self.arguments = arguments
        self.unreadableArguments = unreadableArguments
    }

    /// The action as an input line writes it: `add 5` (`add (arguments unreadable)`).
    public var text: String {
        if unreadableArguments { return "\(action) \(Self.unreadableNote)" }
        return ([action] + arguments.map(\.description)).joined(separator: " ")
    }

    /// What stands for arguments that cannot be read, in ``text``.
    public static let unreadableNote = "(arguments unreadable)"

    /// Why an action or a timer whose arguments cannot be read is not run.
    public static let unreadableReason = "its arguments are bytes that are not the host's coding of arguments, or more than the "
        + "\(maxArgumentBytes) bytes a host journals (the database was edited or damaged)"

    /// The most bytes a store reads of one action's or timer's coded arguments: 100 MiB, past
    /// what any host journals (a request's body is at most 64 MiB, an input line 1 MiB). Past
    /// it (an edited row), the arguments are unreadable and not read: a row of 1 GB was read
    /// whole, for each such action, into the recovery.
    public static let maxArgumentBytes = 100 << 20
}

/// A snapshot of a plugin's state in the journal.
public struct JournaledSnapshot: Sendable, Hashable {
    /// The last action of the plugin it includes.
    public var sequence: Int64
    /// The plugin's version that wrote it.
    public var version: String
    /// The state, as the plugin's `snapshot` wrote it.
    public var bytes: [UInt8]

    /// Creates a snapshot as a store read it.
    public init(sequence: Int64, version: String, bytes: [UInt8]) {
        self.sequence = sequence
        self.version = version
        self.bytes = bytes
    }
}

/// What the journal knows about one plugin: how to bring its state back.
public struct JournalRecovery: Sendable {
    /// Snapshots, newest first.
    public var snapshots: [JournaledSnapshot]
    /// The actions after the newest snapshot (all of them without one), oldest first; a
    /// recovery that cannot use that snapshot reads the older ones with
    /// ``PluginJournal/journaledActions(of:after:)``.
    public var actions: [JournaledAction]
    /// Whether actions from the start are still there (no action was pruned yet).
    public var startsAtTheBeginning: Bool
    /// Pending delayed and repeating actions.
    public var timers: [JournaledTimer]
    /// How many actions were journaled under the name in all (pruned ones included): the
    /// machine's count of transitions. `nil` in a format 1 file read without upgrading it.
    public var transitionCount: Int64?

    /// Creates a recovery as a store read it.
    public init(snapshots: [JournaledSnapshot], actions: [JournaledAction], startsAtTheBeginning: Bool, timers: [JournaledTimer],
                transitionCount: Int64? = nil) {
        self.snapshots = snapshots
        self.actions = actions
        self.startsAtTheBeginning = startsAtTheBeginning
        self.timers = timers
        self.transitionCount = transitionCount
    }

    /// The most snapshots of one name a store reads, newest first: a host keeps two.
    public static let maxSnapshotsRead = 4

    /// The most pending timers of one name a store reads: 1,000,000, the most `--max-effects`
    /// lets an instance hold. More (an edited file or database) is an error of the journal,
    /// with one line, not a recovery that reads and arms them all.
    public static let maxTimers = 1_000_000

    /// A store's refusal of `name`'s snapshot numbered `sequence`, of `bytes`, past `limit`.
    public static func snapshotTooLarge(_ sequence: Int64, of name: String, bytes: Int64, limit: Int) -> PluginJournalError.Reason {
        .badRecord("snapshot #\(sequence) of \(name) is \(bytes) bytes, more than the \(limit) a plugin's snapshot may have")
    }

    /// A store's refusal of `name`'s pending timers, more than `limit`.
    public static func tooManyTimers(of name: String, limit: Int) -> PluginJournalError.Reason {
        .badRecord("\(name) has more than \(limit) pending timers, more than a host arms for one machine")
    }

    /// Nothing journaled.
    public var isEmpty: Bool { snapshots.isEmpty && actions.isEmpty && timers.isEmpty }

    /// The most transitions one name may count: 2^53 − 1, the largest integer a JSON client
    /// reads exactly. No host gets near it; a count past it comes from an edited file or
    /// database (a count of 2^63 − 1 made the next action's number overflow, and crashed every
    /// host that took the instance in turn).
    public static let maxTransitionCount: Int64 = (1 << 53) - 1

    /// Throws when the count of transitions or a snapshot's number is past
    /// ``maxTransitionCount``, or a snapshot's number is negative: no host writes one, and the
    /// name is refused with one line instead of being served.
    public func check(name: String) throws(PluginJournalError.Reason) {
        if let transitionCount, transitionCount > Self.maxTransitionCount {
            throw .badRecord("the count of transitions of \(name) is \(transitionCount), past the most a host writes (\(Self.maxTransitionCount))")
        }
        if let snapshot = snapshots.first(where: { !(0...Self.maxTransitionCount).contains($0.sequence) }) {
            throw .badRecord("a snapshot of \(name) is numbered \(snapshot.sequence), outside what a host writes (0 to \(Self.maxTransitionCount))")
        }
    }
}

/// What the journal holds for one plugin, for `actomaton-host journal`.
public struct JournalSummary: Sendable, Hashable {
    /// The plugin's name.
    public var plugin: String
    /// Journaled actions kept.
    public var actionCount: Int
    /// The newest snapshot: its sequence number and size.
    public var lastSnapshot: (sequence: Int64, bytes: Int)?
    /// Pending delayed and repeating actions.
    public var timerCount: Int

    /// Creates a summary as a store read it.
    public init(plugin: String, actionCount: Int, lastSnapshot: (sequence: Int64, bytes: Int)?, timerCount: Int) {
        self.plugin = plugin
        self.actionCount = actionCount
        self.lastSnapshot = lastSnapshot
        self.timerCount = timerCount
    }

    /// Whether both summarise the same journal contents.
    public static func == (lhs: JournalSummary, rhs: JournalSummary) -> Bool {
        lhs.plugin == rhs.plugin && lhs.actionCount == rhs.actionCount && lhs.timerCount == rhs.timerCount
            && lhs.lastSnapshot?.sequence == rhs.lastSnapshot?.sequence && lhs.lastSnapshot?.bytes == rhs.lastSnapshot?.bytes
    }

    /// Hashes the same parts `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(plugin)
        hasher.combine(actionCount)
    }
}

/// A change the journal writes, in order: what a ``JournalStore`` commits.
public enum JournalRecord: Sendable {
    /// A plugin accepted an action: journal it, with the timers it started and the IDs it
    /// cancelled; `firedTimer` is the delayed timer that sent it (forgotten now) or the
    /// repeating one (its next due time moves on).
    case action(plugin: String, version: String, name: String, arguments: [PluginValue],
                firedTimer: (key: Int64, repeating: Bool)?, timers: [JournaledTimer], cancelledIDs: [String],
                receipt: JournaledReceipt? = nil, message: (@Sendable () -> String)? = nil)
    /// A snapshot of a plugin's state after its last journaled action.
    ///
    /// The store keeps it and the snapshot before it (a fallback should `restore` refuse this
    /// one), and the actions after the older one — and, whatever the snapshots, the last
    /// `keepingActions` actions: a watcher resumes from them, and snapshots can come much
    /// more often than the journal's interval (each passivation writes one).
    case snapshot(plugin: String, version: String, bytes: [UInt8], keepingActions: Int64 = 0)
    /// A timer of `plugin` was cancelled or dropped without firing.
    case timerEnded(key: Int64, plugin: String)
    /// Everything journaled under a name is forgotten: its actions, snapshots and timers.
    case forget(plugin: String)

    /// The name the record is journaled under.
    public var name: String? {
        switch self {
        case let .action(plugin, _, _, _, _, _, _, _, _): plugin
        case let .snapshot(plugin, _, _, _): plugin
        case let .timerEnded(_, plugin): plugin
        case let .forget(plugin): plugin
        }
    }
}

/// What a caller asks the journal to keep with an input action, in the same commit: the
/// answer a retry of the same request gets, also after a restart (a service's idempotency
/// keys). See ``PluginMachine/submit(_:receipt:)``.
public struct JournalReceiptRequest: Sendable {
    /// The request's key, unique for the machine (a service's token and `Idempotency-Key`).
    public var key: String
    /// A stable fingerprint of the request: the same key with another fingerprint is another request.
    public var fingerprint: String
    /// Until when it is kept, in milliseconds since 1970 (wall clock).
    public var expires: Int64
    /// The answer to keep, made from the action's transition (its acknowledgement aside).
    public var answer: @Sendable (PluginTransition) -> String

    /// Creates a request for a receipt.
    ///
    /// - Parameters:
    ///   - key: The request's key, unique for the machine.
    ///   - fingerprint: A stable fingerprint of the request.
    ///   - expires: Until when it is kept, in milliseconds since 1970.
    ///   - answer: The answer to keep, made from the action's transition.
    public init(key: String, fingerprint: String, expires: Int64, answer: @escaping @Sendable (PluginTransition) -> String) {
        self.key = key
        self.fingerprint = fingerprint
        self.expires = expires
        self.answer = answer
    }
}

/// A receipt the journal keeps: the answer to an input action, under the request's key.
public struct JournaledReceipt: Sendable, Hashable {
    /// The longest answer a journal reads back, in bytes: a transition's answer carries a state
    /// description of at most 16 MiB, escaped. A longer one is an error of the journal (a row
    /// edited by hand was read whole: 200 MB).
    public static let maxAnswerBytes = 100 << 20

    /// The longest transition message a journal reads back for a watcher, in bytes: as long as
    /// the longest answer (it carries the same state). A longer one is an error of the journal:
    /// an edited row was read whole, and sent whole to each watcher.
    public static let maxMessageBytes = maxAnswerBytes

    /// The error of a message of `size` bytes, past ``maxMessageBytes``, of `name`'s
    /// transition `ordinal`.
    public static func messageTooLong(_ size: Int, of name: String, ordinal: Int64) -> PluginJournalError.Reason {
        .badRecord("the message of transition \(ordinal) of \(name) is \(size) bytes, past the limit of \(maxMessageBytes)")
    }

    /// The name the machine is journaled under.
    public var plugin: String
    /// The request's key.
    public var key: String
    /// The request's fingerprint.
    public var fingerprint: String
    /// The answer; `nil` when it was left in the journal: past ``maxAnswerBytes``, or past the
    /// bytes a reader of many asked for (``JournalStore/receipts(keptAfter:limit:answerBytes:)``).
    public var answer: String?
    /// The answer's size in the journal, in bytes, read or not.
    public var answerBytes: Int
    /// Until when it is kept, in milliseconds since 1970 (wall clock).
    public var expires: Int64

    /// Creates a receipt.
    ///
    /// - Parameters:
    ///   - plugin: The name the machine is journaled under.
    ///   - key: The request's key.
    ///   - fingerprint: The request's fingerprint.
    ///   - answer: The answer.
    ///   - expires: Until when it is kept, in milliseconds since 1970.
    public init(plugin: String, key: String, fingerprint: String, answer: String, expires: Int64) {
        self.init(plugin: plugin, key: key, fingerprint: fingerprint, answer: answer, answerBytes: answer.utf8.count, expires: expires)
    }

    /// Creates a receipt whose answer may have been left in the journal.
    ///
    /// - Parameters:
    ///   - plugin: The name the machine is journaled under.
    ///   - key: The request's key.
    ///   - fingerprint: The request's fingerprint.
    ///   - answer: The answer, or `nil` when it was not read.
    ///   - answerBytes: The answer's size in the journal.
    ///   - expires: Until when it is kept, in milliseconds since 1970.
    public init(plugin: String, key: String, fingerprint: String, answer: String?, answerBytes: Int, expires: Int64) {
        self.plugin = plugin
        self.key = key
        self.fingerprint = fingerprint
        self.answer = answer
        self.answerBytes = answerBytes
        self.expires = expires
    }
}

/// The byte form of action arguments in the journal: per value, a tag and its payload; the same
/// in every ``JournalStore``.
public enum ArgumentCoding {
    /// The bytes of `values`.
    public static func encode(_ values: [PluginValue]) -> [UInt8] {
        var bytes: [UInt8] = []
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        for value in values {
            switch value {
            case let .bool(flag): bytes.append(1); bytes.append(flag ? 1 : 0)
            case let .int(number): bytes.append(2); append(number)
            case let .uint(number): bytes.append(3); append(number)
            case let .float(number): bytes.append(4); append(number.bitPattern)
            case let .string(text):
                bytes.append(5)
                append(UInt32(text.utf8.count))
                bytes.append(contentsOf: text.utf8)
            }
        }
        return bytes
    }

    /// The values, or `nil` when the bytes are not a valid encoding.
    public static func decode(_ bytes: [UInt8]) -> [PluginValue]? {
        var values: [PluginValue] = []
        var index = 0
        func read<T: FixedWidthInteger>(_: T.Type) -> T? {
            guard bytes.count - index >= MemoryLayout<T>.size else { return nil }
            var value = T.zero
            withUnsafeMutableBytes(of: &value) { $0.copyBytes(from: bytes[index..<(index + MemoryLayout<T>.size)]) }
            index += MemoryLayout<T>.size
            return T(littleEndian: value)
        }
        while index < bytes.count {
            let tag = bytes[index]
            index += 1
            switch tag {
            case 1:
                guard let flag = read(UInt8.self), flag <= 1 else { return nil }
                values.append(.bool(flag == 1))
            case 2:
                guard let number = read(Int64.self) else { return nil }
                values.append(.int(number))
            case 3:
                guard let number = read(UInt64.self) else { return nil }
                values.append(.uint(number))
            case 4:
                guard let bits = read(UInt64.self) else { return nil }
                values.append(.float(Double(bitPattern: bits)))
            case 5:
                guard let length = read(UInt32.self), bytes.count - index >= Int(length),
                      let text = String(validating: bytes[index..<(index + Int(length))], as: UTF8.self) else { return nil }
                index += Int(length)
                values.append(.string(text))
            default:
                return nil
            }
        }
        return values
    }
}
