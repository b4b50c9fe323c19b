import Glibc

/// Memory figures of a running process, from /proc/PID/status.
enum ProcessStats {
    /// Peak resident set size (VmHWM) in bytes.
    static func peakRSS(_ pid: Int32) -> UInt64? { statusField(pid, "VmHWM:") }

    /// Current resident set size (VmRSS) in bytes.
    static func rss(_ pid: Int32) -> UInt64? { statusField(pid, "VmRSS:") }

    /// Starts a new peak: writing 5 to clear_refs resets VmHWM to the current RSS,
    /// so each scenario reports its own peak rather than the process's lifetime one.
    @discardableResult
    static func resetPeak(_ pid: Int32) -> Bool {
        let fd = open("/proc/\(pid)/clear_refs", O_WRONLY)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return write(fd, "5", 1) == 1
    }

    /// CPU time (user + system) the process has used, in seconds.
    static func cpuSeconds(_ pid: Int32) -> Double? {
        // /proc/PID/stat: fields 14 and 15 (utime, stime) in clock ticks,
        // counted after the ")" that ends the command name.
        guard let text = readText("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Summed over a server's processes (nginx: master and workers); nil if any is gone.
    static func peakRSS(_ pids: [Int32]) -> UInt64? { sum(pids, peakRSS) }
    static func rss(_ pids: [Int32]) -> UInt64? { sum(pids, rss) }
    static func cpuSeconds(_ pids: [Int32]) -> Double? { sum(pids, cpuSeconds) }
    static func resetPeak(_ pids: [Int32]) { for pid in pids { resetPeak(pid) } }

    private static func sum<T: AdditiveArithmetic>(_ pids: [Int32], _ figure: (Int32) -> T?) -> T? {
        guard !pids.isEmpty else { return nil }
        var total = T.zero
        for pid in pids {
            guard let value = figure(pid) else { return nil }
            total += value
        }
        return total
    }

    /// The processes whose parent is `pid` (field 4 of /proc/N/stat).
    static func children(of pid: Int32) -> [Int32] {
        guard let dir = opendir("/proc") else { return [] }
        defer { closedir(dir) }
        var found: [Int32] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let child = Int32(name), let text = readText("/proc/\(child)/stat"),
                  let close = text.lastIndex(of: ")") else { continue }
            let fields = text[text.index(after: close)...].split(separator: " ")
            if fields.count > 1, Int32(fields[1]) == pid { found.append(child) }
        }
        return found.sorted()
    }

    private static func statusField(_ pid: Int32, _ name: String) -> UInt64? {
        guard let text = readText("/proc/\(pid)/status") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name) {
            let digits = line.dropFirst(name.count).filter { $0.isNumber }
            return UInt64(digits).map { $0 * 1024 }
        }
        return nil
    }

    static func readText(_ path: String) -> String? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
