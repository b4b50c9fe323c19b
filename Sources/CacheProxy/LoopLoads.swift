import Synchronization

/// How many client connections each loop's server holds, for the others. The kernel spreads new
/// connections by address hash, not load: a few long-lived clients (players) can land on one loop, so
/// a server holding two more than the least loaded one hands a new connection there. Touched when
/// connections come and go, never per request. Thread-safe.
final class LoopLoads: Sendable {
    private let counts: [Count]

    private final class Count: Sendable { let value = Atomic<Int>(0) }

    init(loops: Int) {
        counts = (0..<max(1, loops)).map { _ in Count() }
    }

    func set(_ index: Int, _ count: Int) {
        counts[index].value.store(count, ordering: .relaxed)
    }

    /// Where a connection accepted by `index`, holding `held`, should go: a loop holding two fewer, or nil.
    func lessBusy(than index: Int, holding held: Int) -> Int? {
        var best: (index: Int, count: Int)?
        for (other, count) in counts.enumerated() where other != index {
            let value = count.value.load(ordering: .relaxed)
            if value + 2 <= held, value < best?.count ?? .max { best = (other, value) }
        }
        return best?.index
    }
}
