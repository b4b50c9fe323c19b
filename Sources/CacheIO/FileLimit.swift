import Glibc

/// The process's open-file limit (RLIMIT_NOFILE), which caps client
/// connections, origin connections and open data files together.
package enum FileLimit {
    /// Raises the soft limit to the hard one (the usual soft default of 1024
    /// is far below what a proxy needs) and returns the soft limit now.
    @discardableResult
    package static func raiseToHard() -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: min(limit.rlim_cur, rlim_t(Int32.max)))  // RLIM_INFINITY included
    }

    /// The soft limit as it is (a library leaves its host's limits alone).
    package static func soft() -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return Int(clamping: min(limit.rlim_cur, rlim_t(Int32.max)))
    }

    /// Client connections allowed for a soft limit: 80% of it, the rest left
    /// for the listener, origin connections, data files and logs.
    package static func defaultConnectionCap(softLimit: Int) -> Int {
        max(16, softLimit / 5 * 4)
    }
}
