import Foundation
import Logging

/// Collects what a proxy logs, for tests that check log lines.
final class LogCapture: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    /// A logger (debug and up) whose lines land here.
    var logger: Logger {
        var logger = Logger(label: "httpcache-test") { _ in CapturingLogHandler(capture: self) }
        logger.logLevel = .debug
        return logger
    }

    /// "LEVEL message key=value…" per line, in order.
    var messages: [String] { lock.withLock { lines } }

    func append(_ line: String) { lock.withLock { lines.append(line) } }

    /// Lines at `level` that contain `text`.
    func lines(_ level: Logger.Level, containing text: String) -> [String] {
        messages.filter { $0.hasPrefix("\(level) ") && $0.contains(text) }
    }
}

private struct CapturingLogHandler: LogHandler {
    let capture: LogCapture
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        // Metadata goes in the line too ("key=value", sorted), so tests can look for it.
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = merged.keys.sorted().map { "\($0)=\(merged[$0]!)" }.joined(separator: " ")
        capture.append(fields.isEmpty ? "\(event.level) \(event.message)" : "\(event.level) \(event.message) \(fields)")
    }
}
