import Glibc

/// How the process's open-file limit (RLIMIT_NOFILE) is shared out, computed
/// once at start: client sockets, origin sockets and data files each get a
/// cap, and together with what is already open (and a margin) they never
/// exceed the limit. Each part is a total over every loop; `perLoop` splits it.
package struct DescriptorBudget: Sendable, Equatable, CustomStringConvertible {
    /// The soft limit the split is made for.
    package var limit: Int
    /// Kept out of the split: descriptors open at start (stdio, the loops'
    /// epoll and wakeup descriptors, logs) plus a margin for the listeners,
    /// the folder's lock and journal, the access log and name resolution.
    package var reserved: Int
    /// Client connections accepted at once (the listeners pause at it).
    package var clientConnections: Int
    /// Origin connections open at once, the origin sides of CONNECT tunnels
    /// included (requests and tunnels wait for a slot beyond it).
    package var originConnections: Int
    /// Data files the store may hold open at once.
    package var dataFiles: Int

    /// The split for `limit` with `reserved` kept aside. `requestedClients`
    /// (`--max-connections`) is honoured up to what is left once origins and
    /// data files have their share; without it clients get the rest.
    package static func split(limit: Int, reserved: Int, loops: Int = 1, requestedClients: Int? = nil) -> DescriptorBudget {
        let loops = max(1, loops)
        let usable = max(0, limit - reserved)
        // An eighth each for origins and files: every miss needs one of each
        // while it downloads, and past the cap it waits rather than fails.
        // At least one per loop of each, so every loop can make progress.
        let origins = max(loops, usable / 8)
        let files = max(loops, usable / 8)
        let room = max(loops, usable - origins - files)
        let clients = requestedClients.map { max(1, min($0, room)) } ?? room
        return DescriptorBudget(limit: limit, reserved: reserved, clientConnections: clients,
                                originConnections: origins, dataFiles: files)
    }

    /// The split for this process: counts what is open now. A process that
    /// owns its limits (the `httpcache` binary) first raises the soft limit to
    /// the hard one; a host embedding the library keeps its own. Call once,
    /// after the loops exist.
    package static func forThisProcess(loops: Int, requestedClients: Int? = nil,
                                       raisingLimit: Bool = false) -> DescriptorBudget {
        let limit = raisingLimit ? FileLimit.raiseToHard() : FileLimit.soft()
        let reserved = openDescriptors() + margin(loops: loops)
        return split(limit: limit, reserved: reserved, loops: loops, requestedClients: requestedClients)
    }

    /// Descriptors opened after the count, outside the three parts: per loop
    /// its listener and a resolution in flight, and a few for the process
    /// (lock file, journal, access log, log file, a CA file, /proc reads).
    static func margin(loops: Int) -> Int { 16 + 4 * max(1, loops) }

    /// `total` shared by `loops` (each loop owns its share; at least one).
    package static func perLoop(_ total: Int, loops: Int) -> Int { max(1, total / max(1, loops)) }

    /// Descriptors this process has open (entries of /proc/self/fd, less the
    /// one reading it); a conservative guess when /proc is not there.
    static func openDescriptors() -> Int {
        guard let dir = opendir("/proc/self/fd") else { return 64 }
        defer { closedir(dir) }
        var count = 0
        while let entry = readdir(dir) {
            if entry.pointee.d_name.0 != UInt8(ascii: ".") { count += 1 }
        }
        return max(0, count - 1)
    }

    package var description: String {
        "limit \(limit): reserved \(reserved), clients \(clientConnections), origins \(originConnections), data files \(dataFiles)"
    }
}
