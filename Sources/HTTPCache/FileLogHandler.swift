import CacheStorage
import Glibc
import Logging
import Synchronization

/// An append-only log file shared by every logger of the process.
package final class LogFileSink: @unchecked Sendable {
    private let fd: Int32  // each line is one write(2) on an O_APPEND descriptor: atomic enough for logs
    package let path: String

    package init(path: String) throws(HTTPCacheError) {
        self.path = path
        fd = try Self.open(path)
    }

    /// Log rotation (SIGUSR1): `path` reopened and dup2'd over the old descriptor (no line lost or split).
    package func reopen() throws(HTTPCacheError) {
        let fresh = try Self.open(path)
        defer { close(fresh) }
        guard dup2(fresh, fd) >= 0 else {
            throw HTTPCacheError(.io, "cannot reopen log file \(path): \(FileIO.errorText())")
        }
    }

    private static func open(_ path: String) throws(HTTPCacheError) -> Int32 {
        // Private (log lines name URLs, which may carry tokens); an existing one is narrowed too.
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw HTTPCacheError(.io, "cannot open log file \(path): \(FileIO.errorText())") }
        FileIO.restrict(fd: fd, to: 0o700)
        return fd
    }

    package func write(_ line: String) {
        _ = Array((line + "\n").utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }
}

/// swift-log handler writing timestamped lines to a `LogFileSink`.
package struct FileLogHandler: LogHandler {
    let label: String
    let sink: LogFileSink
    package var logLevel: Logger.Level = .info
    package var metadata: Logger.Metadata = [:]

    package init(label: String, sink: LogFileSink) {
        self.label = label
        self.sink = sink
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        var buffer = [CChar](repeating: 0, count: 32)
        strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%SZ", &parts)
        let stamp = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // Metadata carries the facts (url, status, error): the line must keep them.
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = merged.keys.sorted().map { " \($0)=\(merged[$0]!)" }.joined()
        sink.write("\(stamp) \(event.level) \(label): [\(event.source)] \(event.message)\(fields)")
    }
}

/// The process's log level (a reload sets it); `LiveLevelLogHandler` reads it each call (a relaxed load).
package final class LiveLogLevel: Sendable {
    private let level: Atomic<Int>

    package init(_ level: Logger.Level) { self.level = Atomic(Self.index(level)) }

    package var value: Logger.Level {
        get { Logger.Level.allCases[level.load(ordering: .relaxed)] }
        set { level.store(Self.index(newValue), ordering: .relaxed) }
    }

    private static func index(_ level: Logger.Level) -> Int { Logger.Level.allCases.firstIndex(of: level) ?? 0 }
}

/// Passes lines at or above the live level to `wrapped` (whose own level lets everything through).
package struct LiveLevelLogHandler: LogHandler {
    var wrapped: any LogHandler
    let level: LiveLogLevel

    package init(_ wrapped: any LogHandler, level: LiveLogLevel) {
        self.wrapped = wrapped
        self.level = level
    }

    /// The process's level; setting it on one logger changes it for all.
    package var logLevel: Logger.Level {
        get { level.value }
        set { level.value = newValue }
    }

    package var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    package func log(event: LogEvent) { wrapped.log(event: event) }
}
