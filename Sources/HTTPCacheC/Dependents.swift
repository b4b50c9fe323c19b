import CacheIO

/// Something opened on a cache that hc_close must end before the engine closes (reader, preload).
protocol CacheDependent: AnyObject, Sendable {
    /// Called once by hc_close, on its thread, while the engine runs: wake blocked calls (HC_ECLOSED) and
    /// stop. May call `Dependents.remove` (a no-op then); must not wait for a library callback.
    func cacheClosing()
}

/// The readers and preloads open on one cache, each until its handle is freed; hc_close closes the rest.
final class Dependents: Sendable {
    private struct State {
        var closing = false
        var members: [ObjectIdentifier: any CacheDependent] = [:]
    }

    private let state = Locked(State())

    /// False once hc_close has begun (the caller then fails with HC_ECLOSED and starts no work).
    func add(_ member: any CacheDependent) -> Bool {
        state.withLock { state in
            guard !state.closing else { return false }
            state.members[ObjectIdentifier(member)] = member
            return true
        }
    }

    func remove(_ member: any CacheDependent) {
        _ = state.withLock { $0.members.removeValue(forKey: ObjectIdentifier(member)) }
    }

    /// How many are open (for tests).
    var count: Int { state.withLock { $0.members.count } }

    /// Refuses new members and tells every open one, outside the lock (so they may remove themselves).
    func closeAll() {
        let members = state.withLock { state -> [any CacheDependent] in
            state.closing = true
            defer { state.members = [:] }
            return Array(state.members.values)
        }
        for member in members { member.cacheClosing() }
    }
}
