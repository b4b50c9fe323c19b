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
///
/// With several shards each writes its own file (`access.N`). At start the
/// folder's journals are read once, before any shard opens (`readAll`), and
/// when they were written by another number of loops every shard rewrites
/// its own from them and the others go (`StoreGroup.everyShardOpened`).
struct AccessJournal {
    let path: String
    /// Access times since the last append, by resource key.
    private(set) var pending: [String: Int64] = [:]
    /// Lines in the file (appended since the last compaction).
    private var lines = 0
    static let compactAfterLines = 50_000

    init(folder: String, shard: Int = 0, of count: Int = 1, lines: Int = 0) {
        path = folder + "/" + Self.name(shard: shard, of: count)
        self.lines = lines
    }

    static func name(shard: Int, of count: Int) -> String { count == 1 ? "access" : "access.\(shard)" }

    /// The journals `count` shards write.
    private static func layout(_ count: Int) -> Set<String> { Set((0..<count).map { name(shard: $0, of: count) }) }

    /// The journals in a folder: `access`, and `access.N` of sharded runs.
    private static func isJournal(_ name: String) -> Bool {
        name == "access" || (name.hasPrefix("access.") && Int(name.dropFirst("access.".count)) != nil)
    }

    /// Every journal of a folder read: the latest time per key, the lines of
    /// each file, and whether another number of loops wrote them (any file
    /// outside the layout of `count`, or one of it missing while others exist).
    static func readAll(folder: String, count: Int) -> (times: [String: Int64], lines: [String: Int], otherLayout: Bool) {
        var times: [String: Int64] = [:]
        var lines: [String: Int] = [:]
        let names = FileIO.listDirectory(folder).filter(isJournal)
        for name in names {
            guard let bytes = FileIO.readAll(folder + "/" + name) else { continue }
            lines[name] = read(bytes, into: &times)
        }
        return (times, lines, !names.isEmpty && Set(names) != layout(count))
    }

    /// Journals in `folder` that no shard of `count` writes.
    static func staleFiles(in folder: String, count: Int) -> [String] {
        let current = layout(count)
        return FileIO.listDirectory(folder).filter { isJournal($0) && !current.contains($0) }.map { folder + "/" + $0 }
    }

    mutating func note(_ key: String, at milliseconds: Int64) {
        pending[key] = milliseconds
    }

    /// Adds a journal's times to `times` (the latest per key); returns its lines.
    private static func read(_ bytes: [UInt8], into times: inout [String: Int64]) -> Int {
        var count = 0
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            count += 1
            let fields = line.split(separator: UInt8(ascii: " "))
            // A line cut by a crash is simply not a valid line.
            guard fields.count == 2, fields[0].count == 64,
                  let time = Int64(String(decoding: fields[1], as: UTF8.self)) else { continue }
            let key = String(decoding: fields[0], as: UTF8.self)
            times[key] = max(times[key] ?? 0, time)
        }
        return count
    }

    /// The whole journal rewritten from `current` (times read from stale
    /// journals move into this one).
    mutating func rewrite(_ current: [String: Int64]) -> Write {
        pending.removeAll(keepingCapacity: true)
        lines = current.count
        return Write(path: path, text: Self.text(current), replace: true)
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
            let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { return }
            _ = FileIO.writeFully(fd, bytes)
            close(fd)
        }
    }
}
