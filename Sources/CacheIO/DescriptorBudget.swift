import Glibc

/// RLIMIT_NOFILE shared out once at start: client and origin socket and data file caps (totals;
/// `perLoop` splits them) that, with what is open and a margin, never exceed the limit.
package struct DescriptorBudget: Sendable, Equatable, CustomStringConvertible {
    package var limit: Int  // the soft limit
    package var reserved: Int  // open at start (stdio, loops' epoll and wakeups, logs) plus `margin`
    package var clientConnections: Int  // the listeners pause at it
    /// CONNECT tunnels' origin sides included; beyond it requests and tunnels wait.
    package var originConnections: Int
    package var dataFiles: Int

    /// `requestedClients` (`--max-connections`) is honoured up to what origins and data files
    /// leave; without it clients get the rest.
    package static func split(limit: Int, reserved: Int, loops: Int = 1, requestedClients: Int? = nil) -> DescriptorBudget {
        let loops = max(1, loops)
        let usable = max(0, limit - reserved)
        // An eighth each for origins and files: a downloading miss needs one of each, and past
        // the cap waits rather than fails. At least one per loop, so every loop progresses.
        let origins = max(loops, usable / 8)
        let files = max(loops, usable / 8)
        let room = max(loops, usable - origins - files)
        let clients = requestedClients.map { max(1, min($0, room)) } ?? room
        return DescriptorBudget(limit: limit, reserved: reserved, clientConnections: clients,
                                originConnections: origins, dataFiles: files)
    }

    /// Counts what is open now; call once, after the loops exist. The `httpcache` binary raises
    /// the soft limit to the hard one first; a host embedding the library keeps its own.
    package static func forThisProcess(loops: Int, requestedClients: Int? = nil,
                                       raisingLimit: Bool = false) -> DescriptorBudget {
        let limit = raisingLimit ? FileLimit.raiseToHard() : FileLimit.soft()
        let reserved = openDescriptors() + margin(loops: loops)
        return split(limit: limit, reserved: reserved, loops: loops, requestedClients: requestedClients)
    }

    /// Opened after the count, outside the parts: per loop a listener and a resolution, and a
    /// few for the process (lock, journal, access log, log file, a CA file, /proc reads).
    static func margin(loops: Int) -> Int { 16 + 4 * max(1, loops) }

    /// At least one.
    package static func perLoop(_ total: Int, loops: Int) -> Int { max(1, total / max(1, loops)) }

    /// /proc/self/fd less the one reading it; a conservative guess without /proc.
    static func openDescriptors() -> Int {
        guard let dir = opendir("/proc/self/fd") else { return 64 }
        defer { closedir(dir) }
        var count = 0
        while let entry = readdir(dir) { count += entry.pointee.d_name.0 == UInt8(ascii: ".") ? 0 : 1 }
        return max(0, count - 1)
    }

    package var description: String {
        "limit \(limit): reserved \(reserved), clients \(clientConnections), origins \(originConnections), data files \(dataFiles)"
    }
}
