import Glibc

/// Last-access times of cache hits, batched into one append-only file
/// instead of rewriting each resource's metadata with an fsync.
///
/// A hit only changes when the resource was last used (LRU order), which is
/// not worth a durable write: the journal is appended a few times a minute
/// without fsync, and a crash loses at most the latest access times, never
/// a cached byte. At start the journal's times are applied over the
/// metadata's; it is compacted (rewritten with one line per resource) when it
/// grows. Loop thread only; the file work runs on the pool.
struct AccessJournal {
    let path: String
    /// Access times since the last append, by resource key.
    private(set) var pending: [String: Int64] = [:]
    /// Lines in the file (appended since the last compaction).
    private var lines = 0
    static let compactAfterLines = 50_000

    init(folder: String) {
        path = folder + "/access"
    }

    mutating func note(_ key: String, at milliseconds: Int64) {
        pending[key] = milliseconds
    }

    /// Reads the journal: the latest time per key.
    mutating func load() -> [String: Int64] {
        guard let bytes = FileIO.readAll(path) else { return [:] }
        var times: [String: Int64] = [:]
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            lines += 1
            let fields = line.split(separator: UInt8(ascii: " "))
            // A line cut by a crash is simply not a valid line.
            guard fields.count == 2, fields[0].count == 64,
                  let time = Int64(String(decoding: fields[1], as: UTF8.self)) else { continue }
            let key = String(decoding: fields[0], as: UTF8.self)
            times[key] = max(times[key] ?? 0, time)
        }
        return times
    }

    /// What to write now: the pending lines, or (past the size bound) the
    /// whole journal rewritten from `current`. Nil when there is nothing new.
    mutating func takeWrite(current: () -> [String: Int64]) -> Write? {
        guard !pending.isEmpty else { return nil }
        defer { pending.removeAll(keepingCapacity: true) }
        if lines + pending.count > Self.compactAfterLines {
            let all = current()
            lines = all.count
            return Write(path: path, text: Self.text(all), replace: true)
        }
        lines += pending.count
        return Write(path: path, text: Self.text(pending), replace: false)
    }

    private static func text(_ times: [String: Int64]) -> String {
        var text = ""
        text.reserveCapacity(times.count * 80)
        for (key, time) in times { text += key + " " + String(time) + "\n" }
        return text
    }

    /// One append (or replacement) of the journal; blocking, for the pool.
    struct Write: Sendable {
        let path: String
        let text: String
        let replace: Bool

        func perform(tempFolder: String) {
            let bytes = Array(text.utf8)
            if replace {
                _ = FileIO.writeAtomically(path, bytes, tempFolder: tempFolder)
                return
            }
            let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return }
            _ = FileIO.writeFully(fd, bytes)
            close(fd)
        }
    }
}
