import CProcessControl

/// One side's view of the two byte rings a host shares with one worker (`shared_ring.h`):
/// the ring it writes, the ring it reads, and its own positions in them.
///
/// The host keeps the positions it writes here, never reading them back from the region, which
/// the worker can scribble on: it trusts nothing of a worker's but what it copies out after
/// checking the worker's position. The worker's side takes its own writing position from the
/// region before each write, where the plugin it runs may have moved it (what the host then
/// reads is what the plugin put there, and the host's checks are what stand).
final class SharedRings: @unchecked Sendable {
    /// Which end of the conversation a side is.
    enum Side { case host, worker }

    private let region: UnsafeMutableRawPointer
    /// Which end this is.
    let side: Side
    /// The ring this side writes: 0 for the host (requests), 1 for the worker (replies).
    private let outbound: Int32
    private var inbound: Int32 { 1 - outbound }
    /// Bytes written into ``outbound`` so far.
    private var head: UInt64 = 0
    /// Bytes read from ``inbound`` so far.
    private var tail: UInt64 = 0
    /// Whether ``head`` is read back from the region before each write: the worker's side.
    private let readsBackItsPosition: Bool

    /// Maps the region behind `descriptor` for `side`, or says why it cannot. The descriptor
    /// may be closed afterwards.
    static func map(_ descriptor: Int32, as side: Side) -> Result<SharedRings, Errno> {
        guard let region = actomaton_shared_region_map(descriptor) else { return .failure(Errno.current) }
        return .success(SharedRings(region: region, side: side))
    }

    /// Makes a region for a new worker: the descriptor to hand it, and the host's side.
    static func makeForWorker() -> Result<(descriptor: Int32, rings: SharedRings), Errno> {
        let descriptor = actomaton_shared_region_create()
        guard descriptor >= 0 else { return .failure(Errno(-descriptor)) }
        switch map(descriptor, as: .host) {
        case let .success(rings): return .success((descriptor, rings))
        case let .failure(error):
            SystemCall.close(descriptor)
            return .failure(error)
        }
    }

    private init(region: UnsafeMutableRawPointer, side: Side) {
        self.region = region
        self.side = side
        outbound = side == .host ? 0 : 1
        readsBackItsPosition = side == .worker
    }

    deinit { actomaton_shared_region_unmap(region) }

    /// Why a ring cannot be used: the other side's position is not one it can have.
    struct Corrupt: Error {}

    /// Copies as much of `bytes` as the outbound ring has room for; how much (0 when full).
    func put(_ bytes: UnsafeRawBufferPointer) throws(Corrupt) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        if readsBackItsPosition { head = actomaton_ring_head(region, outbound) }
        let count = actomaton_ring_put(region, outbound, &head, base, bytes.count)
        guard count >= 0 else { throw Corrupt() }
        return Int(count)
    }

    /// Copies what the inbound ring holds, up to `space`'s size, into `space`: how much, and
    /// whether the other side waits for the room this made.
    func take(into space: UnsafeMutableRawBufferPointer) throws(Corrupt) -> (count: Int, wakesProducer: Bool) {
        guard let base = space.baseAddress, space.count > 0 else { return (0, false) }
        var wakes: Int32 = 0
        let count = actomaton_ring_take(region, inbound, &tail, base, space.count, &wakes)
        guard count >= 0 else { throw Corrupt() }
        return (Int(count), wakes != 0)
    }

    /// Whether the inbound ring holds any byte, or is corrupt (reading it then says so).
    var inboundHoldsBytes: Bool { actomaton_ring_available(region, inbound, tail) != 0 }

    /// Whether the other side spins on the outbound ring now; if not, a put must ring.
    var readerSpins: Bool { actomaton_ring_consumer_spins(region, outbound) != 0 }

    /// Says whether this side spins on the inbound ring (the other side need not ring).
    func setSpinning(_ spinning: Bool) { actomaton_ring_set_consumer_spinning(region, inbound, spinning ? 1 : 0) }

    /// Says whether this side waits for room in the outbound ring (the other side rings once
    /// it takes some).
    func setWaitingForRoom(_ waiting: Bool) { actomaton_ring_set_producer_waiting(region, outbound, waiting ? 1 : 0) }
}
