import Glibc

/// A serving process's life as signals drive it (`httpcache serve`): `(state, event) -> actions`,
/// with a thin CLI driver feeding it signals and, while draining, ticks with responses in flight.
///
/// - `SIGHUP`: reload the configuration (not while draining);
/// - `SIGUSR1`: reopen the log files;
/// - `SIGQUIT`: drain: stop accepting, let responses finish (up to the drain timeout), exit 0;
/// - `SIGTERM`, `SIGINT`: stop now (also during a drain).
package struct ServeLifecycle: Sendable, Equatable {
    package enum State: Sendable, Equatable {
        case serving
        /// Draining until no response is in flight or the deadline (seconds, monotonic) passes.
        case draining(deadline: Double)
        case stopped
    }

    package enum Action: Sendable, Equatable {
        case reload, reopenLogs, beginDrain
        /// Close the cache and exit; `drained` false when the drain timed out with responses in flight.
        case stop(drained: Bool)
    }

    package private(set) var state = State.serving
    package var drainTimeout: Double  // seconds a drain waits for responses in flight

    package init(drainTimeout: Double) { self.drainTimeout = drainTimeout }

    /// The signals the driver watches.
    package static let watched = [SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGTERM]

    package mutating func received(_ signal: Int32, now: Double) -> [Action] {
        switch (state, signal) {
        case (.stopped, _): return []
        case (_, SIGTERM), (_, SIGINT):
            let drained = state == .serving
            state = .stopped
            return [.stop(drained: drained)]
        case (.serving, SIGHUP): return [.reload]
        case (_, SIGUSR1): return [.reopenLogs]
        case (.serving, SIGQUIT):
            state = .draining(deadline: now + drainTimeout)
            return [.beginDrain]
        default: return []  // a reload or a second SIGQUIT while draining: nothing
        }
    }

    /// While draining: stops once nothing is in flight or the deadline passed.
    package mutating func tick(now: Double, busy: Int) -> [Action] {
        guard case .draining(let deadline) = state else { return [] }
        guard busy == 0 || now >= deadline else { return [] }
        state = .stopped
        return [.stop(drained: busy == 0)]
    }

    package var isDraining: Bool { if case .draining = state { true } else { false } }
}
