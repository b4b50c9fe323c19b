import Glibc
import Logging

/// An append-only log file shared by every logger of the process.
final class LogFileSink: @unchecked Sendable {
    // Each line is one write(2) on an O_APPEND descriptor: atomic enough for logs.
    private let fd: Int32

    init(path: String) throws {
        // Private: log lines name URLs, which may carry tokens. An existing
        // log that others can read is narrowed as well.
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LogFileError(path: path, code: errno) }
        var info = stat()
        if fstat(fd, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o077 != 0 {
            fchmod(fd, info.st_mode & 0o700)
        }
    }

    func write(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }
}

struct LogFileError: Error, CustomStringConvertible {
    var path: String
    var code: Int32
    var description: String { "cannot open log file \(path): \(String(cString: strerror(code)))" }
}

/// swift-log handler writing timestamped lines to a `LogFileSink`.
struct FileLogHandler: LogHandler {
    let label: String
    let sink: LogFileSink
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    init(label: String, sink: LogFileSink) {
        self.label = label
        self.sink = sink
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
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
