import Glibc

/// RLIMIT_NOFILE, which caps client and origin connections and open data files together.
package enum FileLimit {
    /// Raises the soft limit to the hard one (the usual 1024 is far below a proxy's needs) and
    /// returns the soft limit now.
    @discardableResult
    package static func raiseToHard() -> Int {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        if getrlimit(resource, &limit) == 0, limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(resource, &limit)
        }
        return soft()
    }

    /// As it is: a library leaves its host's limits alone.
    package static func soft() -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return Int(clamping: min(limit.rlim_cur, rlim_t(Int32.max)))  // RLIM_INFINITY included
    }

    /// 80%; the rest for the listener, origin connections, data files and logs.
    package static func defaultConnectionCap(softLimit: Int) -> Int { max(16, softLimit / 5 * 4) }
}
